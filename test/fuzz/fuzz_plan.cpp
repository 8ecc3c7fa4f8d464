// SPDX-License-Identifier: Apache-2.0
// Plan bytes -> decode (framing, checksum, FlatBuffers verifier) -> semantic verifier, as ofrun
// does before touching anything. The checksum hides most mutations from the verifier, so the
// fuzzer also gets a copy whose header is rewritten to match (see below). Every plan that decodes
// must survive a round trip: encode it again and decode, and the two plans are equal field by
// field (test/runtime/plan/plan_diff.h), and the bytes encode() gives are a fixed point.
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "common/file_util.h"
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
  }
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
