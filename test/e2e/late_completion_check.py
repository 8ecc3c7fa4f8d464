#!/usr/bin/python3
"""Late completion changes nothing: runs with the CPU test device give the synchronous run's results bit for bit.

`ofrun --late-completion N` wraps every kernel and copy in the CPU test device of
runtime/actors/late_action.h: the work runs on N threads after act() has returned, each task's
acts in order, several in flight, and the protocol tells consumers and producers only when an act
has completed (what a CUDA stream or a UCX transfer will do). Each check runs a plan synchronously
and late and compares: training losses and the checkpoint's bytes (weights, optimizer state,
BatchNorm statistics), as one process and as one process per rank; inference outputs.

Usage: late_completion_check.py --bin BUILD/cli --work DIR CHECK   (--list shows the checks)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ranks_check as rc  # noqa: E402  (its cases, data and runs)

HERE = os.path.dirname(os.path.abspath(__file__))
LATE = ["--late-completion", "2"]


def checkpoint_bytes(folder):
    """Every file of the last checkpoint in `folder`, by name (state.json included)."""
    last = sorted(d for d in os.listdir(folder) if d.startswith("step-"))[-1]
    out = {}
    for name in sorted(os.listdir(os.path.join(folder, last))):
        with open(os.path.join(folder, last, name), "rb") as f:
            out[name] = f.read()
    return last, out


def check_train(args, model, config, ranks=False, optimizer=None):
    """Trains a plan synchronously in one process, then late (one process, or --launch-local)."""
    label = f"{model}:{config}" + (":ranks" if ranks else "")
    case = rc.Case(args, "late-" + label)
    if model == "bn_mlp":
        import numpy as np
        rng = np.random.default_rng(0)
        x, y = case.path("x.npy"), case.path("y.npy")
        np.save(x, rng.standard_normal((512, 784)).astype(np.float32))
        np.save(y, rng.integers(0, 10, (512,)).astype(np.int64))
        onnx, data = os.path.join(HERE, "..", "fixtures", "export", "bn_mlp_train.onnx"), f"npy:{x},{y}"
    else:
        onnx, data = case.data(model)
    flags, k = rc.CONFIGS[config]
    plan = case.compile(onnx, flags, k)
    one, late = case.path("sync.jsonl"), case.path("late.jsonl")
    ck_one, ck_late = case.path("ck-sync"), case.path("ck-late")
    case.train(plan, data, one, ["--checkpoint", ck_one])
    case.train(plan, data, late, LATE + ["--checkpoint", ck_late] + (["--launch-local"] if ranks else []))
    want, got = rc.losses(one), rc.losses(late)
    if len(want) != rc.STEPS or got != want:
        raise rc.Failure(f"{label}: late losses differ from synchronous ones:\n  sync: {want}\n  late: {got}")
    (step_a, a), (step_b, b) = checkpoint_bytes(ck_one), checkpoint_bytes(ck_late)
    if step_a != step_b or sorted(a) != sorted(b):
        raise rc.Failure(f"{label}: the late run's checkpoint is {step_b} {sorted(b)}, the synchronous one's {step_a} {sorted(a)}")
    for name in a:
        if a[name] != b[name]:
            raise rc.Failure(f"{label}: {step_a}/{name} of the late run differs from the synchronous run's")
    print(f"late {label}: {len(got)} steps, losses and {step_a} ({', '.join(sorted(a))}) identical to the synchronous run")


def check_infer(args):
    """The MLP's inference plan on 2 devices (pipelined): outputs identical, synchronous and late."""
    import numpy as np
    case = rc.Case(args, "late-infer")
    plan, x = case.path("infer.ofp"), case.path("x.npy")
    np.save(x, np.random.default_rng(1).standard_normal((64, 784)).astype(np.float32))
    rc_, out, err = rc.run([case.tool("ofc"), os.path.join(HERE, "..", "fixtures", "mlp.onnx"), "-o", plan, "--devices", "2:cpu", "--pp", "2"])
    if rc_ != 0:
        raise rc.Failure(f"ofc: {err.strip()}")
    outs = {}
    for label, extra in (("sync", []), ("late", LATE)):
        y = case.path(f"y-{label}.npy")
        rc_, out, err = rc.run([case.tool("ofrun"), plan, "--input", f"input={x}", "--output", f"logits={y}", "--pieces", "40",
                                "--stall-timeout", "30", *extra])
        if rc_ != 0:
            raise rc.Failure(f"ofrun {label}: exit {rc_}: {out}{err}")
        outs[label] = np.load(y)
    if outs["sync"].shape != outs["late"].shape or not np.array_equal(outs["sync"], outs["late"]):
        raise rc.Failure("late inference outputs differ from synchronous ones")
    print(f"late infer: {outs['late'].shape[0]} rows identical to the synchronous run")


CHECKS = {
    "mlp:dp2xpp2": lambda a: check_train(a, "mlp", "dp2xpp2"),
    "mlp:dp2xtp2:ranks": lambda a: check_train(a, "mlp", "dp2xtp2", ranks=True),
    "bn_mlp:dp2xpp2": lambda a: check_train(a, "bn_mlp", "dp2xpp2"),
    "cnn:dp2xpp2-4ranks": lambda a: check_train(a, "cnn", "dp2xpp2-4ranks"),
    "lm:dp2xtp2-4ranks": lambda a: check_train(a, "lm", "dp2xtp2-4ranks"),
    "infer": check_infer,
}


def main():
    args = rc.parse()
    if args.list:
        print("\n".join(CHECKS))
        return 0
    if args.check not in CHECKS:
        print(f"late_completion_check: unknown check {args.check!r} (--list shows them)", file=sys.stderr)
        return 2
    args.bin, args.work = os.path.abspath(args.bin), os.path.abspath(args.work)
    try:
        CHECKS[args.check](args)
    except rc.Failure as e:
        print(f"late {args.check}: FAIL: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
