// SPDX-License-Identifier: Apache-2.0
// The messages actors exchange. Payloads are a few integers (register, slot, piece): no custom
// types to serialize, nothing allocated by us per message.
#pragma once

#include <caf/atom.hpp>

namespace of::runtime {

using start_atom = caf::atom_constant<caf::atom("start")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;  // (regst, slot, piece)
using free_atom = caf::atom_constant<caf::atom("free")>;    // (regst, slot)
using eos_atom = caf::atom_constant<caf::atom("eos")>;      // (regst)
using stop_atom = caf::atom_constant<caf::atom("stop")>;    // a task failed: everyone quits

}  // namespace of::runtime
