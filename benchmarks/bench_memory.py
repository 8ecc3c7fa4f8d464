# SPDX-License-Identifier: Apache-2.0
# Training memory: `of`'s planned arenas next to PyTorch's peak for one training step of the same
# model, in one run.
#   /usr/bin/python3 benchmarks/bench_memory.py [--build build] [--models mlp,cnn,resnet18,gpt]
# Workloads: bench_train.py's (the same exports, batches and optimizers).
# of: `ofc --train` as bench_train compiles it; the figure is the sum of the plan's arenas
# (ofdump --json: every buffer of every device, known before launch; a run touches exactly that,
# ofrun --memory-report), with memory sharing (the default) and with every register slot in bytes
# of its own (ofc --no-memory-sharing), and with ofc --recompute (activations cheap ops make again
# from kept tensors are recomputed in the backward pass; PyTorch's column keeps everything).
# "of, measured": what a 3-step `ofrun --memory-report` of the shared plan held (glibc's bytes in
# use, sampled while its actors run, less what was in use before the plan loaded: arenas,
# kernel scratch, the actors, the data loader's batches, the weights' copies), the figure that
# compares with PyTorch's, counted the same way.
# PyTorch: this script again as a worker (--torch-worker), in its own process: after two warm-up
# steps, one step under a dispatch mode that reads glibc's bytes in use (mallinfo2: heap plus
# mmapped blocks) after every aten op, while a thread also samples it every millisecond (as
# ofrun's sampler does, so temporaries inside an op count on both sides); the figure is the
# highest, less what was in use before the model was built. That counts tensors (parameters,
# gradients, optimizer state, activations, temporaries) and what libtorch allocates for itself
# while training (caches), not the process's RSS (libtorch's code and its allocator's free
# lists).
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_train  # noqa: E402
from bench_common import load_note, print_table  # noqa: E402

ROOT = bench_train.ROOT


def mib(n):
    return f"{n / (1 << 20):.1f} MiB"


def of_arenas(build, wl, tmp, flags):
    ofc, ofdump = (os.path.join(build, "cli", x) for x in ("ofc", "ofdump"))
    plan = os.path.join(tmp, f"{wl.name}{''.join(flags)}.ofp")
    bench_train.run([ofc, wl.model, "-o", plan, "--train", "--loss", "cross_entropy", "--label", "label",
                     "--optimizer", wl.optimizer] + flags, 600, error=bench_train.OfError)
    dump = json.loads(bench_train.run([ofdump, plan, "--json"], 120, error=bench_train.OfError))
    return sum(a["peak"] for a in dump["arenas"]), plan


def of_measured(build, wl, plan):
    """The heap high-water mark ofrun --memory-report prints for 3 training steps of `plan`."""
    out = bench_train.run([os.path.join(build, "cli", "ofrun"), plan, "--data", wl.data, "--steps", "3", "--threads", "2",
                           "--kernel-threads", "1", "--memory-report"], 600, error=bench_train.OfError)
    marks = [int(line.split()[4]) for line in out.splitlines() if line.startswith("ofrun: heap high-water mark: ")]
    if not marks:
        raise bench_train.OfError(f"ofrun --memory-report printed no heap high-water mark for {plan}")
    return max(marks)


def torch_worker(name, batch):
    """Prints "torch-peak: BYTES" for one training step of workload `name` at `batch`."""
    libc = ctypes.CDLL("libc.so.6")

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                                                   "uordblks", "fordblks", "keepcost")]

    libc.mallinfo2.restype = MallInfo2

    def in_use():
        m = libc.mallinfo2()
        return m.uordblks + m.hblkhd

    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode

    class Peak(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.peak = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.peak = max(self.peak, in_use())
            return out

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    if name == "gpt":
        gpt = bench_train.gpt_module()
        x = torch.randint(0, gpt.VOCAB, (batch, gpt.SEQ), generator=g)
        y = torch.randint(0, gpt.VOCAB, (batch, gpt.SEQ), generator=g)
    else:
        shape = {"mlp": (batch, 784), "cnn": (batch, 3, 32, 32), "resnet18": (batch, 3, 224, 224)}[name]
        x, y = torch.randn(shape, generator=g), torch.randint(0, 10, (batch,), generator=g)
    before = in_use()
    model, opt = bench_train.torch_model(name)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y.reshape(-1)).backward()
        opt.step()

    step()
    step()
    peak = Peak()
    # What an op allocates and frees within itself (oneDNN's reordered copies, sgemm's packing
    # buffers) is never in use between two ops: a thread samples as ofrun's sampler does (every
    # millisecond, while torch's kernels run without the GIL), so both sides count alike.
    sampled = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            sampled[0] = max(sampled[0], in_use())
            time.sleep(0.001)

    sampler = threading.Thread(target=sample)
    sampler.start()
    with peak:
        step()
    done.set()
    sampler.join()
    print(f"torch-peak: {max(peak.peak, sampled[0]) - before}", flush=True)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--torch-worker":
        torch_worker(sys.argv[2], int(sys.argv[3]))
        return
    p = argparse.ArgumentParser(description="of's planned training memory vs PyTorch's peak")
    p.add_argument("--build", default="build", help="of build folder (has cli/ofc, cli/ofdump)")
    p.add_argument("--models", default="mlp,cnn,resnet18,gpt")
    a = p.parse_args()
    build = os.path.join(ROOT, a.build) if not os.path.isabs(a.build) else a.build
    print(load_note() + "\n", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="of-bench-memory-") as tmp:
        for wl in bench_train.workloads(tmp, a.models.split(",")):
            shared, plan = of_arenas(build, wl, tmp, [])
            measured = of_measured(build, wl, plan)
            apart, _ = of_arenas(build, wl, tmp, ["--no-memory-sharing"])
            recompute, _ = of_arenas(build, wl, tmp, ["--recompute"])
            out = bench_train.run([sys.executable, os.path.abspath(__file__), "--torch-worker", wl.name, str(wl.batch)], 600)
            torch_peak = int(out.strip().splitlines()[-1].split(": ")[1])
            rows.append([f"{wl.name} (b{wl.batch}, {wl.optimizer.split(':')[0]})", mib(shared), mib(measured), mib(recompute), mib(apart),
                         mib(torch_peak), f"{shared / torch_peak:.2f}", f"{measured / torch_peak:.2f}", f"{recompute / torch_peak:.2f}",
                         f"{apart / torch_peak:.2f}"])
    print_table(["training step", "of arenas", "of, measured", "of --recompute", "of, bytes apart", "PyTorch peak", "of/PyTorch",
                 "measured/PyTorch", "recompute/PyTorch", "apart/PyTorch"], rows)
    print("\nof/PyTorch < 1: of plans less memory than PyTorch's peak (target: at most 1); measured/PyTorch: all that ofrun held "
          "while training (arenas, scratch, actors, loader), counted as PyTorch's is")


if __name__ == "__main__":
    main()
