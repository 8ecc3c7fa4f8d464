// SPDX-License-Identifier: Apache-2.0
// Learning-rate schedules against PyTorch: test/fixtures/lr_schedules.txt holds, for each spec,
// the rate PyTorch's scheduler of the same recipe gives each optimizer step
// (make_lr_schedule_fixture.py), and every spec here must give the same rates.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/lr_schedule.h"

namespace of {
namespace {

struct Case {
  std::string spec;
  double base = 0;
  int64_t total = 0, per_epoch = 0;
  std::vector<double> torch;
};

std::vector<Case> read_cases() {
  std::ifstream in(std::string(OF_FIXTURES_DIR) + "/lr_schedules.txt");
  REQUIRE(in.good());
  std::vector<Case> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string item; std::getline(ss, item, '|');) f.push_back(item);
    REQUIRE(f.size() == 5);
    Case c{f[0], std::stod(f[1]), std::stoll(f[2]), std::stoll(f[3]), {}};
    std::stringstream lrs(f[4]);
    for (double v; lrs >> v;) c.torch.push_back(v);
    REQUIRE(int64_t(c.torch.size()) == c.total);
    out.push_back(std::move(c));
  }
  return out;
}

TEST_CASE("lr schedule: every spec gives the rates of its PyTorch recipe, step by step", "[common]") {
  const std::vector<Case> cases = read_cases();
  REQUIRE(cases.size() >= 25);
  for (const Case& c : cases) {
    INFO(c.spec);
    const LrSchedule s = LrSchedule::parse(c.spec, float(c.base));
    for (int64_t step = 1; step <= c.total; ++step) {
      INFO("step " << step);
      const double want = c.torch[size_t(step - 1)];
      CHECK(std::abs(double(s.at(step, c.total, c.per_epoch)) - want) <= 1e-6 * c.base);
    }
  }
}

TEST_CASE("lr schedule: a step's rate does not depend on the steps before it", "[common]") {
  // ofrun --resume computes the rate of step k afresh: nothing may accumulate.
  const LrSchedule s = LrSchedule::parse("multistep:milestones=2/3,gamma=0.5,warmup=2,start=0.5,per=epoch", 1.0f);
  CHECK(s.at(9, 40, 2) == s.at(9, 40, 2));
  CHECK(s.at(1, 40, 2) == Approx(0.5));
  CHECK(s.at(3, 40, 2) == Approx(0.75));
  CHECK(s.at(5, 40, 2) == Approx(1.0));   // epoch 2: the warm-up's end
  CHECK(s.at(9, 40, 2) == Approx(0.5));   // epoch 4: 2 epochs after the warm-up
  CHECK(s.at(11, 40, 2) == Approx(0.25));
}

TEST_CASE("lr schedule: bad specs are refused naming the spec and what is wrong", "[common]") {
  auto refused = [](const std::string& spec, const std::string& part) {
    INFO(spec);
    try {
      LrSchedule::parse(spec, 0.1f);
      FAIL("accepted");
    } catch (const Error& e) {
      const std::string what = e.what();
      CHECK(what.find("'" + spec + "'") != std::string::npos);
      CHECK(what.find(part) != std::string::npos);
    }
  };
  refused("onecycle", "unknown schedule 'onecycle'");
  refused("step", "step needs size=N");
  refused("step:size=0", "size");
  refused("multistep:milestones=5/3", "ascending");
  refused("multistep:milestones=5//8", "ascending");
  refused("multistep:milestones=a", "ascending");
  refused("multistep", "needs milestones");
  refused("exponential", "needs gamma");
  refused("cosine:per=batch", "per must be step or epoch");
  refused("cosine:start=2", "start");
  refused("cosine:min_lr=0.5", "min_lr");
  refused("constant:warmup=3", "unknown key 'warmup'");
  refused("linear:gamma=0.5", "unknown key 'gamma'");
  refused("cosine_restarts", "needs t0=N");
  refused("cosine_restarts:t0=5,t_mult=1.5", "t_mult must be an integer");
  refused("polynomial:power=-1", "power");
}

}  // namespace
}  // namespace of
