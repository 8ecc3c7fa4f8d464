#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's times for the rows of kernels_bench.cpp, on the same GPU: median microseconds of one
call (CUDA events, after warm-up), fp32 with TF32 off, as of's kernels compute. Run by check.sh.

  python3 benchmarks/gpu/torch_kernels.py [REPS]
"""
import sys

import torch
import torch.nn.functional as F


def rows(dev):
    r = lambda *s: torch.rand(*s, device=dev) * 2 - 1
    x784, w1, b1 = r(64, 784), r(1024, 784), r(1024)
    x1024, w2 = r(64, 1024), r(1024, 1024)
    p, g, v, m = r(1024, 1024), r(1024, 1024), r(1024, 1024), r(1024, 1024)
    sgd = torch.optim.SGD([torch.nn.Parameter(p.clone())], lr=0.01, momentum=0.9)
    sgd.param_groups[0]["params"][0].grad = g
    adam = torch.optim.Adam([torch.nn.Parameter(p.clone())], lr=0.01)
    adam.param_groups[0]["params"][0].grad = g
    xc, wc, bc, dyc = r(32, 32, 16, 16), r(64, 32, 3, 3), r(64), r(32, 64, 16, 16)
    xp = r(32, 32, 32, 32)
    xg, wqkv = r(8, 128, 256), r(768, 256)
    q, kt = r(8, 4, 128, 64), r(8, 4, 64, 128)
    s = r(8, 4, 128, 128)
    lnw, lnb = r(256), r(256)
    h = r(8, 128, 1024)
    heads = r(8, 128, 4, 64)
    table, tokens = r(4096, 256), torch.randint(0, 10, (8, 128), device=dev)
    logits, labels = r(1024, 4096), torch.randint(0, 10, (1024,), device=dev)
    return [
        ("mlp fc1 (+bias, relu)", lambda: F.relu(F.linear(x784, w1, b1))),
        ("mlp fc2", lambda: F.linear(x1024, w2, b1)),
        ("mlp relu_grad", lambda: torch.ops.aten.threshold_backward(x1024, x1024, 0)),
        ("mlp bias grad", lambda: x1024.sum(0)),
        ("mlp sgd momentum fc2", lambda: sgd.step()),
        ("mlp adam fc2", lambda: adam.step()),
        ("cnn conv2 (+bias)", lambda: F.conv2d(xc, wc, bc, padding=1)),
        ("cnn conv2 grad data", lambda: torch.nn.grad.conv2d_input(xc.shape, wc, dyc, padding=1)),
        ("cnn conv2 grad weight", lambda: torch.nn.grad.conv2d_weight(xc, wc.shape, dyc, padding=1)),
        ("cnn max_pool 2x2", lambda: F.max_pool2d(xp, 2)),
        ("gpt qkv projection", lambda: F.linear(xg, wqkv)),
        ("gpt scores q.k^T", lambda: q @ kt),
        ("gpt softmax", lambda: torch.softmax(s, -1)),
        ("gpt layer_norm", lambda: F.layer_norm(xg, (256,), lnw, lnb)),
        ("gpt gelu", lambda: F.gelu(h)),
        ("gpt heads transpose", lambda: heads.transpose(1, 2).contiguous()),
        ("gpt token embedding", lambda: F.embedding(tokens, table)),
        ("gpt loss", lambda: F.cross_entropy(logits, labels)),
    ]


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    if not torch.cuda.is_available():
        print("torch_kernels.py: no CUDA device")
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    print(f"{'row':24} | {'torch us':>10}   (torch {torch.__version__}, {torch.cuda.get_device_name()})")
    with torch.no_grad():
        for name, fn in rows("cuda"):
            times = []
            for i in range(reps + 3):
                start.record()
                fn()
                stop.record()
                torch.cuda.synchronize()
                if i >= 3:
                    times.append(start.elapsed_time(stop) * 1e3)
            times.sort()
            print(f"{name:24} | {times[len(times) // 2]:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
