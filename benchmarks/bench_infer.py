# SPDX-License-Identifier: Apache-2.0
# Inference benchmark: `of` vs PyTorch eager vs ONNX Runtime, side by side in one run.
#   /usr/bin/python3 benchmarks/bench_infer.py [--build build] [--repeats 3] [--threads 2]
# Workloads (shared/ANCHORS.md): mlp (batch 64) and cnn (batch 32) from test/fixtures/, and
# chain: 1000 tiny ops on 16 floats (x = x*1.0001 + 0.0001 500 times: 500 Mul + 500 Add,
# alternating), which measures each framework's own cost per op; on request (--workloads)
# resnet18 (torchvision's, batch 8 at 224 px) and gpt (test/e2e/gpt_parallel.py's model at the
# anchors' shape, 8 x 128 tokens), exported by torch's default (eval) export from seed 0.
# See benchmarks/README.md.
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

try:
    from onnx import TensorProto, helper, numpy_helper, save as onnx_save
except ImportError:
    sys.exit("bench_infer: needs the onnx module: run it with /usr/bin/python3")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import fmt, load_note, print_table  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(ROOT, "test", "fixtures")
CHAIN_PAIRS = 500


class BenchError(Exception):
    """A column that cannot be measured; the message goes into the table as n/a (...)."""


@dataclass
class Workload:
    name: str
    model: str
    input: str       # .npy path
    input_name: str  # the model's graph input
    batch: int
    ops: int = 0     # > 0: report µs per op (chain) instead of samples/s
    calib: int = 20  # runs (pieces) of the first, warm-up and calibration run
    threads: int = 0  # > 0: overrides --threads for every column (the chain runs on one)


def make_chain(tmp):
    """The chain model: x[1,16] -> (Mul 1.0001, Add 0.0001) x 500 -> y."""
    nodes, cur = [], "x"
    for i in range(CHAIN_PAIRS):
        mid, out = f"m{i}", ("y" if i == CHAIN_PAIRS - 1 else f"a{i}")
        nodes.append(helper.make_node("Mul", [cur, "k_mul"], [mid], name=f"mul{i}"))
        nodes.append(helper.make_node("Add", [mid, "k_add"], [out], name=f"add{i}"))
        cur = out
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 16])  # noqa: E731
    inits = [numpy_helper.from_array(np.array(v, np.float32), n)
             for n, v in (("k_mul", 1.0001), ("k_add", 0.0001))]
    graph = helper.make_graph(nodes, "chain", [vi("x")], [vi("y")], inits)
    model = helper.make_model(graph, producer_name="of-bench",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    path = os.path.join(tmp, "chain.onnx")
    onnx_save(model, path)
    x = os.path.join(tmp, "chain_input.npy")
    np.save(x, np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32))
    # One thread everywhere: the chain measures each framework's own cost per op, and PyTorch
    # eager and ORT's sequential executor run one op at a time anyway.
    return Workload("chain", path, x, "x", 1, ops=2 * CHAIN_PAIRS, calib=20, threads=1)


def make_exported(tmp, name):
    """resnet18 or gpt: the model torch_infer.py builds, exported as users export for inference."""
    import torch
    sys.path.insert(0, HERE)
    import torch_infer
    model, x = getattr(torch_infer, name)()
    path, xpath = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + "_input.npy")
    torch.onnx.export(model.eval(), x, path, opset_version=14, input_names=["input"], output_names=["output"])
    np.save(xpath, x.numpy())
    return Workload(name, path, xpath, "input", x.shape[0], calib=3 if name == "resnet18" else 5)


def workloads(tmp, wanted):
    fx = lambda n: os.path.join(FIXTURES, n)  # noqa: E731
    out = []
    if "mlp" in wanted:
        out.append(Workload("mlp", fx("mlp.onnx"), fx("mlp_input.npy"), "input", 64, calib=100))
    if "cnn" in wanted:
        out.append(Workload("cnn", fx("cnn.onnx"), fx("cnn_input.npy"), "input", 32, calib=20))
    if "chain" in wanted:
        out.append(make_chain(tmp))
    out += [make_exported(tmp, name) for name in ("resnet18", "gpt") if name in wanted]
    return out


def run(cmd, timeout, env=None):
    """Runs cmd; returns stdout, or raises BenchError with the last line of its error."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=None if env is None else {**os.environ, **env})
    except FileNotFoundError as e:
        raise BenchError(f"{e.filename} not found")
    except subprocess.TimeoutExpired:
        raise BenchError(f"{os.path.basename(cmd[0])} timed out after {timeout:.0f} s")
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.strip()]
        raise BenchError(f"{os.path.basename(cmd[0])} exit {p.returncode}: "
                         f"{lines[-1] if lines else '(no output)'}")
    return p.stdout


def parse(out, pattern, tool):
    """All (runs, seconds) pairs from lines matching pattern."""
    found = [(int(m.group(1)), float(m.group(2))) for m in re.finditer(pattern, out, re.M)]
    if not found:
        tail = out.strip().splitlines()[-1:] or ["(no output)"]
        raise BenchError(f"{tool}: no result line in its output: {tail[0]}")
    return found


# Each backend: a callable (workload, runs, repeats) -> [(runs, seconds)] for the repeats.

class OfBackend:
    PATTERN = r"^ofrun: (\d+) pieces, ([0-9.]+) s, [0-9.]+ pieces/s\s*$"

    def __init__(self, build, threads, tmp, timeout, ofc_flags=()):
        self.ofc = os.path.join(build, "cli", "ofc")
        self.ofrun = os.path.join(build, "cli", "ofrun")
        self.threads, self.tmp, self.timeout, self.plans = threads, tmp, timeout, {}
        self.ofc_flags = list(ofc_flags)

    def plan(self, wl):
        if wl.name not in self.plans:
            for exe in (self.ofc, self.ofrun):
                if not os.access(exe, os.X_OK):
                    shown = os.path.relpath(exe, ROOT) if exe.startswith(ROOT + os.sep) else exe
                    raise BenchError(f"{shown} not built")
            path = os.path.join(self.tmp, wl.name + "".join(self.ofc_flags) + ".ofp")
            run([self.ofc, wl.model, "-o", path] + self.ofc_flags, self.timeout)
            self.plans[wl.name] = path
        return self.plans[wl.name]

    def __call__(self, wl, runs, repeats):
        plan, res = self.plan(wl), []
        for _ in range(repeats):  # one ofrun process per repeat
            out = run([self.ofrun, plan, "--input", f"{wl.input_name}={wl.input}",
                       "--pieces", str(runs), "--threads", str(wl.threads or self.threads)], self.timeout)
            res.append(parse(out, self.PATTERN, "ofrun")[-1])
        return res


class TorchBackend:
    PATTERN = r"^torch: (\d+) runs, ([0-9.]+) s"

    def __init__(self, threads, timeout, extra_env):
        self.threads, self.timeout = threads, timeout
        # GOMP_SPINCOUNT: OpenMP threads otherwise spin against each other on 2 cores (DEPS.md).
        # The malloc thresholds keep glibc from returning PyTorch's large activation buffers to
        # the OS after every call (fresh mmaps page-fault; 3x on cnn here): its best figure.
        self.env = {"GOMP_SPINCOUNT": "1000", "MALLOC_MMAP_THRESHOLD_": "4000000000",
                    "MALLOC_TRIM_THRESHOLD_": "4000000000", **extra_env}

    def info(self):
        return run([sys.executable, os.path.join(HERE, "torch_infer.py"), "--info"],
                   self.timeout).strip()

    def __call__(self, wl, runs, repeats):
        out = run([sys.executable, os.path.join(HERE, "torch_infer.py"), wl.name, str(runs),
                   str(wl.threads or self.threads), str(repeats)], self.timeout, env=self.env)
        return parse(out, self.PATTERN, "torch_infer.py")


class OrtBackend:
    PATTERN = r"^ort: (\d+) runs, ([0-9.]+) s"
    PKG = os.path.join(HERE, "node_modules", "onnxruntime-node")

    def __init__(self, threads, timeout):
        self.threads, self.timeout, self.error = threads, timeout, None
        try:
            self.version = self.ensure_installed()
        except BenchError as e:
            self.error = str(e)

    def ensure_installed(self):
        if not shutil.which("node"):
            raise BenchError("node not found")
        if not os.path.isdir(self.PKG):
            if not shutil.which("npm"):
                raise BenchError("npm not found")
            print("installing onnxruntime-node into benchmarks/ ...", flush=True)
            run(["npm", "install", "--prefix", HERE, "--no-audit", "--no-fund"], 600,
                env={"ONNXRUNTIME_NODE_INSTALL": "skip"})
        with open(os.path.join(self.PKG, "package.json")) as f:
            return json.load(f)["version"]

    def __call__(self, wl, runs, repeats):
        if self.error:
            raise BenchError(self.error)
        out = run(["node", os.path.join(HERE, "ort_infer.js"), wl.model, wl.input, str(runs),
                   str(wl.threads or self.threads), str(repeats)], self.timeout)
        return parse(out, self.PATTERN, "ort_infer.js")


def measure(backend, wl, repeats, seconds):
    """Warm-up/calibration run, then `repeats` runs of about `seconds` each. Returns the
    per-repeat figures: samples/s, or µs per op for the chain."""
    runs, secs = backend(wl, wl.calib, 1)[0]
    runs = max(1, round(runs / max(secs, 1e-6) * seconds))
    res = backend(wl, runs, repeats)
    if wl.ops:
        return [s * 1e6 / (n * wl.ops) for n, s in res]
    return [n * wl.batch / s for n, s in res]



def ratio(of, other, unit):
    """Speed-up of `of` over the other column (> 1: of is faster)."""
    if isinstance(of, str) or isinstance(other, str):
        return "–"
    a, b = statistics.median(of), statistics.median(other)
    return f"{(b / a if unit == 'us' else a / b):.2f}×"




def main():
    p = argparse.ArgumentParser(description="of vs PyTorch vs ONNX Runtime inference")
    p.add_argument("--build", default="build", help="of build folder (has cli/ofc, cli/ofrun)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=float, default=3.0, help="target length of one timed run")
    p.add_argument("--workloads", default="mlp,cnn,chain")
    p.add_argument("--torch-env", action="append", default=[], metavar="KEY=VALUE",
                   help="extra environment for the PyTorch runs (repeatable), e.g. "
                        "MALLOC_MMAP_THRESHOLD_=4000000000")
    a = p.parse_args()
    build = os.path.join(ROOT, a.build) if not os.path.isabs(a.build) else a.build
    timeout = 60 + 4 * a.seconds * a.repeats

    with tempfile.TemporaryDirectory(prefix="of-bench-") as tmp:
        # "of apart": the same plans with every register slot in bytes of its own (ofc
        # --no-memory-sharing): what sharing bytes costs in speed, if anything.
        backends = {"of": OfBackend(build, a.threads, tmp, timeout),
                    "of apart": OfBackend(build, a.threads, tmp, timeout, ["--no-memory-sharing"]),
                    "torch": TorchBackend(a.threads, timeout,
                                          dict(kv.split("=", 1) for kv in a.torch_env)),
                    "ort": OrtBackend(a.threads, timeout)}
        print(f"threads {a.threads}, {a.repeats} repeats of ~{a.seconds:g} s; median (min–max)")
        print("of: oneDNN matmul/conv, CPU actors")
        try:
            print(backends["torch"].info())
            print(f"PyTorch environment: {backends['torch'].env}")
        except BenchError as e:
            print(f"PyTorch: {e}")
        ort = backends["ort"]
        print(f"ONNX Runtime: {ort.error or 'onnxruntime-node ' + ort.version}, CPU EP (MLAS)")
        print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
        print(load_note() + "\n", flush=True)

        rows = []
        wanted = a.workloads.split(",")
        for wl in workloads(tmp, wanted):
            res = {}
            for name, backend in backends.items():
                try:
                    res[name] = measure(backend, wl, a.repeats, a.seconds)
                except BenchError as e:
                    res[name] = str(e)
                    print(f"{wl.name}/{name}: {e}", file=sys.stderr, flush=True)
            unit = "us" if wl.ops else "samples/s"
            label = (f"chain (µs/op, {CHAIN_PAIRS} Mul + {CHAIN_PAIRS} Add, 1 thread)" if wl.ops
                     else f"{wl.name} (b{wl.batch}, samples/s)")
            rows.append([label] + [fmt(res[n], unit) for n in ("of", "of apart", "torch", "ort")] +
                        [ratio(res["of"], res[n], unit) for n in ("of apart", "torch", "ort")])
        print()
        print_table(["workload", "of infer", "of, bytes apart", "PyTorch infer", "ONNX Runtime infer", "of/apart", "of/PyTorch",
                     "of/ORT"], rows)
        print("\nof/X: how many times faster of is (throughput ratio; for chain, X's µs/op "
              "over of's µs/act); apart: of with every register slot in bytes of its own "
              "(ofc --no-memory-sharing)")


if __name__ == "__main__":
    main()
