// SPDX-License-Identifier: Apache-2.0
// Times each CUDA kernel against its CPU twin on the shapes of the anchors' training steps (mlp
// b64, cnn b32, gpt b8 x 128; ../shared/ANCHORS.md) and prints one table: median microseconds of
// each (CUDA events around one launch sequence; the CPU on this machine's threads) and the ratio.
// torch_kernels.py prints PyTorch's times for the same rows. Run on the GPU machine by check.sh.
// Napkin math: at these sizes most kernels are launch-bound on an H200 (~2-5 us a launch); the
// gemms of the mlp (0.1 GFLOP) and the gpt's projections are the ones with work to show.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/registry.h"

namespace {

using of::Attrs;
using of::DType;
using of::Shape;
using of::TensorDesc;
using namespace of::kernels;

struct Row {
  std::string name, kernel;
  Attrs attrs;
  std::vector<TensorDesc> in, out;
  std::vector<size_t> nonnegative = {};  // inputs that hold no negative number in a run (Adam's v)
};

TensorDesc f(Shape s) { return {std::move(s), DType::f32}; }

Attrs ints(std::initializer_list<std::pair<const char*, std::vector<int64_t>>> kv) {
  Attrs a;
  for (const auto& [k, v] : kv) a.set_ints(k, v);
  return a;
}

std::vector<Row> rows() {
  Attrs tb = ints({{"trans_b", {1}}});
  Attrs tb_relu = tb;
  tb_relu.set_str("activation", "relu");
  Attrs conv1 = ints({{"kernel_shape", {3, 3}}, {"pads", {1, 1, 1, 1}}});
  Attrs pool = ints({{"kernel_shape", {2, 2}}, {"strides", {2, 2}}});
  Attrs last = ints({{"axis", {3}}});
  Attrs ln = ints({{"axis", {2}}});
  Attrs heads = ints({{"perm", {0, 2, 1, 3}}});
  Attrs sgd;
  sgd.set_float("momentum", 0.9f);
  return {
      {"mlp fc1 (+bias, relu)", "gemm", tb_relu, {f({64, 784}), f({1024, 784}), f({1024})}, {f({64, 1024})}},
      {"mlp fc2", "gemm", tb, {f({64, 1024}), f({1024, 1024}), f({1024})}, {f({64, 1024})}},
      {"mlp relu_grad", "relu_grad", {}, {f({64, 1024}), f({64, 1024})}, {f({64, 1024})}},
      {"mlp bias grad", "reduce_sum", ints({{"axes", {0}}, {"keepdims", {0}}}), {f({64, 1024})}, {f({1024})}},
      {"mlp sgd momentum fc2", "sgd_update", sgd, {f({1024, 1024}), f({1024, 1024}), f({1024, 1024}), f({}), f({})},
       {f({1024, 1024}), f({1024, 1024})}},
      {"mlp adam fc2", "adam_update", {}, {f({1024, 1024}), f({1024, 1024}), f({1024, 1024}), f({1024, 1024}), f({}), f({})},
       {f({1024, 1024}), f({1024, 1024}), f({1024, 1024})}, {3}},
      {"cnn conv2 (+bias)", "conv", conv1, {f({32, 32, 16, 16}), f({64, 32, 3, 3}), f({64})}, {f({32, 64, 16, 16})}},
      {"cnn conv2 grad data", "conv_grad_data", conv1, {f({32, 64, 16, 16}), f({64, 32, 3, 3})}, {f({32, 32, 16, 16})}},
      {"cnn conv2 grad weight", "conv_grad_weight", conv1, {f({32, 64, 16, 16}), f({32, 32, 16, 16})}, {f({64, 32, 3, 3})}},
      {"cnn max_pool 2x2", "max_pool", pool, {f({32, 32, 32, 32})}, {f({32, 32, 16, 16})}},
      {"gpt qkv projection", "matmul_tb", {}, {f({8, 128, 256}), f({768, 256})}, {f({8, 128, 768})}},
      {"gpt scores q.k^T", "matmul", {}, {f({8, 4, 128, 64}), f({8, 4, 64, 128})}, {f({8, 4, 128, 128})}},
      {"gpt softmax", "softmax", last, {f({8, 4, 128, 128})}, {f({8, 4, 128, 128})}},
      {"gpt layer_norm", "layer_norm", ln, {f({8, 128, 256}), f({256}), f({256})}, {f({8, 128, 256})}},
      {"gpt gelu", "gelu", {}, {f({8, 128, 1024})}, {f({8, 128, 1024})}},
      {"gpt heads transpose", "transpose", heads, {f({8, 128, 4, 64})}, {f({8, 4, 128, 64})}},
      {"gpt token embedding", "gather", {}, {f({4096, 256}), {{8, 128}, DType::i64}}, {f({8, 128, 256})}},
      {"gpt loss", "softmax_cross_entropy", {}, {f({1024, 4096}), {{1024}, DType::i64}}, {f({}), f({1024, 4096})}},
  };
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Inputs: random floats in [-1, 1] ([0, 1] where a run has no negative number: a negative second
// moment would time sqrt's NaN path); integer inputs (labels, tokens) small non-negative ints;
// scalar f32 inputs (lr, step) 0.01 and 1.
std::vector<std::vector<char>> host_inputs(const Row& r) {
  std::mt19937 rng(7);
  std::vector<std::vector<char>> data;
  int scalars = 0;
  for (size_t k = 0; k < r.in.size(); ++k) {
    const TensorDesc& d = r.in[k];
    const bool nonnegative = std::find(r.nonnegative.begin(), r.nonnegative.end(), k) != r.nonnegative.end();
    std::vector<char> bytes(size_t(d.bytes()));
    const int64_t n = of::numel(d.shape);
    if (d.dtype == DType::i64) {
      auto* p = reinterpret_cast<int64_t*>(bytes.data());
      for (int64_t i = 0; i < n; ++i) p[i] = int64_t(rng() % 10);
    } else if (d.shape.empty()) {
      *reinterpret_cast<float*>(bytes.data()) = scalars++ == 0 ? 0.01f : 1.0f;  // lr, then step
    } else {
      std::uniform_real_distribution<float> u(nonnegative ? 0.0f : -1.0f, 1.0f);
      auto* p = reinterpret_cast<float*>(bytes.data());
      for (int64_t i = 0; i < n; ++i) p[i] = u(rng);
    }
    data.push_back(std::move(bytes));
  }
  return data;
}

}  // namespace

// of_kernels_bench [REPS] [--cpu-only]: --cpu-only times the CPU twins alone (no GPU needed).
int main(int argc, char** argv) {
  int reps = 30;
  bool cpu_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--cpu-only") cpu_only = true;
    else reps = std::max(3, std::atoi(argv[i]));
  }
  if (!cpu_only && cuda::device_count() == 0) {
    std::puts("kernels_bench: no CUDA device (--cpu-only times the CPU twins alone)");
    return 77;
  }
  try {
    std::unique_ptr<cuda::StreamOwner> owner_;
    cudaEvent_t start = nullptr, stop = nullptr;
    if (!cpu_only) {
      owner_ = std::make_unique<cuda::StreamOwner>();
      cuda::check(cudaEventCreate(&start), "cudaEventCreate");
      cuda::check(cudaEventCreate(&stop), "cudaEventCreate");
    }
    std::printf("%-24s | %-22s | %10s | %10s | %8s\n", "row", "kernel", "cuda us", "cpu us", "cpu/cuda");
    for (const Row& r : rows()) {
      const KernelConfig cfg{r.attrs, r.in, r.out, r.name};
      auto cpu_k = make_kernel(r.kernel, DeviceKind::cpu, r.out[0].dtype, cfg);
      auto gpu_k = cpu_only ? nullptr : make_kernel(r.kernel, DeviceKind::cuda, r.out[0].dtype, cfg);
      const auto in = host_inputs(r);
      std::vector<std::vector<char>> cpu_out;
      std::vector<const void*> cin, gin;
      std::vector<void*> cout, gout;
      std::vector<std::unique_ptr<cuda::DeviceBuffer>> dev;
      for (const auto& b : in) {
        cin.push_back(b.data());
        if (cpu_only) continue;
        dev.push_back(std::make_unique<cuda::DeviceBuffer>(std::max<size_t>(b.size(), 1)));
        cuda::check(cudaMemcpy(dev.back()->get(), b.data(), b.size(), cudaMemcpyHostToDevice), "h2d");
        gin.push_back(dev.back()->get());
      }
      for (const TensorDesc& d : r.out) {
        cpu_out.emplace_back(size_t(d.bytes()));
        cout.push_back(cpu_out.back().data());
        if (cpu_only) continue;
        dev.push_back(std::make_unique<cuda::DeviceBuffer>(std::max<size_t>(size_t(d.bytes()), 1)));
        gout.push_back(dev.back()->get());
      }
      std::vector<double> gpu_us, cpu_us;
      for (int i = 0; !cpu_only && i < reps + 3; ++i) {
        cuda::StreamOwner& owner = *owner_;
        cuda::check(cudaEventRecord(start, owner.get().stream), "cudaEventRecord");
        gpu_k->run(RunCtx{.piece = i, .stream = &owner.get()}, gin.data(), gout.data());
        cuda::check(cudaEventRecord(stop, owner.get().stream), "cudaEventRecord");
        owner.synchronize();
        float ms = 0;
        cuda::check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        if (i >= 3) gpu_us.push_back(ms * 1e3);
      }
      for (int i = 0; i < std::max(3, reps / 3) + 1; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        cpu_k->run(RunCtx{.piece = i}, cin.data(), cout.data());
        const auto t1 = std::chrono::steady_clock::now();
        if (i >= 1) cpu_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
      const double g = cpu_only ? 0.0 : median(gpu_us), c = median(cpu_us);
      if (cpu_only)
        std::printf("%-24s | %-22s | %10s | %10.1f | %8s\n", r.name.c_str(), r.kernel.c_str(), "-", c, "-");
      else
        std::printf("%-24s | %-22s | %10.1f | %10.1f | %8.1f\n", r.name.c_str(), r.kernel.c_str(), g, c, c / g);
    }
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernels_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
