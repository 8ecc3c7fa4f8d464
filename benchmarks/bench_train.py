# SPDX-License-Identifier: Apache-2.0
# Training benchmark: `of` vs PyTorch eager, side by side in one run.
#   /usr/bin/python3 benchmarks/bench_train.py [--build build] [--repeats 3] [--threads CORES] \
#       [--of-threads N] [--kernel-threads K] [--seconds 3] [--models mlp,cnn,resnet18,gpt] [--torch-only] \
#       [--checkpoint-every N] [--device cuda --bin DIR]
# Workloads: mlp (test/fixtures/mlp.onnx, batch 64, Fashion-MNIST's train set in file order) and
# cnn (test/fixtures/cnn.onnx, batch 32, 2048 random samples written to a temp dir as .npy) and
# resnet18 (torchvision's, 10 classes, random init with seed 0, exported with the README's
# training recipe: BatchNorm in train mode; batch 8 of 224 px, 64 random samples).
# gpt (ANCHORS.md's: vocab 4096, width 256, 4 pre-LN blocks of 4 heads with a fused qkv nn.Linear,
# GELU (erf) MLP 1024, learned positions, seq 128, batch 8; test/e2e/gpt_parallel.py's model,
# exported with the training recipe) on a random token file, with Adam (lr 1e-3).
# All train with mean cross-entropy and SGD (lr 0.01, momentum 0.9), the gpt with Adam, from
# the ONNX file's weights. The figure is training samples/s: forward, loss, backward and update per batch.
# --device cuda (benchmarks/gpu/check.sh, on the GPU machine): of's plans are compiled for
# --devices 1:cuda and PyTorch trains on the same GPU (each batch copied to it per step, as of's
# source does); the mlp reads 4096 random samples instead of Fashion-MNIST (not on that machine);
# --bin names the folder with ofc and ofrun. Where the onnx package is missing, PyTorch's twins
# start from their own seeded weights (the throughput is the same).
# `of`: `ofc --train` once per model, then one `ofrun --steps N` per repeat; its last line
# "ofrun: trained S steps (N samples) in X s, R samples/s, last loss L" gives R.
# PyTorch: this script run again as a worker (--torch-worker), in its own process so that the
# environment below applies, timing its loop over the same data held in memory as tensors.
# --checkpoint-every N: both also save a checkpoint every N steps into a temp folder: `of` with
# ofrun's --checkpoint/--checkpoint-every; PyTorch with torch.save of the model's and the
# optimizer's state_dict into a temp file, fsynced and renamed over the last one (the durability
# of's saves have), inside the timed loop.
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import fmt, load_note, print_table  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(ROOT, "test", "fixtures")
FASHION = "/usr/share/datasets/fashion-mnist"
CNN_SAMPLES = 32 * 64
RESNET_SAMPLES = 8 * 8
GPT_SAMPLES = 8 * 16
OPTIMIZER = "sgd:lr=0.01,momentum=0.9"
GPT_OPTIMIZER = "adam:lr=0.001"


class BenchError(Exception):
    """A column that cannot be measured; the message goes into the table as n/a (...)."""


class OfError(Exception):
    """ofc or ofrun failed: the benchmark prints its stderr and exits non-zero."""


@dataclass
class Workload:
    name: str
    model: str   # .onnx path
    batch: int
    data: str    # ofrun's --data: idx:DIR, npy:FEATURES,LABELS or tokens:FILE (the PyTorch worker reads it too)
    calib: int   # steps of the warm-up and calibration run
    optimizer: str = OPTIMIZER


def workloads(tmp, wanted, device="cpu"):
    out = []
    if "mlp" in wanted and (device != "cpu" or not os.path.isdir(FASHION)):
        rng = np.random.default_rng(0)
        x, y = os.path.join(tmp, "mlp_x.npy"), os.path.join(tmp, "mlp_y.npy")
        np.save(x, rng.random((64 * 64, 784), dtype=np.float32))
        np.save(y, rng.integers(0, 10, 64 * 64).astype(np.int64))
        out.append(Workload("mlp", os.path.join(FIXTURES, "mlp.onnx"), 64, f"npy:{x},{y}", 30))
    elif "mlp" in wanted:
        out.append(Workload("mlp", os.path.join(FIXTURES, "mlp.onnx"), 64, "idx:" + FASHION, 30))
    if "cnn" in wanted:
        rng = np.random.default_rng(0)
        x, y = os.path.join(tmp, "cnn_x.npy"), os.path.join(tmp, "cnn_y.npy")
        np.save(x, rng.standard_normal((CNN_SAMPLES, 3, 32, 32), dtype=np.float32))
        np.save(y, rng.integers(0, 10, CNN_SAMPLES).astype(np.int64))
        out.append(Workload("cnn", os.path.join(FIXTURES, "cnn.onnx"), 32, f"npy:{x},{y}", 10))
    if "resnet18" in wanted:
        import torch
        import torchvision
        rng = np.random.default_rng(0)
        x, y = os.path.join(tmp, "resnet_x.npy"), os.path.join(tmp, "resnet_y.npy")
        np.save(x, rng.standard_normal((RESNET_SAMPLES, 3, 224, 224), dtype=np.float32))
        np.save(y, rng.integers(0, 10, RESNET_SAMPLES).astype(np.int64))
        onnx_path = os.path.join(tmp, "resnet18.onnx")
        torch.manual_seed(0)
        model = torchvision.models.resnet18(num_classes=10).train()
        torch.onnx.export(model, torch.zeros(8, 3, 224, 224), onnx_path, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=14, input_names=["input"], output_names=["logits"])
        out.append(Workload("resnet18", onnx_path, 8, f"npy:{x},{y}", 3))
    if "gpt" in wanted:
        import torch
        gpt = gpt_module()
        rng = np.random.default_rng(0)
        corpus = os.path.join(tmp, "gpt_corpus.u16")
        rng.integers(0, gpt.VOCAB, GPT_SAMPLES * gpt.SEQ + 1).astype(np.uint16).tofile(corpus)
        onnx_path = os.path.join(tmp, "gpt.onnx")
        torch.manual_seed(0)
        model = gpt.GPT().train()
        torch.onnx.export(model, torch.zeros(8, gpt.SEQ, dtype=torch.int64), onnx_path,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False, opset_version=14,
                          input_names=["input"], output_names=["logits"])
        out.append(Workload("gpt", onnx_path, 8, f"tokens:{corpus},dtype=uint16", 3, GPT_OPTIMIZER))
    return out


def gpt_module():
    """test/e2e/gpt_parallel.py: the GPT as users write it, at the anchors' shape."""
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
    import gpt_parallel
    return gpt_parallel


FLOAT = r"[-+0-9.eE]+|nan|-?inf"


def run(cmd, timeout, env=None, error=BenchError):
    """Runs cmd; returns stdout, or raises `error` with the last line of its error (BenchError)
    or the whole of it (OfError)."""
    name = os.path.basename(cmd[0])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=None if env is None else {**os.environ, **env})
    except FileNotFoundError as e:
        raise error(f"{e.filename} not found")
    except subprocess.TimeoutExpired:
        raise error(f"{name} timed out after {timeout:.0f} s: {' '.join(cmd)}")
    if p.returncode != 0:
        if error is OfError:
            raise OfError(f"{' '.join(cmd)}\nexit {p.returncode}; stderr:\n{p.stderr.rstrip()}"
                          + (f"\nstdout:\n{p.stdout.rstrip()}" if p.stdout.strip() else ""))
        lines = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.strip()]
        raise error(f"{name} exit {p.returncode}: {lines[-1] if lines else '(no output)'}")
    return p.stdout


# Each backend: a callable (workload, steps, repeats) -> [(steps, seconds, samples/s, last loss)];
# the last loss ends with "after S" (steps since the ONNX weights).

class OfBackend:
    PATTERN = (rf"^ofrun: trained (\d+) steps \((\d+) samples\) in ({FLOAT}) s, "
               rf"({FLOAT}) samples/s, last loss ({FLOAT})\s*$")

    def __init__(self, build, threads, kernel_threads, tmp, timeout, checkpoint_every=0, device="cpu", bins=None):
        self.checkpoint_every, self.device = checkpoint_every, device
        self.ofc = os.path.join(bins or os.path.join(build, "cli"), "ofc")
        self.ofrun = os.path.join(bins or os.path.join(build, "cli"), "ofrun")
        self.threads, self.kernel_threads = threads, kernel_threads
        self.tmp, self.timeout, self.plans = tmp, timeout, {}

    def plan(self, wl):
        if wl.name not in self.plans:
            for exe in (self.ofc, self.ofrun):
                if not os.access(exe, os.X_OK):
                    shown = os.path.relpath(exe, ROOT) if exe.startswith(ROOT + os.sep) else exe
                    raise OfError(f"{shown} not built (or use --torch-only)")
            folder = os.path.join(self.tmp, wl.name)
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "train.ofp")
            run([self.ofc, wl.model, "-o", path, "--train", "--loss", "cross_entropy",
                 "--label", "label", "--optimizer", wl.optimizer] + (["--devices", "1:cuda"] if self.device == "cuda" else []),
                self.timeout, error=OfError)
            self.plans[wl.name] = path
        return self.plans[wl.name]

    def __call__(self, wl, steps, repeats):
        plan, res = self.plan(wl), []
        for _ in range(repeats):  # one ofrun process per repeat
            cmd = [self.ofrun, plan, "--data", wl.data, "--steps", str(steps)]
            if self.threads:
                cmd += ["--threads", str(self.threads)]
            if self.kernel_threads:
                cmd += ["--kernel-threads", str(self.kernel_threads)]
            if self.checkpoint_every:
                cmd += ["--checkpoint", os.path.join(self.tmp, wl.name, "ckpt"), "--overwrite",
                        "--checkpoint-every", str(self.checkpoint_every)]
            out = run(cmd, self.timeout, error=OfError)
            found = list(re.finditer(self.PATTERN, out, re.M))
            if not found:
                tail = out.strip().splitlines()[-1:] or ["(no output)"]
                raise OfError(f"{' '.join(cmd)}\nno result line in its output; last line: "
                              f"{tail[0]}")
            m = found[-1]
            res.append((int(m.group(1)), float(m.group(3)), float(m.group(4)),
                        f"{m.group(5)} after {m.group(1)}"))
        return res


class TorchBackend:
    PATTERN = rf"^torch: (\d+) steps, ({FLOAT}) s, last loss ({FLOAT}) after (\d+) steps\s*$"

    def __init__(self, threads, timeout, extra_env, checkpoint_every=0, tmp=None, device="cpu"):
        self.threads, self.timeout, self.device = threads, timeout, device
        self.checkpoint_every, self.tmp = checkpoint_every, tmp
        # As bench_infer.py: GOMP_SPINCOUNT keeps OpenMP threads from spinning against each
        # other on 2 cores, and the malloc thresholds keep glibc from handing PyTorch's large
        # buffers back to the OS after every step (fresh mmaps page-fault): its best figure.
        self.env = {"GOMP_SPINCOUNT": "1000", "MALLOC_MMAP_THRESHOLD_": "4000000000",
                    "MALLOC_TRIM_THRESHOLD_": "4000000000", **extra_env}

    def info(self):
        return run([sys.executable, os.path.join(HERE, "torch_infer.py"), "--info"],
                   self.timeout).strip()

    def __call__(self, wl, steps, repeats):
        out = run([sys.executable, os.path.abspath(__file__), "--torch-worker", wl.name,
                   wl.data, str(wl.batch), str(steps), str(self.threads), str(repeats),
                   str(self.checkpoint_every), os.path.join(self.tmp or tempfile.gettempdir(), wl.name + ".pt"), self.device],
                  self.timeout, env=self.env)
        found = [(int(m.group(1)), float(m.group(2)), f"{m.group(3)} after {m.group(4)}")
                 for m in re.finditer(self.PATTERN, out, re.M)]
        if not found:
            tail = out.strip().splitlines()[-1:] or ["(no output)"]
            raise BenchError(f"torch worker: no result line in its output: {tail[0]}")
        return [(n, s, n * wl.batch / s, loss) for n, s, loss in found]


def measure(backend, wl, repeats, seconds):
    """A warm-up run of wl.calib steps that also calibrates the step count, then `repeats` runs
    of about `seconds` each. Returns ([samples/s per repeat], last loss of the last repeat)."""
    steps, secs, _, _ = backend(wl, wl.calib, 1)[0]
    steps = max(1, round(steps / max(secs, 1e-6) * seconds))
    res = backend(wl, steps, repeats)
    return [r[2] for r in res], f"{res[-1][3]} steps"


# ---------------------------------------------------------------- the PyTorch worker

def torch_model(name):
    """The PyTorch twin of workload `name`, in train mode, and its optimizer (the same as of's)."""
    import torch
    sys.path.insert(0, FIXTURES)
    from fixture_models import CNN, MLP
    try:
        from make_training_fixtures import load_from_onnx
    except ImportError:
        pass
    if name == "resnet18":  # the exported model: the same seed gives the same initial weights
        import torchvision
        torch.manual_seed(0)
        model = torchvision.models.resnet18(num_classes=10)
    elif name == "gpt":
        torch.manual_seed(0)
        model = gpt_module().GPT()
    else:
        try:
            model = load_from_onnx({"mlp": MLP, "cnn": CNN}[name](), os.path.join(FIXTURES, name + ".onnx"))
        except NameError:  # no onnx package here: seeded weights of its own (the speed is the same)
            torch.manual_seed(0)
            model = {"mlp": MLP, "cnn": CNN}[name]()
    model.train()
    opt = (torch.optim.Adam(model.parameters(), lr=1e-3) if name == "gpt"
           else torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
    return model, opt


def torch_worker(argv):
    """--torch-worker MODEL DATA BATCH STEPS THREADS REPEATS EVERY PATH: builds MODEL from its ONNX file's
    initializers, loads DATA (ofrun's --data syntax) into tensors, warms up, then prints
    "torch: STEPS steps, SECONDS s, last loss L after T steps" per repeat (T counts the
    warm-up and the earlier repeats: one model trains throughout). EVERY > 0: a checkpoint
    (model and optimizer state_dicts) is saved to PATH every EVERY steps, fsynced, by rename."""
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, FIXTURES)

    name, data, batch, steps, threads, repeats, every, path, device = argv
    batch, steps, threads, repeats, every = int(batch), int(steps), int(threads), int(repeats), int(every)
    torch.set_num_threads(threads)
    kind, _, where = data.partition(":")
    if kind == "idx":
        from make_training_fixtures import read_idx
        images = read_idx(os.path.join(where, "train-images-idx3-ubyte.gz"))
        labels = read_idx(os.path.join(where, "train-labels-idx1-ubyte.gz"))
        x = images.reshape(images.shape[0], -1).astype(np.float32) / np.float32(255.0)
        y = labels.astype(np.int64)
    elif kind == "npy":
        fx, fy = where.split(",")
        x, y = np.load(fx), np.load(fy).astype(np.int64)
    elif kind == "tokens":  # sample i: tokens [i*seq, i*seq + seq], labels shifted by one, as ofrun
        seq = gpt_module().SEQ
        t = np.fromfile(where.split(",")[0], dtype=np.uint16).astype(np.int64)
        n = (len(t) - 1) // seq
        idx = np.arange(n)[:, None] * seq + np.arange(seq)[None, :]
        x, y = t[idx], t[idx + 1]
    else:
        sys.exit(f"torch worker: unknown data {data}")
    x, y = torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y)
    if device != "cpu":  # pinned, so that each batch's copy to the GPU is asynchronous
        x, y = x.pin_memory(), y.pin_memory()
    batches = x.shape[0] // batch
    model, opt = torch_model(name)
    model.to(device)  # in place: the optimizer keeps the same parameters
    done = [0]

    def train(n):
        loss = None
        for _ in range(n):
            b = done[0] % batches
            done[0] += 1
            opt.zero_grad(set_to_none=True)
            xb = x[b * batch:(b + 1) * batch].to(device, non_blocking=True)
            yb = y[b * batch:(b + 1) * batch].to(device, non_blocking=True)
            loss = F.cross_entropy(model(xb), yb.reshape(-1))
            loss.backward()
            opt.step()
            if every and done[0] % every == 0:
                with open(path + ".tmp", "wb") as f:
                    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, f)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(path + ".tmp", path)
        return loss

    train(max(3, steps // 10))  # warm-up
    for _ in range(repeats):
        start = time.perf_counter()
        loss = train(steps)
        last = loss.item()  # waits for the device
        s = time.perf_counter() - start
        print(f"torch: {steps} steps, {s:.6f} s, last loss {last:.4f} after {done[0]} steps",
              flush=True)


# ---------------------------------------------------------------- the table


def ratio(of, other):
    """Speed-up of `of` over PyTorch (> 1: of is faster)."""
    if isinstance(of, str) or isinstance(other, str):
        return "–"
    return f"{statistics.median(of) / statistics.median(other):.2f}×"




def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        if len(sys.argv) != 11:
            sys.exit("usage: bench_train.py --torch-worker MODEL DATA BATCH STEPS THREADS REPEATS EVERY PATH DEVICE")
        return torch_worker(sys.argv[2:])
    p = argparse.ArgumentParser(description="of vs PyTorch training throughput")
    p.add_argument("--build", default="build", help="of build folder (has cli/ofc, cli/ofrun)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="PyTorch's set_num_threads (default: the machine's cores)")
    p.add_argument("--of-threads", type=int, default=None,
                   help="ofrun --threads (default: ofrun's own: one worker per core, one for a plan of one device)")
    p.add_argument("--kernel-threads", type=int, default=None,
                   help="ofrun --kernel-threads (default: ofrun's own: every core for a plan of one device)")
    p.add_argument("--seconds", type=float, default=3.0, help="target length of one timed run")
    p.add_argument("--models", default="mlp,cnn")
    p.add_argument("--torch-only", action="store_true", help="skip the of column")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                   help="both save a checkpoint every N steps (of: ofrun --checkpoint-every N)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cuda: of's plans for --devices 1:cuda and PyTorch on the same GPU")
    p.add_argument("--bin", default=None, help="folder with ofc and ofrun (default: BUILD/cli)")
    p.add_argument("--torch-env", action="append", default=[], metavar="KEY=VALUE",
                   help="extra environment for the PyTorch runs (repeatable)")
    a = p.parse_args()
    build = os.path.join(ROOT, a.build) if not os.path.isabs(a.build) else a.build
    timeout = 120 + 4 * a.seconds * a.repeats
    wanted = a.models.split(",")
    unknown = set(wanted) - {"mlp", "cnn", "resnet18", "gpt"}
    if unknown:
        p.error(f"unknown model(s): {', '.join(sorted(unknown))} (mlp, cnn, resnet18, gpt)")

    with tempfile.TemporaryDirectory(prefix="of-bench-train-") as tmp:
        backends = {} if a.torch_only else {  # of first: a failing ofc/ofrun ends it early
            "of": OfBackend(build, a.of_threads, a.kernel_threads, tmp, timeout, a.checkpoint_every, a.device, a.bin)}
        backends["torch"] = TorchBackend(a.threads, timeout,
                                         dict(kv.split("=", 1) for kv in a.torch_env), a.checkpoint_every, tmp, a.device)
        print(f"threads {a.threads}, {a.repeats} repeats of ~{a.seconds:g} s; median (min–max); "
              f"training samples/s, SGD lr 0.01 momentum 0.9 (gpt: Adam lr 1e-3), mean cross-entropy"
              + (f"; a checkpoint every {a.checkpoint_every} steps" if a.checkpoint_every else ""))
        print("of: ofrun" + (f" --threads {a.of_threads}" if a.of_threads else "")
              + (f" --kernel-threads {a.kernel_threads}" if a.kernel_threads else "")
              + ("" if a.of_threads or a.kernel_threads else " (its default threads)")
              + (" (skipped: --torch-only)" if a.torch_only else ""))
        try:
            print(backends["torch"].info())
            print(f"PyTorch environment: {backends['torch'].env}")
        except BenchError as e:
            print(f"PyTorch: {e}")
        print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
        print(load_note() + "\n", flush=True)

        rows, losses = [], []
        print(f"device: {a.device}")
        for wl in workloads(tmp, wanted, a.device):
            res, last = {"of": "--torch-only"}, {}
            for name, backend in backends.items():
                try:
                    res[name], last[name] = measure(backend, wl, a.repeats, a.seconds)
                except BenchError as e:
                    res[name] = str(e)
                    print(f"{wl.name}/{name}: {e}", file=sys.stderr, flush=True)
                except OfError as e:
                    print(f"{wl.name}/of: failed:\n{e}", file=sys.stderr, flush=True)
                    if a.device == "cpu":
                        sys.exit(1)
                    res[name] = "failed: " + (str(e).strip().splitlines() or ["?"])[-1][:120]  # the GPU check goes on
            rows.append([f"{wl.name} (b{wl.batch}, samples/s)", fmt(res["of"]),
                         fmt(res["torch"]), ratio(res["of"], res["torch"])])
            losses.append(f"{wl.name}: last loss " +
                          ", ".join(f"{n} {v}" for n, v in sorted(last.items())))
        print()
        print_table(["workload", "of train", "PyTorch train", "of/PyTorch"], rows)
        print("\nof/PyTorch: how many times faster of trains (ratio of median samples/s)")
        for line in losses:
            print(line)


if __name__ == "__main__":
    main()
