# SPDX-License-Identifier: Apache-2.0
# The generated model of bench_compile.py: a residual MLP of torch.nn modules (a stem nn.Linear,
# blocks of x + ReLU(nn.Linear(x)), a classifier head). Its size is set by --blocks: a block is 3
# forward ops, and its training plan on one device about 10 tasks (forward, backward, updates), so
# --blocks 7700 is the ~77k-task graph the scale issue names.
#
# torch.onnx.export takes minutes for a thousand blocks here (1000: 110 s), so the graph is written
# directly as the exporter writes it for this module (opset 14, training mode, no constant folding:
# the same node names, ops, attributes and state_dict names), with the module's own initial
# weights. --check exports a small one with torch.onnx.export and fails unless the two are equal
# node for node and tensor for tensor.
#   /usr/bin/python3 benchmarks/make_residual_mlp.py --blocks 7700 --out /tmp/res7700.onnx [--width 16]
#   /usr/bin/python3 benchmarks/make_residual_mlp.py --check
import argparse
import os
import sys
import tempfile

import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = nn.ReLU()

    def forward(self, x):
        return x + self.act(self.fc(x))


class ResidualMlp(nn.Module):
    def __init__(self, blocks, width, inputs=784, classes=10):
        super().__init__()
        self.stem = nn.Linear(inputs, width)
        self.blocks = nn.Sequential(*[Block(width) for _ in range(blocks)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


def gemm(name, x, prefix, out):
    return helper.make_node("Gemm", [x, prefix + ".weight", prefix + ".bias"], [out], name=name, alpha=1.0, beta=1.0, transB=1)


def write(model, batch, path):
    """The ONNX model torch.onnx.export writes for `model` (see the file comment)."""
    nodes = [gemm("/stem/Gemm", "input", "stem", "/stem/Gemm_output_0")]
    x = "/stem/Gemm_output_0"
    for i in range(len(model.blocks)):
        b = f"/blocks/blocks.{i}"
        nodes.append(gemm(f"{b}/fc/Gemm", x, f"blocks.{i}.fc", f"{b}/fc/Gemm_output_0"))
        nodes.append(helper.make_node("Relu", [f"{b}/fc/Gemm_output_0"], [f"{b}/act/Relu_output_0"], name=f"{b}/act/Relu"))
        nodes.append(helper.make_node("Add", [x, f"{b}/act/Relu_output_0"], [f"{b}/Add_output_0"], name=f"{b}/Add"))
        x = f"{b}/Add_output_0"
    nodes.append(gemm("/head/Gemm", x, "head", "logits"))
    inits = [numpy_helper.from_array(t.detach().numpy(), name) for name, t in model.state_dict().items()]
    classes = model.head.out_features
    graph = helper.make_graph(nodes, "torch_jit", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 784])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="pytorch", ir_version=7)
    onnx.save(m, path)


def check():
    torch.manual_seed(0)
    model = ResidualMlp(3, 8)
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = os.path.join(tmp, "ours.onnx"), os.path.join(tmp, "torch.onnx")
        write(model, 4, ours)
        torch.onnx.export(model, torch.zeros(4, 784), theirs, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=14, input_names=["input"], output_names=["logits"])
        a, b = onnx.load(ours).graph, onnx.load(theirs).graph
    same = lambda n: (n.op_type, n.name, list(n.input), list(n.output), sorted(  # noqa: E731
        (x.name, helper.get_attribute_value(x)) for x in n.attribute))
    if [same(n) for n in a.node] != [same(n) for n in b.node]:
        sys.exit("make_residual_mlp: the written graph's nodes differ from torch.onnx.export's")
    ta = {t.name: numpy_helper.to_array(t) for t in a.initializer}
    tb = {t.name: numpy_helper.to_array(t) for t in b.initializer}
    if ta.keys() != tb.keys() or any((ta[k] != tb[k]).any() for k in ta):
        sys.exit("make_residual_mlp: the written initializers differ from torch.onnx.export's")
    print("make_residual_mlp: the written model equals torch.onnx.export's (3 blocks, width 8)")


def main():
    ap = argparse.ArgumentParser(description="writes the residual MLP of bench_compile.py")
    ap.add_argument("--blocks", type=int)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true", help="compare a small one with torch.onnx.export's")
    a = ap.parse_args()
    if a.check:
        return check()
    if a.blocks is None or a.out is None:
        ap.error("--blocks and --out are needed (or --check)")
    torch.manual_seed(0)
    write(ResidualMlp(a.blocks, a.width), a.batch, a.out)


if __name__ == "__main__":
    main()
