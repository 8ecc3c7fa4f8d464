// SPDX-License-Identifier: Apache-2.0
// Gradient buckets (ofc --bucket-mb): the data-parallel gradients of several weights reduced as
// one tensor, as PyTorch's DistributedDataParallel does. Per device the gradients are packed end
// to end into one flat buffer (a Concat reading each as a view of one axis), the buffer takes the
// all-reduce boxing gives any tensor, and is unpacked (a Split whose parts the updates read as
// views of their weights' shapes). A reduction's tasks (and its latency per message) are paid
// per bucket instead of per weight: on 128 ranks of 8 devices a weight's reduction is ~16 tasks
// per device, so a GPT's plan was mostly reductions. Every element is the same sum of the same
// summands in the same order as alone, so the bits do not change (collective parts sum in
// summand order, and recursive halving pairs the same devices for every element).
//
// The price, as in DDP: a gradient waits for the rest of its bucket, so its memory is held a while
// longer and its update runs later, and packing and unpacking copy its bytes twice. What a
// gradient saves in a bucket is its own reduction's acts, one or two per device for each hop of
// its route (within a rank one, between ranks halving and doubling: on 128 ranks of 8 devices 16
// hops); so a gradient shares a bucket when it has at most kBucketBytesPerHop for each hop, else it
// is reduced alone, as soon as it exists, its copies saved. Measured with every gradient bucketed
// (`ofrun --steps 60`, this 2-core machine), the MLP fixture's 3-4 MiB weight gradients lost
// more than they saved: 5.1 -> 7.0 ms a step on 2 devices (one hop), 10.0 -> 12.1 ms on 2x2
// (four); a 12-layer MLP of 64 KiB gradients gained: 2.8 -> 2.45 ms on 2 devices, 9.5 -> 5.0 ms
// on 2x2. A hop costs tens of microseconds here (its acts, and the devices waiting for each other:
// the 12-layer MLP saved 25 us a gradient on 2 devices), as copying 256 KiB twice does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/parallel/boxing.h"

namespace of::compiler {

// The first bucket of a placement's gradients fills at this (or --bucket-mb, if less), as DDP's
// first bucket does: the gradients the backward pass makes first start reducing early.
inline constexpr uint64_t kFirstBucketBytes = uint64_t(1) << 20;
// A gradient of more bytes than this per hop of its reduction's route is reduced alone (above).
inline constexpr uint64_t kBucketBytesPerHop = uint64_t(256) << 10;

// Whether a gradient of `bytes` laid out as `from`, needed by its update as `want` by a route of
// `hops` (boxing_route's layouts less one), may join a bucket: at most kBucketBytesPerHop a hop,
// and an all-reduce on one placement (each level partial or whole before, whole after), so that
// every device holds the whole gradient before and after and a bucket is their concatenation.
bool bucketable(uint64_t bytes, size_t hops, const Layout& from, const Layout& want);

// How many zeros follow `elements` so that `devices` split the bucket evenly on its way (a
// reduce-scatter then an all-gather).
int64_t bucket_tail(int64_t elements, int64_t devices);

// On `device`: one Concat of `grads` (each read as a view of one axis) and `tail` zeros; returns
// its output, a 1-D tensor of every element.
ValueId pack_bucket(Graph& g, const std::vector<ValueId>& grads, int64_t tail, int32_t device, const std::string& name);

// On `device`: one Split of `bucket` into parts of `sizes` elements (the tail dropped); returns
// each part, 1-D (its reader views it in its own shape).
std::vector<ValueId> unpack_bucket(Graph& g, ValueId bucket, const std::vector<int64_t>& sizes, int64_t tail, int32_t device,
                                   const std::string& name);

}  // namespace of::compiler
