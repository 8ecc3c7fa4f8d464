#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small GPT trained by `of` on one device and in parallel, against PyTorch and against itself.

The model (4096 tokens, 256 wide, 4 blocks of 4-head causal attention and a ReLU MLP, sequences
of 128) is defined and exported here, with seeded weights, rather than committed (21 MB). Then:
  torch     20 SGD steps of PyTorch on a token file, no shuffling; `of` on one device must give
            the same losses within 1e-4 relative.
  parallel  20 steps with dp=2, tp=2, pp=2 (4 micro-batches), dp=2 x tp=2 and dp=2 x pp=2 must
            give the one-device losses (with as many micro-batches) within 1e-4 relative; the
            tensor-parallel plan must split attention and MLP weights by column, then by row.
Usage: gpt_parallel.py --bin BUILD/cli --work DIR {torch,parallel,all}
"""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch

VOCAB, WIDTH, HEADS, LAYERS, SEQ, BATCH = 4096, 256, 4, 4, 128, 2
STEPS, LR, MOMENTUM = 20, 0.01, 0.9


class Linear(torch.nn.Module):
    """x @ W + b with W stored [in, out]: the exported MatMul reads the parameter itself (torch's
    Linear would export a transposed copy under a generated name)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.W = torch.nn.Parameter(torch.randn(n_in, n_out) * (1.0 / math.sqrt(n_in)))
        self.b = torch.nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return x @ self.W + self.b


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(WIDTH), torch.nn.LayerNorm(WIDTH)
        self.q, self.k, self.v, self.proj = (Linear(WIDTH, WIDTH) for _ in range(4))
        self.fc1, self.fc2 = Linear(WIDTH, 4 * WIDTH), Linear(4 * WIDTH, WIDTH)

    def forward(self, x, mask):
        b, t, c = x.shape
        d = c // HEADS
        h = self.ln1(x)
        q = self.q(h).reshape(b, t, HEADS, d).transpose(1, 2)
        k = self.k(h).reshape(b, t, HEADS, d).permute(0, 2, 3, 1)
        v = self.v(h).reshape(b, t, HEADS, d).transpose(1, 2)
        att = torch.softmax((q @ k) * (1.0 / math.sqrt(d)) + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.fc2(torch.relu(self.fc1(self.ln2(x))))


class GPT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, WIDTH)
        self.pos = torch.nn.Parameter(torch.randn(SEQ, WIDTH) * 0.02)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = torch.nn.LayerNorm(WIDTH)
        self.head = Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        # The causal mask is made in forward: the exporter turns it into a constant of its own
        # (not a parameter), which `of` does not train.
        mask = torch.triu(torch.full((SEQ, SEQ), -1e4), diagonal=1)
        x = self.tok(tokens) + self.pos
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.ln(x)).reshape(-1, VOCAB)


def run(cmd, work):
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"gpt_parallel: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def setup(work):
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model = GPT().eval()
    path = os.path.join(work, "gpt.onnx")
    torch.onnx.export(model, torch.zeros(BATCH, SEQ, dtype=torch.int64), path, opset_version=17,
                      input_names=["input"], output_names=["logits"], do_constant_folding=True)
    rng = np.random.default_rng(0)
    n = STEPS * 4 * BATCH * SEQ + 1  # enough for 20 steps of 4 micro-batches
    tokens = np.zeros(n, dtype=np.uint16)
    for i in range(1, n):  # a learnable pattern with noise
        tokens[i] = (5 * int(tokens[i - 1]) + 7) % VOCAB if rng.random() < 0.7 else rng.integers(VOCAB)
    corpus = os.path.join(work, "corpus.u16")
    tokens.tofile(corpus)
    return model, path, corpus, tokens


def of_losses(bins, work, onnx_path, corpus, name, flags, micro_batches=1):
    plan = os.path.join(work, name + ".ofp")
    run([os.path.join(bins, "ofc"), onnx_path, "-o", plan, "--train", "--loss", "cross_entropy",
         "--optimizer", f"sgd:lr={LR},momentum={MOMENTUM}", "--micro-batches", str(micro_batches)] + flags, work)
    metrics = os.path.join(work, name + ".jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    run([os.path.join(bins, "ofrun"), plan, "--data", f"tokens:{corpus},dtype=uint16", "--steps", str(STEPS),
         "--no-shuffle", "--metrics", metrics], work)
    return plan, [json.loads(line)["loss"] for line in open(metrics)]


def worst(a, b):
    """The largest relative difference; infinite for any NaN (max() alone skips a NaN that is
    not first) or for lists of different lengths."""
    if len(a) != len(b) or not a:
        return math.inf
    rel = [abs(x - y) / abs(y) if y != 0 else abs(x) for x, y in zip(a, b)]
    return math.inf if any(math.isnan(r) for r in rel) else max(rel)


def check_torch(bins, work, model, onnx_path, corpus, tokens):
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    want = []
    t = torch.from_numpy(tokens.astype(np.int64))
    for step in range(STEPS):
        rows = [t[(step * BATCH + r) * SEQ:(step * BATCH + r) * SEQ + SEQ + 1] for r in range(BATCH)]
        x = torch.stack([r[:-1] for r in rows])
        y = torch.stack([r[1:] for r in rows]).reshape(-1)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        want.append(loss.item())
    _, got = of_losses(bins, work, onnx_path, corpus, "one", [])
    w = worst(got, want)
    print(f"torch: 20 SGD steps, worst relative loss difference {w:.2e} (first {got[0]:.4f} vs {want[0]:.4f}, "
          f"last {got[-1]:.4f} vs {want[-1]:.4f})")
    if len(got) != STEPS or w > 1e-4:
        sys.exit(f"gpt_parallel: of {got} vs PyTorch {want}")


def sbp(bins, work, plan):
    j = json.loads(run([os.path.join(bins, "ofdump"), "--json", plan], work))
    return {t["name"]: t["sbp"] for t in j["layouts"]}, j["boxings"]


def check_parallel(bins, work, onnx_path, corpus):
    single = {k: of_losses(bins, work, onnx_path, corpus, f"one{k}", [], k)[1] for k in (1, 4)}
    configs = [("dp=2", ["--devices", "2:cpu", "--dp", "2"], 1),
               ("tp=2", ["--devices", "2:cpu", "--tp", "2"], 1),
               ("pp=2, 4 micro-batches", ["--devices", "2:cpu", "--pp", "2"], 4),
               ("dp=2 x tp=2", ["--devices", "4:cpu", "--dp", "2", "--tp", "2"], 1),
               ("dp=2 x pp=2, 4 micro-batches", ["--devices", "4:cpu", "--dp", "2", "--pp", "2"], 4)]
    failed = []
    for name, flags, k in configs:
        plan, got = of_losses(bins, work, onnx_path, corpus, name.replace(" ", "").replace(",", "_"), flags, k)
        w = worst(got, single[k]) if len(got) == STEPS else float("inf")
        print(f"parallel: {name}: worst relative loss difference to one device {w:.2e}")
        if w > 1e-4:
            failed.append(name)
        if name == "tp=2":
            layouts, boxings = sbp(bins, work, plan)
            want = {"blocks.0.q.W": "S(1)", "blocks.0.k.W": "S(1)", "blocks.0.v.W": "S(1)", "blocks.0.proj.W": "S(0)",
                    "blocks.0.fc1.W": "S(1)", "blocks.0.fc2.W": "S(0)"}
            for t, s in want.items():
                print(f"  {t}: {layouts.get(t)} (want {s})")
                if layouts.get(t) != s:
                    failed.append(f"tp sbp of {t}")
            # One reduction per column/row layer pair (attention, MLP) in each block, of the row
            # layer's partial sums. The costs pick a reduce-scatter over the sequence there (the
            # residual adds and LayerNorms then run on half the rows each) and an all-gather before
            # the next column layer: Megatron's sequence parallelism, the bytes of one all-reduce.
            reductions = [b for b in boxings if not b["backward"] and b["kind"] in ("all-reduce", "reduce-scatter")]
            print(f"  forward reductions: {len(reductions)} for {LAYERS} blocks: " +
                  ", ".join(f"{b['kind']} of {b['tensor']}" for b in reductions))
            want_reduced = {f"/blocks.{i}/{m}/MatMul_output_0" for i in range(LAYERS) for m in ("proj", "fc2")}
            if len(reductions) != 2 * LAYERS or {b["tensor"] for b in reductions} != want_reduced:
                failed.append("tp forward reductions")
            others = [b for b in boxings if not b["backward"] and b not in reductions and b["tensor"] not in ("input", "label", "loss")]
            print("  other forward boxings: " + ", ".join(f"{b['kind']} of {b['tensor']}" for b in others))
            gathers = [b for b in others if b["kind"] == "all-gather"]
            moved = [b for b in others if b["kind"] not in ("all-gather", "slice") and b["tensor"] != "logits"]
            if len(gathers) != 2 * LAYERS + 1 or moved:  # before each column layer (q/k/v, fc1, head)
                failed.append("tp forward boxings")
    if failed:
        sys.exit("gpt_parallel: failed: " + ", ".join(failed))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("check", choices=["torch", "parallel", "all"])
    a = p.parse_args()
    torch.set_num_threads(2)
    model, onnx_path, corpus, tokens = setup(a.work)
    if a.check in ("torch", "all"):
        check_torch(a.bin, a.work, model, onnx_path, corpus, tokens)
    if a.check in ("parallel", "all"):
        check_parallel(a.bin, a.work, onnx_path, corpus)


if __name__ == "__main__":
    main()
