#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that PyTorch reads `of`'s safetensors checkpoints, and writes one for `of` to read.

  torch_load_checkpoint.py --onnx mlp.onnx --weights CKPT/model.safetensors \\
      --input X.npy --logits Y.npy
    reads the safetensors file (or, given CKPT/model.safetensors.index.json, every shard of a
    sharded checkpoint) with the small reader below (not the safetensors package),
    loads it with load_state_dict(strict=True) into the PyTorch model of test/fixtures/
    make_fixtures.py whose parameters match the ONNX file's initializers (MLP, CNN, or the
    tiny 784-32-10 MLP), runs it on X and exits 0 when max|logits - Y| / max|Y| < 1e-4;
    otherwise prints both and exits 1 (2: bad arguments or an unreadable file).

  torch_load_checkpoint.py --onnx mlp.onnx --write-safetensors OUT.safetensors \\
      [--input X.npy --write-logits Z.npy]
    builds that model from the ONNX initializers, multiplies every tensor of its state_dict
    (weights and biases) by 0.5 and writes it as safetensors (F32, header padded with spaces to
    a multiple of 8), for the reverse test: `of` loads OUT, and its logits on X must match Z,
    the halved model's logits written here.

Run with Debian's /usr/bin/python3 (torch, onnx, numpy).
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
sys.path.insert(0, FIXTURES)
from make_fixtures import CNN, MLP  # noqa: E402  (importing only defines things)
from make_training_fixtures import Tiny  # noqa: E402  (likewise)

TOLERANCE = 1e-4
MAX_HEADER = 100 * 1024 * 1024  # the safetensors package's own limit
DTYPES = {"F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
          "BF16": np.dtype("<u2"),  # reinterpreted as torch.bfloat16 below
          "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"),
          "I8": np.dtype("i1"), "U8": np.dtype("u1"), "BOOL": np.dtype("?")}


class FormatError(Exception):
    pass


# ---------------------------------------------------------------- safetensors

def read_safetensors(path):
    """name -> torch.Tensor, and the "__metadata__" dict. Checks what the safetensors package
    checks: a JSON object header, known dtypes, sizes that agree with shapes, and data offsets
    that tile the data section exactly (no holes, no overlaps)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise FormatError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > MAX_HEADER or 8 + n > len(raw):
        raise FormatError(f"{path}: header length {n} does not fit the file ({len(raw)} bytes)")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(f"{path}: header is not UTF-8 JSON: {e}")
    if not isinstance(header, dict):
        raise FormatError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
            isinstance(v, str) for v in metadata.values()):
        raise FormatError(f"{path}: __metadata__ is not an object of strings")
    data = memoryview(raw)[8 + n:]
    tensors, spans = {}, []
    for name, e in header.items():
        if not (isinstance(e, dict) and set(e) == {"dtype", "shape", "data_offsets"}):
            raise FormatError(f"{path}: tensor {name!r}: wants exactly dtype, shape, data_offsets,"
                              f" has {e!r}")
        dtype, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        if dtype not in DTYPES:
            raise FormatError(f"{path}: tensor {name!r}: unknown dtype {dtype!r}")
        if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
            raise FormatError(f"{path}: tensor {name!r}: bad shape {shape!r}")
        if not (isinstance(offs, list) and len(offs) == 2 and
                all(isinstance(o, int) for o in offs) and 0 <= offs[0] <= offs[1] <= len(data)):
            raise FormatError(f"{path}: tensor {name!r}: data_offsets {offs!r} outside the "
                              f"{len(data)}-byte data section")
        np_dtype = DTYPES[dtype]
        want = int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
        if offs[1] - offs[0] != want:
            raise FormatError(f"{path}: tensor {name!r}: {offs[1] - offs[0]} bytes, shape {shape} "
                              f"of {dtype} needs {want}")
        a = np.frombuffer(data[offs[0]:offs[1]], np_dtype).reshape(shape).copy()
        t = torch.from_numpy(a)
        tensors[name] = t.view(torch.bfloat16) if dtype == "BF16" else t
        spans.append((offs[0], offs[1], name))
    end = 0
    for b, e, name in sorted(spans):
        if b != end:
            raise FormatError(f"{path}: tensor {name!r} starts at byte {b} of the data, expected "
                              f"{end} (a hole or an overlap)")
        end = e
    if end != len(data):
        raise FormatError(f"{path}: tensors cover {end} bytes of the {len(data)}-byte data section")
    return tensors, metadata


# torch dtype -> (safetensors dtype, numpy dtype) for what a state_dict holds besides floats.
_EXACT = {torch.int64: ("I64", "<i8"), torch.bool: ("BOOL", "|b1")}


def read_checkpoint(path):
    """A safetensors file, or a sharded set's index (Hugging Face's model.safetensors.index.json:
    {"weight_map": {tensor: shard file}}): name -> torch.Tensor and the metadata. Each tensor must
    be in the shard the index names, whole, and in no other."""
    if not path.endswith(".index.json"):
        return read_safetensors(path)
    with open(path) as f:
        index = json.load(f)
    if not isinstance(index, dict) or not isinstance(index.get("weight_map"), dict):
        raise FormatError(f"{path}: no weight_map object")
    folder, tensors = os.path.dirname(path), {}
    for shard in sorted(set(index["weight_map"].values())):
        if not isinstance(shard, str) or "/" in shard:
            raise FormatError(f"{path}: weight_map names {shard!r}, not a file beside it")
        part, _ = read_safetensors(os.path.join(folder, shard))
        for name, t in part.items():
            if index["weight_map"].get(name) != shard or name in tensors:
                raise FormatError(f"{path}: tensor {name!r} is in {shard}, the index says "
                                  f"{index['weight_map'].get(name)!r}")
            tensors[name] = t
    missing = set(index["weight_map"]) - set(tensors)
    if missing:
        raise FormatError(f"{path}: the index names tensors no shard holds: {sorted(missing)}")
    return tensors, {}


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> tensor, written in this order: as F32 (a float of any width), or I64 and
    BOOL as they are (num_batches_tracked, masks)."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        code, np_dtype = _EXACT.get(t.dtype, ("F32", "<f4"))
        a = np.array(t.detach().cpu().numpy(), dtype=np_dtype, order="C")  # keeps a 0-d shape
        header[name] = {"dtype": code, "shape": list(a.shape),
                        "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


# ---------------------------------------------------------------- the model

def onnx_initializers(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def model_for(onnx_path):
    """The make_fixtures.py model (MLP, CNN) or Tiny whose state_dict names and shapes are the
    ONNX file's initializers, loaded with them."""
    inits = onnx_initializers(onnx_path)
    have = {k: tuple(v.shape) for k, v in inits.items()}
    for cls in (MLP, CNN, Tiny):
        model = cls()
        if {k: tuple(v.shape) for k, v in model.state_dict().items()} == have:
            model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in inits.items()},
                                  strict=True)
            return model.eval()
    raise FormatError(f"{onnx_path}: its initializers {sorted(have)} match none of MLP, CNN, "
                      f"Tiny")


def forward(model, input_path):
    x = np.load(input_path)
    if x.dtype != np.float32:
        raise FormatError(f"{input_path}: {x.dtype}, not float32")
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def check(a):
    model = model_for(a.onnx)
    tensors, metadata = read_checkpoint(a.weights)
    want = model.state_dict()
    missing, extra = sorted(set(want) - set(tensors)), sorted(set(tensors) - set(want))
    if missing or extra:
        print(f"{a.weights}: tensors do not match the model: missing {missing}, "
              f"unexpected {extra}", file=sys.stderr)
        return 1
    for k, t in tensors.items():
        if t.dtype != torch.float32 or tuple(t.shape) != tuple(want[k].shape):
            print(f"{a.weights}: tensor {k} is {t.dtype}{list(t.shape)}, the model wants "
                  f"float32{list(want[k].shape)}", file=sys.stderr)
            return 1
    model.load_state_dict(tensors, strict=True)
    got, ref = forward(model, a.input), np.load(a.logits)
    if got.shape != ref.shape:
        print(f"logits shape {got.shape}, {a.logits} has {ref.shape}", file=sys.stderr)
        return 1
    err = float(np.max(np.abs(got - ref)))
    scale = float(np.max(np.abs(ref)))
    rel = err / scale if scale > 0 else err
    ok = bool(np.isfinite(rel)) and rel < TOLERANCE
    print(f"{a.weights}: {len(tensors)} tensors"
          + (f", metadata {metadata}" if metadata else "")
          + f"; PyTorch logits vs {os.path.basename(a.logits)}: max abs error {err:.3g}, "
            f"max |ref| {scale:.3g}, relative {rel:.3g} ({'<' if ok else '>='} {TOLERANCE:g})")
    if not ok:
        with np.printoptions(precision=6, suppress=True, linewidth=120, threshold=200):
            print(f"PyTorch logits (first rows):\n{got[:4]}\n{a.logits} (first rows):\n{ref[:4]}")
        return 1
    return 0


def write(a):
    model = model_for(a.onnx)
    halved = {k: v * 0.5 for k, v in model.state_dict().items()}
    write_safetensors(a.write_safetensors, halved, {"format": "pt"})
    print(f"wrote {a.write_safetensors}: {len(halved)} tensors of {a.onnx}'s weights x 0.5")
    if a.write_logits:
        model.load_state_dict(halved, strict=True)
        np.save(a.write_logits, forward(model, a.input).astype(np.float32))
        print(f"wrote {a.write_logits}: the halved model's logits on {a.input}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--onnx", required=True, help="the model (its initializers name the weights)")
    p.add_argument("--weights", help="a safetensors checkpoint to check (or a sharded one's .index.json)")
    p.add_argument("--input", help="a float32 .npy input batch")
    p.add_argument("--logits", help="the expected logits (.npy) for --weights on --input")
    p.add_argument("--write-safetensors", metavar="OUT",
                   help="write the ONNX weights x 0.5 as safetensors instead of checking")
    p.add_argument("--write-logits", metavar="OUT.npy",
                   help="with --write-safetensors: the halved model's logits on --input")
    a = p.parse_args()
    if a.write_safetensors:
        if a.weights or a.logits:
            p.error("--write-safetensors does not take --weights or --logits")
        if bool(a.write_logits) != bool(a.input):
            p.error("--write-logits and --input go together")
    elif not (a.weights and a.input and a.logits):
        p.error("needs --weights, --input and --logits (or --write-safetensors)")
    try:
        return write(a) if a.write_safetensors else check(a)
    except (FormatError, OSError, ValueError) as e:
        print(f"torch_load_checkpoint: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
