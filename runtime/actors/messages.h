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
// From a late-completing action's device (any thread) to its task.
using completed_atom = caf::atom_constant<caf::atom("completed")>;  // the oldest act in flight ended
using act_failed_atom = caf::atom_constant<caf::atom("actfailed")>;  // (why): it failed
// To the transport actor (a multi-process run): a message for a task of another rank.
using net_ready_atom = caf::atom_constant<caf::atom("netready")>;  // (from, to, regst, slot, piece)
using net_free_atom = caf::atom_constant<caf::atom("netfree")>;    // (from, to, regst, slot)
using net_eos_atom = caf::atom_constant<caf::atom("neteos")>;      // (from, to, regst)
using net_stop_atom = caf::atom_constant<caf::atom("netstop")>;    // (why): tell every rank
using net_poll_atom = caf::atom_constant<caf::atom("netpoll")>;    // the network has events

}  // namespace of::runtime
