// SPDX-License-Identifier: Apache-2.0
// The hostile-input table: every bad file a user (or an attacker) can hand the tools, with the
// exact line the tool must print. Each row must fail cleanly: exit status 1, that one line on
// stderr, no crash, and nothing written. Plans are corrupted structurally (bytes) and
// semantically (decode, change a field, re-encode with a valid checksum, so that the verifier
// behind the checksum is what answers).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "common/file_util.h"
#include "common/safetensors.h"
#include "e2e/e2e_util.h"
#include "schemas/plan_codec.h"

using namespace of::e2e;

namespace {

struct Row {
  const char* name;
  // Prepares the bad input in `dir` (which holds a compiled mlp.ofp/mlp.safetensors) and returns
  // the command to run.
  std::function<std::string(const TempDir& dir)> prepare;
  // The exact stderr line (the whole line); {d} is the row's directory, {f} the fixtures
  // directory; the other {names} are computed in the test case below.
  std::string expected;
};

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string ofrun(const TempDir& d, const std::string& plan, const std::string& input = fixture("mlp_input.npy")) {
  return bin("ofrun") + " " + (d / plan) + " --input input=" + input + " --output logits=" + (d / "out.npy");
}

std::string ofc(const TempDir& d, const std::string& model) { return bin("ofc") + " " + fixture(model) + " -o " + (d / "bad.ofp"); }

// A plan-byte mutation, then ofrun on the result.
std::function<std::string(const TempDir&)> bytes_row(std::function<void(std::string&)> mutate) {
  return [mutate](const TempDir& d) {
    std::string bytes = slurp(d / "mlp.ofp");
    mutate(bytes);
    write_bytes(d / "bad.ofp", bytes);
    return ofrun(d, "bad.ofp");
  };
}

// A semantic mutation behind a valid checksum, then ofrun on the result.
std::function<std::string(const TempDir&)> plan_row(std::function<void(of::plan::Plan&)> mutate) {
  return [mutate](const TempDir& d) {
    std::string bytes = slurp(d / "mlp.ofp");
    of::plan::Plan p = of::plan::decode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mlp.ofp");
    mutate(p);
    std::vector<uint8_t> out = of::plan::encode(p);
    of::write_file_atomic(d / "bad.ofp", out);
    std::filesystem::copy_file(d / "mlp.safetensors", d / "bad.safetensors");
    return ofrun(d, "bad.ofp");
  };
}

// An input .npy with a hand-written header, then ofrun on it.
std::function<std::string(const TempDir&)> npy_row(const std::string& header, size_t data_bytes, std::string magic = "\x93NUMPY") {
  return [=](const TempDir& d) {
    std::string file = magic + std::string("\x01\x00", 2);
    file += char(header.size() & 0xff);
    file += char(header.size() >> 8);
    write_bytes(d / "x.npy", file + header + std::string(data_bytes, '\0'));
    return ofrun(d, "mlp.ofp", d / "x.npy");
  };
}

std::function<std::string(const TempDir&)> weights_row(std::function<void(std::string&)> mutate) {
  return [mutate](const TempDir& d) {
    std::string bytes = slurp(d / "mlp.safetensors");
    mutate(bytes);
    if (bytes.empty()) std::filesystem::remove(d / "mlp.safetensors");
    else write_bytes(d / "mlp.safetensors", bytes);
    return ofrun(d, "mlp.ofp");
  };
}

// A training run started from `--init FILE`, FILE made from the row directory's mlp.safetensors
// (the model's weights under their state_dict names) by `make`.
std::function<std::string(const TempDir&)> init_row(std::function<std::string(const std::string&)> make) {
  return [make](const TempDir& d) {
    run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "g.ofp") + " --train --loss cross_entropy", d);
    write_bytes(d / "init.safetensors", make(slurp(d / "mlp.safetensors")));
    return bin("ofrun") + " " + (d / "g.ofp") + " --data npy:" + fixture("mlp_input.npy") + "," + fixture("mlp_labels.npy") +
           " --steps 1 --init " + (d / "init.safetensors");
  };
}

// A safetensors file of `header` (JSON) and `data` zero bytes.
std::string safetensors_bytes(const std::string& header, size_t data) {
  std::string out(8, '\0');
  for (size_t i = 0; i < 8; ++i) out[i] = char((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(data, '\0');
}

const std::vector<Row>& rows() {
  using of::plan::Plan;
  static const std::vector<Row> table = {
      // Models (ofc).
      {"model: missing file", [](const TempDir& d) { return ofc(d, "nope.onnx"); },
       "ofc: error: {f}/nope.onnx: cannot open: No such file or directory"},
      {"model: not ONNX", [](const TempDir& d) { return ofc(d, "not_onnx.onnx"); },
       "ofc: error: {f}/not_onnx.onnx: not an ONNX model (it does not parse as an ONNX ModelProto)"},
      {"model: NaN in a weight", [](const TempDir& d) { return ofc(d, "hostile/nan_weight.onnx"); },
       "ofc: error: {f}/hostile/nan_weight.onnx: initializer 'w': holds nan at flat index 5"},
      {"model: dynamic dimension", [](const TempDir& d) { return ofc(d, "hostile/dynamic_dim.onnx"); },
       "ofc: error: {f}/hostile/dynamic_dim.onnx: input 'x': dimension 'batch' is dynamic; export with fixed sizes (no dynamic_axes)"},
      {"model: opset too old", [](const TempDir& d) { return ofc(d, "hostile/old_opset.onnx"); },
       "ofc: error: {f}/hostile/old_opset.onnx: opset 11 is not supported; export with opset_version >= 13"},
      {"model: initializer shorter than its shape", [](const TempDir& d) { return ofc(d, "hostile/raw_data_short.onnx"); },
       "ofc: error: {f}/hostile/raw_data_short.onnx: initializer 'w': tensor 'w' has 40 bytes of data, shape [4,3] needs 48"},
      {"model: negative dimension", [](const TempDir& d) { return ofc(d, "hostile/negative_dim.onnx"); },
       "ofc: error: {f}/hostile/negative_dim.onnx: initializer 'w': tensor 'w' has a negative dimension -3"},
      {"model: input never produced", [](const TempDir& d) { return ofc(d, "hostile/undefined_input.onnx"); },
       "ofc: error: {f}/hostile/undefined_input.onnx: node 'add' (Add): input 'ghost' is not produced before this node (nodes must be topologically sorted)"},
      {"model: shapes that do not fit", [](const TempDir& d) { return ofc(d, "hostile/gemm_mismatch.onnx"); },
       "ofc: error: {f}/hostile/gemm_mismatch.onnx: node 'fc' (Gemm): input 1 (B) has shape [7,3], expected [4,*] to match K = 4 of input 0 (A) [2,4] (transA=0, transB=0)"},
      {"model: Reshape to a shape known only at run time", [](const TempDir& d) { return ofc(d, "hostile/reshape_runtime_shape.onnx"); },
       "ofc: error: {f}/hostile/reshape_runtime_shape.onnx: node 'reshape' (Reshape): input 1 must be a constant (an initializer or a Constant node)"},
      {"model: --label naming the model's output", [](const TempDir& d) { return ofc(d, "mlp.onnx") + " --loss mse --label logits"; },
       "ofc: error: {f}/mlp.onnx: --label 'logits' is already the name of its output in the model; choose another name"},
      {"model: --label naming a weight", [](const TempDir& d) { return ofc(d, "mlp.onnx") + " --loss cross_entropy --label fc1.weight"; },
       "ofc: error: {f}/mlp.onnx: --label 'fc1.weight' is already the name of a weight in the model; choose another name"},
      {"model: --loss output on a model returning logits", [](const TempDir& d) { return ofc(d, "mlp.onnx") + " --train --loss output"; },
       "ofc: error: {f}/mlp.onnx: --loss output: the output 'logits' is f32 [64,10], not a loss (a float scalar)"},
      {"model: --loss output naming an output it does not have", [](const TempDir& d) { return ofc(d, "mlp.onnx") + " --train --loss output:name=loss"; },
       "ofc: error: {f}/mlp.onnx: --loss output: the model has no output 'loss' (its outputs: logits)"},
      {"model: a value defined twice", [](const TempDir& d) { return ofc(d, "hostile/duplicate_output.onnx"); },
       "ofc: error: {f}/hostile/duplicate_output.onnx: node 'b' (Relu): output 't' is defined twice"},
      {"model: 4-D convolution", [](const TempDir& d) { return ofc(d, "hostile/conv_4d.onnx"); },
       "ofc: error: {f}/hostile/conv_4d.onnx: node 'conv' (Conv): only 1-D, 2-D and 3-D convolution is supported: input 0 has shape [1,1,3,3,3,3], expected rank 3 [N,C,L], 4 [N,C,H,W] or 5 [N,C,D,H,W]"},
      {"model: Pad past any tensor", [](const TempDir& d) { return ofc(d, "hostile/pad_huge.onnx"); },
       "ofc: error: {f}/hostile/pad_huge.onnx: node 'pad' (Pad): pads [0,0,0,0,0,0,4611686018427387904,4611686018427387904] has an entry above 2^31"},
      {"model: Resize past any tensor", [](const TempDir& d) { return ofc(d, "hostile/resize_huge.onnx"); },
       "ofc: error: {f}/hostile/resize_huge.onnx: node 'up' (Resize): axis 2 would resize from 4 to 4000000000 positions"},
      {"model: opset newer than the importer knows", [](const TempDir& d) { return ofc(d, "hostile/new_opset.onnx"); },
       "ofc: error: {f}/hostile/new_opset.onnx: opset 99 is newer than this ofc knows (13..18); export with opset_version <= 18"},
      {"model: a batch of 0", [](const TempDir& d) { return ofc(d, "hostile/batch_zero.onnx"); },
       "ofc: error: {f}/hostile/batch_zero.onnx: input 'x': has shape [0,4]: a batch of 0 samples (dimension 0) can never run"},
      {"model: an arena beyond the address space", [](const TempDir& d) { return ofc(d, "hostile/huge_arena.onnx"); },
       "ofc: error: {f}/hostile/huge_arena.onnx: device cpu:0 needs 16.0 PiB (18014398509481984 bytes, its arena's peak), more than the "
       "128.0 TiB a process can address; the largest register, 2 x 4.0 PiB from task 'source'"},
      {"model: Gemm transB = 7", [](const TempDir& d) { return ofc(d, "hostile/gemm_transb_7.onnx"); },
       "ofc: error: {f}/hostile/gemm_transb_7.onnx: node 'fc' (Gemm): attribute transB = 7 must be 0 or 1"},
      {"model: Gemm alpha = NaN", [](const TempDir& d) { return ofc(d, "hostile/gemm_alpha_nan.onnx"); },
       "ofc: error: {f}/hostile/gemm_alpha_nan.onnx: node 'fc' (Gemm): attribute alpha = nan must be a finite number"},
      {"model: Softmax axis out of range", [](const TempDir& d) { return ofc(d, "hostile/softmax_axis_5.onnx"); },
       "ofc: error: {f}/hostile/softmax_axis_5.onnx: node 'softmax' (Softmax): attribute axis 5 is out of range for rank 2"},
      {"model: Conv stride 0", [](const TempDir& d) { return ofc(d, "hostile/conv_stride_0.onnx"); },
       "ofc: error: {f}/hostile/conv_stride_0.onnx: node 'conv' (Conv): attribute strides = [1,0] must hold values >= 1"},
      {"model: MaxPool ceil_mode = 2", [](const TempDir& d) { return ofc(d, "hostile/maxpool_ceil_2.onnx"); },
       "ofc: error: {f}/hostile/maxpool_ceil_2.onnx: node 'pool' (MaxPool): attribute ceil_mode = 2 must be 0 or 1"},
      {"model: an integer attribute given as a float", [](const TempDir& d) { return ofc(d, "hostile/reshape_allowzero_float.onnx"); },
       "ofc: error: {f}/hostile/reshape_allowzero_float.onnx: node 'reshape' (Reshape): attribute allowzero must be one integer"},
      {"options: more pipeline stages than forward ops", [](const TempDir& d) { return ofc(d, "mlp.onnx") + " --devices 8:cpu --pp 8"; },
       "ofc: error: --pp: 8 pipeline stages, but the model has 5 forward ops; each stage needs at least one"},
      {"options: a million micro-batches", [](const TempDir& d) {
         return ofc(d, "mlp.onnx") + " --train --loss cross_entropy --micro-batches 1000000";
       },
       "ofc: error: --micro-batches: 1000000 is outside [1, 65536] (each is a whole batch of the model; a step sums them)"},

      {"model: a directory", [](const TempDir& d) { return bin("ofc") + " " + d.path() + " -o " + (d / "bad.ofp"); },
       "ofc: error: {d}: is a directory, not a file"},
      {"model: a device that never ends", [](const TempDir& d) { return bin("ofc") + " /dev/zero -o " + (d / "bad.ofp"); },
       "ofc: error: /dev/zero: not a regular file"},

      // Plans: bytes.
      {"plan: missing file", [](const TempDir& d) { return ofrun(d, "none.ofp"); },
       "ofrun: error: {d}/none.ofp: cannot open: No such file or directory"},
      {"plan: a device that never ends", [](const TempDir& d) {
         return bin("ofrun") + " /dev/zero --input input=" + fixture("mlp_input.npy") + " --output logits=" + (d / "out.npy");
       },
       "ofrun: error: /dev/zero: not a regular file"},
      {"plan: truncated to half", bytes_row([](std::string& b) { b.resize(b.size() / 2); }),
       "ofrun: error: {d}/bad.ofp: truncated or padded: header says {size} bytes of plan, file holds {half}"},
      {"plan: shorter than its header", bytes_row([](std::string& b) { b.resize(10); }),
       "ofrun: error: {d}/bad.ofp: not an of plan (bad magic)"},
      {"plan: wrong magic", bytes_row([](std::string& b) { b[0] = 'X'; }),
       "ofrun: error: {d}/bad.ofp: not an of plan (bad magic)"},
      {"plan: unknown version", bytes_row([](std::string& b) { b[20] = 9; }),
       "ofrun: error: {d}/bad.ofp: plan version 9 is not supported (this ofrun reads version 7): compile the model again with this ofc"},
      {"plan: size field claims a terabyte", bytes_row([](std::string& b) { b[13] = 1; }),
       "ofrun: error: {d}/bad.ofp: truncated or padded: header says {size+2^40} bytes of plan, file holds {size}"},
      {"plan: a flipped byte in the middle", bytes_row([](std::string& b) { b[b.size() / 2] ^= 0x5a; }),
       "ofrun: error: {d}/bad.ofp: checksum mismatch: the plan is corrupt"},
      {"plan: valid checksum over garbage", bytes_row([](std::string& b) {
         for (size_t i = 24; i < b.size(); ++i) b[i] = char(i * 7);
         uint32_t crc = of::crc32_of(b.data() + 24, b.size() - 24);
         std::memcpy(b.data() + 16, &crc, 4);
       }),
       "ofrun: error: {d}/bad.ofp: FlatBuffers verification failed: the plan is corrupt"},

      // Plans: fields, behind a valid checksum.
      {"plan: register id out of range", plan_row([](Plan& p) { p.tasks[1].inputs[0].id = 99; }),
       "ofrun: error: {d}/bad.ofp: tasks[1].inputs[0]: register 99 is not among the task's in_regsts"},
      {"plan: variable id out of range", plan_row([](Plan& p) { p.tasks[1].inputs[1].id = 99; }),
       "ofrun: error: {d}/bad.ofp: tasks[1].inputs[1]: variable 99 out of range (6 variables)"},
      {"plan: slot outside its arena", plan_row([](Plan& p) { p.regsts[1].offsets[1] = p.arenas[0].bytes; }),
       "ofrun: error: {d}/bad.ofp: regsts[1].offsets[1]: slot [{arena}, +262144) lies outside arena 0 ({arena} bytes)"},
      {"plan: arena larger than the machine", plan_row([](Plan& p) { p.arenas[0].bytes = uint64_t(1) << 60; }),
       "ofrun: error: {d}/bad.ofp: arenas[0].bytes: 1152921504606846976 bytes exceed this machine's memory ({memory})"},
      {"plan: negative dimension", plan_row([](Plan& p) { p.tensors[0].desc.shape[0] = -64; }),
       "ofrun: error: {d}/bad.ofp: tensors[0].shape: negative dimension -64"},
      {"plan: shape product overflows", plan_row([](Plan& p) { p.regsts[0].blobs[0].desc.shape = {int64_t(1) << 40, int64_t(1) << 40}; }),
       "ofrun: error: {d}/bad.ofp: regsts[0].blobs[0].shape: shape [1099511627776,1099511627776] overflows"},
      {"plan: duplicate task ids", plan_row([](Plan& p) { p.tasks[2].id = 1; }),
       "ofrun: error: {d}/bad.ofp: tasks[2].id: is 1, expected 2"},
      {"plan: a cycle", plan_row([](Plan& p) {
         // task 1 reads the register task 2 writes
         p.tasks[1].inputs[0] = {of::plan::InputKind::regst, 2, 0};
         p.tasks[1].in_regsts = {2};
         p.regsts[0].consumers.clear();
         p.regsts[2].consumers.push_back(1);
       }),
       "ofrun: error: {d}/bad.ofp: tasks[1].in_regsts[0]: register 2 is produced by task 2, not an earlier task (cycle)"},
      {"plan: unknown kernel", plan_row([](Plan& p) { p.tasks[1].kernel = "warp_drive"; }),
       "ofrun: error: {d}/bad.ofp: tasks[1].kernel: no kernel 'warp_drive' for cpu:f32"},
      {"plan: zero slots", plan_row([](Plan& p) { p.regsts[1].slots = 0; }),
       "ofrun: error: {d}/bad.ofp: regsts[1].slots: 0 is outside [1, 1024]"},
      {"plan: a million slots", plan_row([](Plan& p) { p.regsts[1].slots = 1 << 20; }),
       "ofrun: error: {d}/bad.ofp: regsts[1].slots: 1048576 is outside [1, 1024]"},
      {"plan: blob size that disagrees with its shape", plan_row([](Plan& p) { p.regsts[1].blobs[0].bytes = 12; }),
       "ofrun: error: {d}/bad.ofp: regsts[1].blobs[0].bytes: 12 does not match shape [64,1024]"},
      {"plan: variable outside its arena", plan_row([](Plan& p) { p.variables[0].offset = p.arenas[0].bytes - 64; }),
       "ofrun: error: {d}/bad.ofp: variables[0].offset: lies outside arena 0"},
      {"plan: no sink task", plan_row([](Plan& p) {
         p.tasks.back().kind = of::plan::TaskKind::compute;
         p.tasks.back().kernel = "copy";
       }),
       "ofrun: error: {d}/bad.ofp: tasks[4].out_regsts: a compute task writes one register of data"},
      {"plan: compute task that reads no register", plan_row([](Plan& p) {
         p.tasks[1].inputs = {of::plan::TaskInput{of::plan::InputKind::variable, 0, 0}};
         p.tasks[1].in_regsts.clear();
         p.regsts[0].consumers.clear();
       }),
       "ofrun: error: {d}/bad.ofp: tasks[1].in_regsts: a compute task reads at least one streamed register (its pieces)"},
      {"plan: a register its producer does not write", plan_row([](Plan& p) { p.regsts[2].producer = 1; }),
       "ofrun: error: {d}/bad.ofp: regsts[2].producer: task 1 does not list this register among its outputs"},
      {"plan: a consumer listed twice", plan_row([](Plan& p) { p.regsts[1].consumers.push_back(2); }),
       "ofrun: error: {d}/bad.ofp: regsts[1].consumers: lists a task twice"},
      {"plan: a sink that collects a variable", plan_row([](Plan& p) { p.tasks.back().inputs[0] = {of::plan::InputKind::variable, 0, 0}; }),
       "ofrun: error: {d}/bad.ofp: tasks[4].inputs[0]: a sink collects registers, not variables"},
      {"plan: unknown job kind", plan_row([](Plan& p) { p.job.kind = of::plan::JobKind(7); }),
       "ofrun: error: {d}/bad.ofp: job.kind: unknown job kind 7"},
      {"plan: consumer that does not read", plan_row([](Plan& p) { p.regsts[1].consumers.push_back(3); }),
       "ofrun: error: {d}/bad.ofp: regsts[1].consumers[1]: task 3 does not read this register"},

      // Weights.
      {"weights: missing", weights_row([](std::string& b) { b.clear(); }),
       "ofrun: error: {d}/mlp.safetensors: cannot open: No such file or directory"},
      {"weights: truncated", weights_row([](std::string& b) { b.resize(b.size() - 100); }),
       "ofrun: error: {d}/mlp.safetensors: weights file has {wshort} bytes, the plan expects {wsize} (was it replaced or truncated?)"},
      {"weights: a flipped byte", weights_row([](std::string& b) { b[b.size() - 5] ^= 1; }),
       "ofrun: error: {d}/mlp.safetensors: weights checksum mismatch: the file is corrupt or belongs to another plan"},

      // --init weights.
      {"init: NaN in a weight", init_row([](const std::string& weights) {
         of::SafetensorsFile f = of::parse_safetensors(reinterpret_cast<const uint8_t*>(weights.data()), weights.size(), "w");
         std::string out = weights;
         const size_t data_start = weights.size() - f.bytes.size();
         const float nan = std::numeric_limits<float>::quiet_NaN();
         std::memcpy(out.data() + data_start + f.entries.at("fc2.weight").offset + 4 * 7, &nan, 4);
         return out;
       }),
       "ofrun: error: {d}/init.safetensors: tensor 'fc2.weight': holds nan at flat index 7"},
      {"init: infinity in a bias", init_row([](const std::string& weights) {
         of::SafetensorsFile f = of::parse_safetensors(reinterpret_cast<const uint8_t*>(weights.data()), weights.size(), "w");
         std::string out = weights;
         const float inf = -std::numeric_limits<float>::infinity();
         std::memcpy(out.data() + (weights.size() - f.bytes.size()) + f.entries.at("fc3.bias").offset, &inf, 4);
         return out;
       }),
       "ofrun: error: {d}/init.safetensors: tensor 'fc3.bias': holds -inf at flat index 0"},
      {"init: a key given twice", init_row([](const std::string&) {
         return safetensors_bytes(R"({"fc3.bias":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                  R"("fc3.bias":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8);
       }),
       "ofrun: error: {d}/init.safetensors: tensor 'fc3.bias': appears twice in the header"},
      {"init: overlapping offsets", init_row([](const std::string&) {
         return safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12);
       }),
       "ofrun: error: {d}/init.safetensors: tensor 'b': data_offsets [4,12] overlap tensor 'a', which ends at 8"},
      {"init: a gap between tensors", init_row([](const std::string&) {
         return safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12);
       }),
       "ofrun: error: {d}/init.safetensors: tensor 'b': data_offsets [8,12] leave bytes [4,8) of the data section unused (after tensor 'a')"},

      // Input arrays.
      {"input: a label outside the classes", [](const TempDir& d) {
         std::vector<int64_t> labels(64, 3);
         labels[5] = 10;
         of::write_npy(d / "labels.npy", of::DType::i64, {64}, labels.data());
         run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "g.ofp") + " --loss cross_entropy", d);
         return bin("ofrun") + " " + (d / "g.ofp") + " --input input=" + fixture("mlp_input.npy") + " --input label=" + (d / "labels.npy") +
                " --output loss=" + (d / "out.npy");
       },
       "ofrun: error: {d}/labels.npy: label 10 at index 5 is outside [0,10) (the loss 'loss' has 10 classes)"},
      {"input: wrong shape", npy_row("{'descr': '<f4', 'fortran_order': False, 'shape': (64, 783), }", 64 * 783 * 4),
       "ofrun: error: {d}/x.npy: array is f32 [64,783], input 'input' needs f32 [64,784] (or k times as many rows)"},
      {"input: wrong dtype", npy_row("{'descr': '<i8', 'fortran_order': False, 'shape': (64, 784), }", 64 * 784 * 8),
       "ofrun: error: {d}/x.npy: array is i64 [64,784], input 'input' needs f32 [64,784] (or k times as many rows)"},
      {"input: header claims a huge shape", npy_row("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000, 1000000000000), }", 16),
       "ofrun: error: {d}/x.npy: npy shape [1000000000000,1000000000000] needs more bytes than the file holds (16)"},
      {"input: negative dimension", npy_row("{'descr': '<f4', 'fortran_order': False, 'shape': (-64, 784), }", 16),
       "ofrun: error: {d}/x.npy: npy shape '(-64, 784)' has a bad dimension"},
      {"input: data shorter than its header says", npy_row("{'descr': '<f4', 'fortran_order': False, 'shape': (64, 784), }", 1000),
       "ofrun: error: {d}/x.npy: npy shape [64,784] needs more bytes than the file holds (1000)"},
      {"input: float64 beyond float32's range", [](const TempDir& d) {
         const std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (64, 784), }";
         std::string file = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header;
         std::vector<double> x(64 * 784, 0.5);
         x[3] = 1e300;
         file.append(reinterpret_cast<const char*>(x.data()), x.size() * 8);
         write_bytes(d / "x.npy", file);
         return ofrun(d, "mlp.ofp", d / "x.npy");
       },
       "ofrun: error: {d}/x.npy: float64 value 1e+300 at flat index 3 does not fit in float32"},
      {"input: a directory", [](const TempDir& d) { return ofrun(d, "mlp.ofp", d.path()); },
       "ofrun: error: {d}: is a directory, not a file"},
      {"input: bad magic", npy_row("{'descr': '<f4', 'fortran_order': False, 'shape': (64, 784), }", 16, "\x93NUMPX"),
       "ofrun: error: {d}/x.npy: not a .npy file (bad magic)"},
      {"input: Fortran order", npy_row("{'descr': '<f4', 'fortran_order': True, 'shape': (64, 784), }", 64 * 784 * 4),
       "ofrun: error: {d}/x.npy: Fortran-order .npy arrays are not supported (save with C order)"},
  };
  return table;
}

// This machine's memory as runtime/plan/load.cpp's physical_memory() computes it (written again
// here: e2e_tests link no runtime library).
uint64_t machine_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : std::numeric_limits<uint64_t>::max();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t i = s.find(from); i != std::string::npos; i = s.find(from, i + to.size())) s.replace(i, from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("hostile inputs: each fails with its exact line, exit 1, and writes nothing", "[e2e]") {
  REQUIRE(rows().size() >= 30);
  for (const Row& row : rows()) {
    TempDir d;
    REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "mlp.ofp"), d).exit_code == 0);
    const uint64_t plan_size = std::filesystem::file_size(d / "mlp.ofp");
    const uint64_t weights_size = std::filesystem::file_size(d / "mlp.safetensors");
    std::string bytes = slurp(d / "mlp.ofp");
    of::plan::Plan plan = of::plan::decode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mlp.ofp");

    std::string cmd = row.prepare(d);
    CmdResult r = run_cmd(cmd, d);
    std::string want = row.expected;
    want = replace_all(want, "{d}", d.path());
    want = replace_all(want, "{f}", OF_FIXTURES_DIR);
    want = replace_all(want, "{size}", std::to_string(plan_size - 24));
    want = replace_all(want, "{half}", std::to_string(plan_size / 2 - 24));
    want = replace_all(want, "{arena}", std::to_string(plan.arenas[0].bytes));
    want = replace_all(want, "{wsize}", std::to_string(weights_size));
    want = replace_all(want, "{wshort}", std::to_string(weights_size - 100));
    want = replace_all(want, "{size+2^40}", std::to_string((uint64_t(1) << 40) + plan_size - 24));  // b[13] = 1
    want = replace_all(want, "{memory}", std::to_string(machine_memory()));
    INFO("row: " << row.name << "\ncommand: " << cmd << "\ngot:  " << r.err << "want: " << want);
    REQUIRE(want.find('{') == std::string::npos);  // every placeholder has a value
    CHECK(r.exit_code == 1);
    CHECK(r.err == want + "\n");
    // Nothing written: ofc leaves no plan, weights, eval plan or temporary file; ofrun no output.
    // (Rows that run ofrun prepare bad.ofp/bad.safetensors themselves.)
    if (cmd.rfind(bin("ofc") + " ", 0) == 0) {
      CHECK_FALSE(std::filesystem::exists(d / "bad.ofp"));
      CHECK_FALSE(std::filesystem::exists(d / "bad.safetensors"));
      CHECK_FALSE(std::filesystem::exists(d / "bad.eval.ofp"));
    }
    CHECK_FALSE(std::filesystem::exists(d / "out.npy"));
    for (const auto& e : std::filesystem::directory_iterator(d.path())) {
      INFO("left behind: " << e.path());
      CHECK(e.path().filename().string().find(".tmp") == std::string::npos);  // write_file_atomic's NAME.tmp.PID
    }
  }
}
