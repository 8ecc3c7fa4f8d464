// SPDX-License-Identifier: Apache-2.0
// Plan bytes -> decode (framing, checksum, FlatBuffers verifier) -> semantic verifier, as ofrun
// does before touching anything. The checksum hides most mutations from the verifier, so the
// fuzzer also gets a copy whose header is rewritten to match (see below).
#include <cstring>

#include "common/error.h"
#include "common/file_util.h"
#include "runtime/plan/load.h"
#include "schemas/plan_codec.h"
#include "schemas/plan_format.h"

namespace {

void load(const uint8_t* data, size_t size) {
  try {
    of::plan::Plan p = of::plan::decode(data, size, "fuzz.ofp");
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
