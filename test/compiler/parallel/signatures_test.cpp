// SPDX-License-Identifier: Apache-2.0
// Every kernel has its SBP rule in exactly one place (beside the op or pass that emits it), or
// says it is broadcast only and why; and the rules of the newer kernels give the signatures a
// parallel plan needs (batch splits with partial-sum weight gradients).
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "compiler/parallel/signatures.h"
#include "kernels/catalog.h"

namespace of::compiler {
namespace {

TEST_CASE("signatures: every kernel of the catalog has exactly one SBP entry, each naming a kernel", "[compiler]") {
  std::map<std::string, int> entries;
  for (const KernelSbp& k : all_kernel_sbp()) {
    INFO(k.kernel);
    ++entries[std::string(k.kernel)];
    // f32, bool for the comparisons and logical ops, i64 for argmax
    CHECK((kernels::kernel_exists(k.kernel, kernels::DeviceKind::cpu, DType::f32) ||
           kernels::kernel_exists(k.kernel, kernels::DeviceKind::cpu, DType::bool_) ||
           kernels::kernel_exists(k.kernel, kernels::DeviceKind::cpu, DType::i64)));
    if (!k.rule) CHECK_FALSE(k.why_broadcast.empty());  // broadcast only, and why
  }
  std::set<std::string> names;
  for (const kernels::KernelSpec& k : kernels::kernel_catalog()) names.insert(std::string(k.name));
  for (const std::string& name : names) {
    INFO(name << " (a kernel without an SBP entry would silently run whole on every device)");
    CHECK(entries[name] == 1);
  }
  CHECK(entries.size() == names.size());
}

// A node of `kernel` over values of the given shapes (outputs after inputs).
struct Fixture {
  Graph g;
  Node n;
  Fixture(const std::string& kernel, std::vector<Shape> in, std::vector<Shape> out, Attrs attrs = {}) {
    n.name = kernel;
    n.kernel = kernel;
    n.kernel_attrs = std::move(attrs);
    for (Shape& s : in) n.inputs.push_back(add(std::move(s)));
    for (Shape& s : out) n.outputs.push_back(add(std::move(s)));
  }
  ValueId add(Shape s) {
    const ValueId v = g.add_value("v" + std::to_string(g.values.size()));
    g.values[size_t(v)].desc = TensorDesc{std::move(s), DType::f32};
    return v;
  }
  std::set<std::string> sigs() const {
    std::set<std::string> all;
    for (const Signature& s : signatures_of(g, n)) {
      std::string t;
      for (const Sbp& x : s.in) t += sbp_str({x}) + " ";
      t += "->";
      for (const Sbp& x : s.out) t += " " + sbp_str({x});
      all.insert(t);
    }
    return all;
  }
};

TEST_CASE("signatures: a recurrent layer splits its batch and sums its weight gradients", "[compiler]") {
  // lstm in training: X [5,2,3], W, R, B; outputs Y, Y_h, Y_c, gates, states.
  const Fixture f("lstm", {{5, 2, 3}, {1, 16, 3}, {1, 16, 4}, {1, 32}},
                  {{5, 1, 2, 4}, {1, 2, 4}, {1, 2, 4}, {1, 5, 2, 16}, {1, 5, 2, 4}});
  CHECK(f.sigs().count("S(1) B B B -> S(2) S(1) S(1) S(2) S(2)") == 1);
  CHECK(f.sigs().count("B B B B -> B B B B B") == 1);  // all-broadcast, always last
  Attrs flags;
  flags.set_int("has_dy", 1);
  const Fixture g("lstm_grad", {{5, 2, 3}, {1, 16, 3}, {1, 16, 4}, {5, 1, 2, 4}, {1, 5, 2, 16}, {1, 5, 2, 4}, {5, 1, 2, 4}},
                  {{5, 2, 3}, {1, 16, 3}, {1, 16, 4}, {1, 32}, {1, 2, 4}, {1, 2, 4}}, flags);
  CHECK(g.sigs().count("S(1) B B S(2) S(2) S(2) S(2) -> S(1) P P P S(1) S(1)") == 1);
}

TEST_CASE("signatures: gather splits indices or table columns and its gradient sums scattered rows", "[compiler]") {
  Attrs axis0;
  axis0.set_int("axis", 0);
  const Fixture f("gather", {{64, 8}, {4, 16}}, {{4, 16, 8}}, axis0);  // an embedding
  CHECK(f.sigs().count("B S(0) -> S(0)") == 1);
  CHECK(f.sigs().count("B S(1) -> S(1)") == 1);
  CHECK(f.sigs().count("S(1) B -> S(2)") == 1);
  const Fixture g("gather_grad", {{4, 16, 8}, {4, 16}}, {{64, 8}}, axis0);
  CHECK(g.sigs().count("S(0) S(0) -> P") == 1);
  CHECK(g.sigs().count("S(2) B -> S(1)") == 1);
}

TEST_CASE("signatures: dropout is broadcast only", "[compiler]") {
  const Fixture f("dropout", {{4, 8}}, {{4, 8}});
  CHECK(f.sigs() == std::set<std::string>{"B -> B"});
}

}  // namespace
}  // namespace of::compiler
