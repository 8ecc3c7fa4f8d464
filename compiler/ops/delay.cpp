// SPDX-License-Identifier: Apache-2.0
// of.test.Delay: a custom test op that passes its input through after sleeping `ms` milliseconds,
// used to make one task slow in scheduling and pipelining tests.
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

float delay_ms(const OpCtx& c) {
  const Attr* ms = c.attrs().find("ms");
  if (!ms || ms->floats.size() != 1) c.fail("attribute ms (a float, milliseconds) is required");
  if (!(ms->floats[0] >= 0.0f)) c.fail("attribute ms = {} must be >= 0", ms->floats[0]);
  return ms->floats[0];
}

void infer_delay(OpCtx& c) {
  c.expect_arity(1, 1);
  c.expect_float(0);
  delay_ms(c);
  c.out(0) = c.in(0);
}

void lower_delay(OpCtx& c) {
  Attrs a;
  a.set_float("ms", delay_ms(c));
  c.set_kernel("delay", std::move(a));
}

}  // namespace

OpDef delay_def() { return {"of.test.Delay", infer_delay, lower_delay, nullptr, {}, {sbp_rule("delay", sbp::elementwise)}}; }

}  // namespace of::compiler
