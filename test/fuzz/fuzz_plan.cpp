// SPDX-License-Identifier: Apache-2.0
// Plan bytes -> decode (framing, checksum, FlatBuffers verifier) -> semantic verifier, as ofrun
// does before touching anything. The checksum hides most mutations from the verifier, so the
// fuzzer also gets a copy whose header is rewritten to match (see below). Every plan that decodes
// must survive a round trip: encode it again and decode, and the two plans are equal field by
// field (test/runtime/plan/plan_diff.h), and the bytes encode() gives are a fixed point. Every
// small inference plan that passes the verifier is then run on zero inputs (run_small).
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/safetensors.h"
#include "runtime/run.h"
#include "runtime/plan/load.h"
#include "schemas/plan_codec.h"
#include "schemas/plan_format.h"
#include "test/runtime/plan/plan_diff.h"

namespace {

void round_trip(const of::plan::Plan& p) {
  std::vector<uint8_t> bytes;
  of::plan::Plan q;
  try {
    bytes = of::plan::encode(p);
    q = of::plan::decode(bytes.data(), bytes.size(), "round-trip.ofp");
  } catch (const of::Error&) {
    __builtin_trap();  // a plan that decoded must encode and decode again
  }
  const std::string diff = of::test::plan_diff(p, q);
  if (!diff.empty()) {
    std::fprintf(stderr, "fuzz_plan: decode(encode(plan)) differs: %s\n", diff.c_str());
    __builtin_trap();
  }
  if (of::plan::encode(q) != bytes) __builtin_trap();
}

// A folder for the files a run needs, one per fuzzing process, removed when the process exits
// normally (a crash leaves it beside its artifact).
char scratch_dir[] = "/tmp/fuzz_plan_XXXXXX";

void remove_scratch() {
  std::error_code ignored;
  std::filesystem::remove_all(scratch_dir, ignored);
}

const std::string& scratch() {
  static const std::string dir = [] {
    if (!::mkdtemp(scratch_dir)) __builtin_trap();
    std::atexit(remove_scratch);
    return std::string(scratch_dir);
  }();
  return dir;
}

// A plan the verifier accepts must also run, or fail with of::Error: small inference plans run
// two pieces on zero inputs, from weights made to match (zeros, the checksum it records). A run
// that stalls is stopped by the watchdog and fails with of::Error, as a crash or an internal
// error does not.
void run_small(of::plan::Plan p) {
  if (p.job.kind != of::plan::JobKind::infer || p.tasks.size() > 64 || !p.buffers.empty() || p.tasks.empty()) return;
  uint64_t arena = 0;
  for (const auto& a : p.arenas) arena += std::min<uint64_t>(a.bytes, uint64_t(1) << 40);
  if (arena > (uint64_t(64) << 20)) return;
  of::SafetensorsWriter w;
  std::set<std::string> keys;
  std::vector<std::vector<uint8_t>> zeros;
  zeros.reserve(p.variables.size());
  for (const auto& v : p.variables) {
    if (v.tensor < 0 || size_t(v.tensor) >= p.tensors.size() || !keys.insert(v.key).second) continue;
    const of::plan::LogicalTensor& t = p.tensors[size_t(v.tensor)];
    const of::Shape& shape = t.full_shape.empty() ? t.desc.shape : t.full_shape;
    int64_t n = of::dtype_size(t.desc.dtype);
    for (int64_t d : shape) {
      if (d < 0 || d > (int64_t(1) << 24) || n * std::max<int64_t>(d, 1) > (int64_t(16) << 20)) return;
      n *= d;
    }
    w.add(v.key, t.desc.dtype, shape, zeros.emplace_back(size_t(n)).data());
  }
  of::runtime::RunOptions o;
  o.plan_path = scratch() + "/fuzz.ofp";
  o.pieces = 2;
  o.threads = 2;
  o.stall_seconds = 2;
  try {
    const std::vector<uint8_t> weights = w.serialize();  // refuses names that are not UTF-8
    p.weights = "fuzz.safetensors";
    p.weights_bytes = weights.size();
    p.weights_crc32 = of::crc32_of(weights.data(), weights.size());
    of::write_file_atomic(scratch() + "/fuzz.safetensors", weights);
    of::write_file_atomic(o.plan_path, of::plan::encode(p));
    // Every graph input the source feeds, as zeros of its shape (valid indices and labels too).
    const of::plan::Task& source = p.tasks[0];
    if (source.kind != of::plan::TaskKind::source || source.out_regsts.size() != 1) return;
    const of::plan::Regst& r = p.regsts.at(size_t(source.out_regsts[0]));
    for (size_t i = 0; i < source.io_names.size() && i < r.blobs.size(); ++i) {
      const std::string path = scratch() + "/in" + std::to_string(i) + ".npy";
      std::vector<uint8_t> data(size_t(r.blobs[i].bytes));
      of::write_npy(path, r.blobs[i].desc.dtype, r.blobs[i].desc.shape, data.data());
      o.inputs.push_back({source.io_names[i], path});
    }
    of::runtime::run(o);
  } catch (const of::Error&) {
  } catch (const std::bad_alloc&) {  // arenas are capped above; the host may still refuse
  }
}

void load(const uint8_t* data, size_t size) {
  of::plan::Plan p;
  try {
    p = of::plan::decode(data, size, "fuzz.ofp");
  } catch (const of::Error&) {
    return;
  }
  round_trip(p);
  try {
    of::runtime::verify_plan(p, "fuzz.ofp");
  } catch (const of::Error&) {
    return;
  }
  run_small(std::move(p));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  load(data, size);
  // Reframe: a valid header (size, CRC) over the mutated body reaches the FlatBuffers verifier
  // and the semantic checks with arbitrary content.
  if (size >= of::plan_format::kHeaderBytes) {
    std::vector<uint8_t> framed(data, data + size);
    uint64_t body = size - of::plan_format::kHeaderBytes;
    uint32_t crc = of::crc32_of(framed.data() + of::plan_format::kHeaderBytes, body);
    std::memcpy(framed.data(), of::plan_format::kMagic, 8);
    std::memcpy(framed.data() + 8, &body, 8);
    std::memcpy(framed.data() + 16, &crc, 4);
    std::memcpy(framed.data() + 20, &of::plan_format::kVersion, 4);
    load(framed.data(), framed.size());
  }
  return 0;
}
