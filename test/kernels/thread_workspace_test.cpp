// SPDX-License-Identifier: Apache-2.0
// The per-thread workspace CPU kernels keep their per-act scratch in when the runtime gave them no
// room in the arena: as large as the largest act asked, aligned, one per thread; a kernel whose
// act grows it (moves the workspace) still computes what it did, and so does the earlier one;
// and a kernel given its room (RunCtx::workspace) computes the same there.
#include <thread>

#include "kernel_test_util.h"
#include "kernels/cpu/thread_workspace.h"

namespace of::kernels {
namespace {

TEST_CASE("thread workspace: at least what an act asks, aligned, one per thread", "[kernels]") {
  auto* mine = static_cast<uint8_t*>(cpu::thread_workspace(1000));
  REQUIRE(mine != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(mine) % cpu::kWorkspaceAlignment == 0);
  mine[999] = 7;  // ASan names an overflow here if the workspace were smaller
  CHECK(cpu::thread_workspace(1000) == mine);  // no larger ask: the same buffer
  CHECK(cpu::thread_workspace(10) == mine);
  void* other = nullptr;
  std::thread([&] { other = cpu::thread_workspace(1000); }).join();
  CHECK(other != nullptr);
  CHECK(other != static_cast<void*>(mine));
  auto* grown = static_cast<uint8_t*>(cpu::thread_workspace(1 << 22));
  grown[(1 << 22) - 1] = 7;
  CHECK(cpu::thread_workspace(1000) == grown);
  RunCtx given;
  given.workspace = mine;
  CHECK(cpu::act_workspace(given, 1 << 22) == mine);  // the runtime's room, whatever the thread holds
}

// Runs `kernel` (one output) on `in` and returns its output.
// Runs `kernel` (one output) on `in` and returns its output; with `room`, its scratch lies there
// (filled with NaN first, as stale bytes of another buffer could be).
std::vector<float> run(Kernel& kernel, const std::vector<std::vector<float>>& in, int64_t out_size, std::vector<float>* room = nullptr) {
  std::vector<float> y(size_t(out_size), std::nanf(""));
  std::vector<const void*> ins;
  for (const auto& d : in) ins.push_back(d.data());
  void* outs[] = {y.data()};
  RunCtx ctx;
  if (room) {
    room->assign(kernel.workspace_bytes() / sizeof(float) + 1, std::nanf(""));
    ctx.workspace = room->data();
  }
  kernel.run(ctx, ins.data(), outs);
  return y;
}

TEST_CASE("thread workspace: convolutions made after others ran move it, and every one still computes the same", "[kernels]") {
  std::mt19937 rng(3);
  Attrs attrs;
  attrs.set_ints("pads", {1, 1, 1, 1});
  // oneDNN's primitive (16 input channels: reordered copies in the workspace), then a larger
  // im2col convolution (3 input channels, a bigger column matrix), then a larger oneDNN one.
  const std::vector<std::vector<Shape>> shapes = {{{2, 16, 8, 8}, {16, 16, 3, 3}, {2, 16, 8, 8}},
                                                  {{1, 3, 96, 96}, {4, 3, 3, 3}, {1, 4, 96, 96}},
                                                  {{4, 32, 24, 24}, {32, 32, 3, 3}, {4, 32, 24, 24}}};
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<std::vector<std::vector<float>>> inputs;
  std::vector<std::vector<float>> first;
  for (const auto& s : shapes) {
    kernels.push_back(testing::prepare("conv", attrs, {s[0], s[1]}, {s[2]}));
    inputs.push_back({testing::random_floats(numel(s[0]), rng), testing::random_floats(numel(s[1]), rng)});
    first.push_back(run(*kernels.back(), inputs.back(), numel(s[2])));
  }
  for (size_t k = 0; k < kernels.size(); ++k) {
    CHECK(run(*kernels[k], inputs[k], numel(shapes[k][2])) == first[k]);
    std::vector<float> other_thread;
    std::thread([&] { other_thread = run(*kernels[k], inputs[k], numel(shapes[k][2])); }).join();
    CHECK(other_thread == first[k]);
    CHECK(kernels[k]->workspace_bytes() > 0);
    std::vector<float> room;
    CHECK(run(*kernels[k], inputs[k], numel(shapes[k][2]), &room) == first[k]);
    CHECK(run(*kernels[k], inputs[k], numel(shapes[k][2])) == first[k]);  // and back in the thread's
  }
  // The first kernel against a kernel made fresh now, with the workspace at its largest.
  auto fresh = testing::prepare("conv", attrs, {shapes[0][0], shapes[0][1]}, {shapes[0][2]});
  CHECK(run(*fresh, inputs[0], numel(shapes[0][2])) == first[0]);
}

}  // namespace
}  // namespace of::kernels
