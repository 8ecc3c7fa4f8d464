// SPDX-License-Identifier: Apache-2.0
#include "twin.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>

#include "kernels/cuda/device_stream.h"
#include "kernels/registry.h"

namespace of::kernels::testing {

namespace {

HostTensor tensor_of(const Shape& shape, DType dtype, const void* data, size_t bytes) {
  HostTensor t{{shape, dtype}, {}};
  t.bytes.resize(size_t(t.desc.bytes()));
  REQUIRE(bytes == t.bytes.size());
  std::memcpy(t.bytes.data(), data, bytes);
  return t;
}

}  // namespace

HostTensor f32_tensor(const Shape& shape, const std::vector<float>& values) {
  return tensor_of(shape, DType::f32, values.data(), values.size() * sizeof(float));
}

HostTensor i64_tensor(const Shape& shape, const std::vector<int64_t>& values) {
  return tensor_of(shape, DType::i64, values.data(), values.size() * sizeof(int64_t));
}

HostTensor i32_tensor(const Shape& shape, const std::vector<int32_t>& values) {
  return tensor_of(shape, DType::i32, values.data(), values.size() * sizeof(int32_t));
}

HostTensor bool_tensor(const Shape& shape, const std::vector<uint8_t>& values) {
  return tensor_of(shape, DType::bool_, values.data(), values.size() * sizeof(uint8_t));
}

HostTensor random_f32(const Shape& shape, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(size_t(numel(shape)));
  for (float& x : v) x = dist(rng);
  return f32_tensor(shape, v);
}

namespace {

void compare(const std::string& kernel, size_t index, const HostTensor& ref, const HostTensor& got, Tolerance tol) {
  INFO(kernel << ": output " << index << " " << shape_str(ref.desc.shape));
  REQUIRE(ref.bytes.size() == got.bytes.size());
  if (ref.desc.dtype != DType::f32) {
    CHECK(std::memcmp(ref.bytes.data(), got.bytes.data(), ref.bytes.size()) == 0);
    return;
  }
  const size_t n = ref.bytes.size() / sizeof(float);
  const auto* r = reinterpret_cast<const float*>(ref.bytes.data());
  const auto* g = reinterpret_cast<const float*>(got.bytes.data());
  std::ostringstream first;
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool both_nan = std::isnan(r[i]) && std::isnan(g[i]);
    const double err = std::fabs(double(g[i]) - double(r[i]));
    if (both_nan || g[i] == r[i] || err <= tol.atol + tol.rtol * std::fabs(double(r[i]))) continue;
    if (bad++ < 5) first << "  [" << i << "] cuda " << g[i] << " cpu " << r[i] << "\n";
  }
  INFO(bad << " of " << n << " elements differ beyond atol " << tol.atol << " + rtol " << tol.rtol << "; first:\n"
           << first.str());
  CHECK(bad == 0);
}

}  // namespace

std::vector<HostTensor> check_twin(const std::string& kernel, const Attrs& attrs, const std::vector<HostTensor>& inputs,
                                   const std::vector<TensorDesc>& outputs, Tolerance tol, int acts,
                                   const std::vector<Alias>& aliases) {
  REQUIRE((aliases.empty() || acts == 1));
  std::vector<TensorDesc> in_descs;
  for (const HostTensor& t : inputs) in_descs.push_back(t.desc);
  const DType dtype = outputs.empty() ? DType::f32 : outputs[0].dtype;  // the runtime keys kernels by it
  auto cpu_kernel = make_kernel(kernel, DeviceKind::cpu, dtype, KernelConfig{attrs, in_descs, outputs, "twin"});
  const char* cpu_only = std::getenv("OF_TWIN_CPU_ONLY");  // see main.cpp
  const bool twin = !(cpu_only && std::string(cpu_only) == "1");

  // The inputs of act a: input 0 (f32) scaled by a + 1.
  auto act_inputs = [&](int a) {
    std::vector<HostTensor> in = inputs;
    if (a > 0 && !in.empty() && in[0].desc.dtype == DType::f32) {
      auto* v = reinterpret_cast<float*>(in[0].bytes.data());
      for (size_t i = 0; i < in[0].bytes.size() / sizeof(float); ++i) v[i] *= float(a + 1);
    }
    return in;
  };

  // CPU reference; an aliased output starts as its input's bytes and is passed as both.
  std::vector<HostTensor> ref;
  for (const TensorDesc& d : outputs) ref.push_back({d, std::vector<char>(size_t(d.bytes()))});
  std::vector<std::vector<HostTensor>> cpu_in(static_cast<size_t>(acts));
  for (int a = 0; a < acts; ++a) {
    cpu_in[size_t(a)] = act_inputs(a);
    std::vector<const void*> cin;
    std::vector<void*> cout;
    for (const HostTensor& t : cpu_in[size_t(a)]) cin.push_back(t.bytes.data());
    for (HostTensor& t : ref) cout.push_back(t.bytes.data());
    for (const Alias& al : aliases) {
      ref[size_t(al.output)].bytes = cpu_in[size_t(a)][size_t(al.input)].bytes;
      cout[size_t(al.output)] = ref[size_t(al.output)].bytes.data();
      cin[size_t(al.input)] = cout[size_t(al.output)];
    }
    cpu_kernel->run(RunCtx{.piece = a}, cin.data(), cout.data());
  }

  if (!twin) return ref;
  cuda::StreamOwner owner;
  auto gpu_kernel = make_kernel(kernel, DeviceKind::cuda, dtype, KernelConfig{attrs, in_descs, outputs, "twin"});

  // The twin, on device copies of the same inputs; unaliased outputs start as NaN, so an element
  // left unwritten shows.
  std::vector<std::unique_ptr<cuda::DeviceBuffer>> dev_in, dev_out;
  std::vector<const void*> gin;
  std::vector<void*> gout;
  for (const HostTensor& t : inputs) {
    dev_in.push_back(std::make_unique<cuda::DeviceBuffer>(std::max<size_t>(t.bytes.size(), 1)));
    gin.push_back(dev_in.back()->get());
  }
  for (const TensorDesc& d : outputs) {
    dev_out.push_back(std::make_unique<cuda::DeviceBuffer>(std::max<size_t>(size_t(d.bytes()), 1)));
    cuda::check(cudaMemset(dev_out.back()->get(), 0xff, size_t(d.bytes())), "memset");
    gout.push_back(dev_out.back()->get());
  }
  for (const Alias& al : aliases) gout[size_t(al.output)] = const_cast<void*>(gin[size_t(al.input)]);
  for (int a = 0; a < acts; ++a) {
    owner.synchronize();  // the previous act has read its inputs
    const std::vector<HostTensor>& in = cpu_in[size_t(a)];
    for (size_t i = 0; i < in.size(); ++i)
      cuda::check(cudaMemcpy(const_cast<void*>(gin[i]), in[i].bytes.data(), in[i].bytes.size(), cudaMemcpyHostToDevice),
                  "h2d");
    gpu_kernel->run(RunCtx{.piece = a, .stream = &owner.get()}, gin.data(), gout.data());
  }
  owner.synchronize();

  std::vector<HostTensor> got;
  for (size_t i = 0; i < outputs.size(); ++i) {
    got.push_back({outputs[i], std::vector<char>(size_t(outputs[i].bytes()))});
    cuda::check(cudaMemcpy(got.back().bytes.data(), gout[i], got.back().bytes.size(), cudaMemcpyDeviceToHost), "d2h");
    compare(kernel, i, ref[i], got.back(), tol);
  }
  return got;
}

}  // namespace of::kernels::testing
