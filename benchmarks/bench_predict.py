# SPDX-License-Identifier: Apache-2.0
# Predicted against measured step time: ofc's prediction (the plan played under this machine's
# calibrated costs) next to what ofrun measures, for bench_train.py's workloads on 1 and 2 devices,
# one core each (ofrun --threads D --kernel-threads 1: the configuration the prediction assumes).
#   /usr/bin/python3 benchmarks/bench_predict.py [--build build] [--models mlp,cnn,gpt] [--repeats 3]
# Per model: `ofrun PLAN --calibrate` on its 1-device plan (the machine's rates, and that plan's
# kernels on their shapes), then per 2-device plan `ofrun PLAN --calibrate --merge` (its own
# shapes added: half batches, split weights), `ofc --costs` and `ofrun --steps N`, whose closing
# line "step time predicted P ms, measured M ms" gives both (the measured one is the mean step
# after the first). The column "1-device costs" is what ofc predicted for the plan before its
# shapes were measured: how far the per-kernel rates carry to shapes never measured. Medians of
# the repeats; ratio = measured / predicted.
import argparse
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_train  # noqa: E402
from bench_common import load_note, print_table  # noqa: E402

LINE = re.compile(r"^ofrun: step time predicted ([0-9.]+) ms, measured ([0-9.]+) ms$", re.M)
PLANS = [("1 device", 1, []), ("dp 2", 2, ["--dp", "2"]), ("tp 2", 2, ["--tp", "2"]),
         ("pp 2, 4 micro-batches", 2, ["--pp", "2", "--micro-batches", "4"])]
STEPS = {"mlp": 60, "cnn": 30, "gpt": 12, "resnet18": 4}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default=os.path.join(bench_train.ROOT, "build"))
    ap.add_argument("--models", default="mlp,cnn,gpt")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    ofc, ofrun = (os.path.join(a.build, "cli", x) for x in ("ofc", "ofrun"))
    print(load_note())
    with tempfile.TemporaryDirectory() as tmp:
        rows, ratios, general = [], [], []
        predicted_line = re.compile(r"^ofc: predicted step time ([0-9.]+) ms", re.M)
        for wl in bench_train.workloads(tmp, a.models.split(",")):
            costs = os.path.join(tmp, f"costs-{wl.name}.json")
            for label, devices, flags in PLANS:
                plan = os.path.join(tmp, f"{wl.name}-{devices}-{'_'.join(flags)}.ofp")
                compile_cmd = [ofc, wl.model, "-o", plan, "--train", "--loss", "cross_entropy", "--label", "label",
                               "--optimizer", wl.optimizer, "--devices", f"{devices}:cpu"] + flags
                try:
                    bench_train.run(compile_cmd, 600, error=bench_train.BenchError)
                except bench_train.BenchError as e:
                    rows.append([wl.name, label, f"n/a ({e})", "", "", ""])
                    continue
                before = ""
                if devices > 1:  # what the 1-device calibration alone predicts
                    out = bench_train.run(compile_cmd + ["--costs", costs], 600, error=bench_train.OfError)
                    before = predicted_line.search(out).group(1)
                # calibrate on this plan (the first one: a new file; the others: added to it), then
                # compile it again with the costs
                out = bench_train.run([ofrun, plan, "--calibrate", costs] + (["--merge"] if devices > 1 else []), 600,
                                      error=bench_train.OfError)
                print(f"{wl.name} {label}: {out.strip()}")
                bench_train.run(compile_cmd + ["--costs", costs], 600, error=bench_train.OfError)
                predicted, measured = [], []
                for _ in range(a.repeats):
                    out = bench_train.run([ofrun, plan, "--data", wl.data, "--steps", str(STEPS.get(wl.name, 10)),
                                           "--threads", str(devices), "--kernel-threads", "1"], 600, error=bench_train.OfError)
                    m = LINE.search(out)
                    if not m:
                        raise bench_train.OfError(f"no 'step time predicted' line from ofrun {plan}")
                    predicted.append(float(m.group(1)))
                    measured.append(float(m.group(2)))
                p, m = statistics.median(predicted), statistics.median(measured)
                ratios.append(m / p)
                if before:
                    general.append(m / float(before))
                rows.append([wl.name, label, f"{p:.2f} ms", f"{before} ms ({m / float(before):.2f})" if before else "",
                             f"{m:.2f} ms ({min(measured):.2f}–{max(measured):.2f})", f"{m / p:.2f}"])
        print_table(["model", "plan", "predicted", "1-device costs (ratio)", "measured (median, range)", "measured / predicted"], rows)
        if ratios:
            within = sum(1 for r in ratios if abs(r - 1) <= 0.15)
            print(f"{within} of {len(ratios)} plans within 15% of the prediction")
        if general:
            within = sum(1 for r in general if abs(r - 1) <= 0.15)
            print(f"{within} of {len(general)} 2-device plans within 15% of the prediction from the 1-device calibration alone")


if __name__ == "__main__":
    main()
