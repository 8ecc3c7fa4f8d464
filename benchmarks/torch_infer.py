# SPDX-License-Identifier: Apache-2.0
# PyTorch eager inference timing for bench_infer.py (the workloads of shared/ANCHORS.md).
#   /usr/bin/python3 benchmarks/torch_infer.py {mlp|cnn|chain} ITERS THREADS [REPEATS]
#   /usr/bin/python3 benchmarks/torch_infer.py --info
# Warms up, then prints one line per repeat: "torch: ITERS runs, SECONDS s, RATE runs/s".
# One run is one forward pass of a batch (mlp 64, cnn 32, resnet18 8 at 224 px, gpt 8 x 128
# tokens) or of the whole 1000-op chain.
# Run it with GOMP_SPINCOUNT=1000 in the environment (bench_infer.py does), or PyTorch is
# several times slower here.
import argparse
import re
import time

import torch

CHAIN_PAIRS = 500  # x = x * 1.0001 + 0.0001, 500 times: 500 Mul + 500 Add = 1000 ops


def mlp():
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10))
    return model, torch.randn(64, 784)


def cnn():
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(4096, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10))
    return model, torch.randn(32, 3, 32, 32)


def chain():
    def model(x):
        for _ in range(CHAIN_PAIRS):
            x = x * 1.0001 + 0.0001
        return x
    return model, torch.randn(1, 16)


def resnet18():
    import torchvision
    torch.manual_seed(0)  # bench_infer.py exports the same model from the same seed
    return torchvision.models.resnet18(num_classes=10), torch.randn(8, 3, 224, 224)


def gpt():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
    import gpt_parallel
    torch.manual_seed(0)
    return gpt_parallel.GPT(), torch.randint(0, gpt_parallel.VOCAB, (8, gpt_parallel.SEQ))


WORKLOADS = {"mlp": mlp, "cnn": cnn, "chain": chain, "resnet18": resnet18, "gpt": gpt}


def time_runs(model, x, iters):
    start = time.perf_counter()
    for _ in range(iters):
        model(x)
    return time.perf_counter() - start


def info():
    maps = open("/proc/self/maps").read()
    libs = sorted({p.rsplit("/", 1)[-1] for p in
                   re.findall(r"/\S*(?:blas|dnnl|mkl)\S*\.so\S*", maps)})
    return (f"PyTorch {torch.__version__}: Linear via BLAS, Conv via oneDNN (mkldnn "
            f"{'on' if torch.backends.mkldnn.is_available() else 'off'}); loaded: "
            f"{', '.join(libs) or 'none found'}")


def main():
    p = argparse.ArgumentParser(description="PyTorch eager inference timing")
    p.add_argument("workload", nargs="?", choices=sorted(WORKLOADS))
    p.add_argument("iters", nargs="?", type=int)
    p.add_argument("threads", nargs="?", type=int)
    p.add_argument("repeats", nargs="?", type=int, default=1)
    p.add_argument("--info", action="store_true", help="print the math libraries and exit")
    a = p.parse_args()
    if a.info:
        print(info())
        return
    if a.threads is None:
        p.error("workload, iters and threads are required")
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model, x = WORKLOADS[a.workload]()
    if isinstance(model, torch.nn.Module):
        model.eval()
    with torch.no_grad():
        time_runs(model, x, max(3, a.iters // 10))  # warm-up
        for _ in range(a.repeats):
            s = time_runs(model, x, a.iters)
            print(f"torch: {a.iters} runs, {s:.6f} s, {a.iters / s:.3f} runs/s", flush=True)


if __name__ == "__main__":
    main()
