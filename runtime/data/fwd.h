// SPDX-License-Identifier: Apache-2.0
// Forward declarations for runtime/data, for headers that only pass these types by pointer.
#pragma once

namespace of::runtime::data {

class Dataset;
class EpochSampler;
struct DataOptions;

}  // namespace of::runtime::data
