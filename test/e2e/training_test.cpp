// SPDX-License-Identifier: Apache-2.0
// Training end to end, as a user runs it: ofc --train, then ofrun --data. Losses step by step
// against PyTorch (make_training_fixtures.py), gradient accumulation against one big batch,
// exact resumption, checkpoints that survive SIGKILL and SIGINT, checkpoints of another model
// refused by name, and a real Fashion-MNIST epoch reaching the accuracy the issue asks of CI.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/file_util.h"
#include "common/npy.h"
#include "common/safetensors.h"
#include "e2e/e2e_util.h"

using namespace of::e2e;

namespace {

const std::string kFashion = "idx:/usr/share/datasets/fashion-mnist";

std::vector<double> read_losses(const std::string& metrics) {
  std::vector<double> out;
  std::istringstream lines(slurp(metrics));
  for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line).at("loss").get<double>());
  return out;
}

std::vector<float> read_f32(const std::string& npy) {
  of::NpyArray a = of::read_npy(npy);
  std::vector<float> out(a.data.size() / 4);
  std::memcpy(out.data(), a.data.data(), a.data.size());
  return out;
}

std::string compile(const TempDir& d, const std::string& model, const std::string& flags, const std::string& name = "train.ofp") {
  CmdResult c = run_cmd(bin("ofc") + " " + fixture(model) + " -o " + (d / name) + " --train --loss cross_entropy " + flags, d);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  return d / name;
}

CmdResult train(const TempDir& d, const std::string& plan, const std::string& flags) {
  return run_cmd(bin("ofrun") + " " + plan + " " + flags, d);
}

// Per step |ours - torch| / |torch| over the first `steps` steps.
void check_losses(const std::vector<double>& got, const std::string& fixture_name, size_t steps, double tolerance) {
  std::vector<float> want = read_f32(fixture(fixture_name));
  REQUIRE(got.size() >= steps);
  REQUIRE(want.size() >= steps);
  for (size_t s = 0; s < steps; ++s) {
    INFO("step " << s + 1 << ": ofrun " << got[s] << ", PyTorch " << want[s]);
    CHECK(std::abs(got[s] - want[s]) / std::abs(double(want[s])) <= tolerance);
  }
}

of::SafetensorsFile latest(const std::string& ckpt, const std::string& file = "model.safetensors") {
  std::string name = slurp(ckpt + "/latest");
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return of::read_safetensors(ckpt + "/" + name + "/" + file);
}

// Starts a command in the background (stdout and stderr to files); returns its pid.
}  // namespace

TEST_CASE("training: 20 SGD steps of the MLP and the CNN match PyTorch", "[e2e][train]") {
  TempDir d;
  std::string mlp = compile(d, "mlp.onnx", "--optimizer sgd:lr=0.01,momentum=0.9", "mlp.ofp");
  CmdResult r = train(d, mlp, "--data " + kFashion + " --steps 20 --no-shuffle --metrics " + (d / "mlp.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_losses(read_losses(d / "mlp.jsonl"), "train_mlp_sgd_losses.npy", 20, 1e-4);

  std::string cnn = compile(d, "cnn.onnx", "--optimizer sgd:lr=0.01,momentum=0.9", "cnn.ofp");
  const std::string cnn_data = " --data npy:" + fixture("cnn_input.npy") + "," + fixture("cnn_labels.npy");
  r = train(d, cnn, cnn_data + " --steps 20 --no-shuffle --metrics " + (d / "cnn.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_losses(read_losses(d / "cnn.jsonl"), "train_cnn_sgd_losses.npy", 20, 1e-4);
}

TEST_CASE("training: a next-token model on a token file matches PyTorch for 20 SGD steps", "[e2e][train]") {
  TempDir d;
  std::string lm = compile(d, "lm.onnx", "--optimizer sgd:lr=0.1,momentum=0.9");
  CmdResult r = train(d, lm, "--data tokens:" + fixture("lm_corpus.u16") + ",dtype=uint16 --steps 20 --no-shuffle --metrics " + (d / "lm.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_losses(read_losses(d / "lm.jsonl"), "train_lm_sgd_losses.npy", 20, 1e-4);
  // Tokens beyond the vocabulary are refused when the data is opened, naming the first.
  std::vector<uint16_t> bad(64, 3);
  bad[40] = 48;
  std::ofstream(d / "bad.u16", std::ios::binary).write(reinterpret_cast<const char*>(bad.data()), 128);
  r = train(d, lm, "--data tokens:" + (d / "bad.u16") + " --steps 1");
  CHECK(r.exit_code == 1);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("48") != std::string::npos);
}

TEST_CASE("training: Adam steps of the CNN and the MLP match PyTorch", "[e2e][train]") {
  TempDir d;
  std::string cnn = compile(d, "cnn.onnx", "--optimizer adam:lr=0.001", "cnn.ofp");
  CmdResult r = train(d, cnn, "--data npy:" + fixture("cnn_input.npy") + "," + fixture("cnn_labels.npy") +
                                  " --steps 20 --no-shuffle --metrics " + (d / "cnn.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_losses(read_losses(d / "cnn.jsonl"), "train_cnn_adam_losses.npy", 20, 1e-4);
  // The MLP under Adam amplifies summation-order differences (tiny gradients normalized to
  // lr-sized steps flip ReLUs): with oneDNN's order the first 8 steps agree within 1e-4 and
  // later ones drift to ~2e-3. train_vs_torch.py checks all 20 with PyTorch's own order
  // (--gemm openblas) against a live PyTorch run on the same machine.
  std::string mlp = compile(d, "mlp.onnx", "--optimizer adam:lr=0.001", "mlp.ofp");
  r = train(d, mlp, "--data " + kFashion + " --steps 8 --no-shuffle --metrics " + (d / "mlp.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_losses(read_losses(d / "mlp.jsonl"), "train_mlp_adam_losses.npy", 8, 1e-4);
}

// The gradient of one batch of 64 is one GEMM over 64 rows; of four micro-batches, four GEMMs
// over 16 rows summed: the same sum in another order, whose rounding depends on the CPU's vector
// width (oneDNN blocks AVX2 and AVX-512 differently). SGD's weights move with the gradient and
// stay within 1e-5. Adam's step is about lr times the gradient's sign, so where a gradient is near
// zero the rounding moves its weight by up to lr per step: 1e-3 of the largest weight. SGD checks
// the accumulation's scale; Adam (nearly scale-free) that the micro-batches are the batch's rows.
TEST_CASE("training: 4 micro-batches of 16 give the weights of one batch of 64", "[e2e][train]") {
  for (const auto& [opt, tolerance] : {std::pair{"sgd:lr=0.05,momentum=0.9", 1e-5}, std::pair{"adam:lr=0.001", 1e-3}}) {
    INFO("optimizer " << opt);
    TempDir d;
    std::string big = compile(d, "tiny_b64.onnx", std::string("--optimizer ") + opt, "big.ofp");
    std::string small = compile(d, "tiny_b16.onnx", std::string("--optimizer ") + opt + " --micro-batches 4", "small.ofp");
    for (auto [plan, ckpt] : {std::pair{big, std::string("ck_big")}, std::pair{small, std::string("ck_small")}}) {
      CmdResult r = train(d, plan, "--data " + kFashion + " --steps 5 --no-shuffle --checkpoint " + (d / ckpt));
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
    }
    of::SafetensorsFile a = latest(d / "ck_big"), b = latest(d / "ck_small");
    REQUIRE(a.entries.size() == 4);
    for (const auto& [name, e] : a.entries) {
      INFO("tensor " << name);
      REQUIRE(b.entries.count(name));
      const auto* x = reinterpret_cast<const float*>(a.ptr(e));
      const auto* y = reinterpret_cast<const float*>(b.ptr(b.entries.at(name)));
      double diff = 0, ref = 0;
      for (uint64_t i = 0; i < e.bytes / 4; ++i) {
        diff = std::max(diff, double(std::abs(x[i] - y[i])));
        ref = std::max(ref, double(std::abs(x[i])));
      }
      CHECK(diff / ref < tolerance);
    }
  }
}

// bn_mlp_train: Linear -> BatchNorm1d -> ReLU -> Linear. With --recompute the backward pass makes
// BatchNorm's and ReLU's outputs again instead of keeping them: the same losses and the same
// checkpoint byte for byte (weights, momentum, and running statistics updated once per step).
TEST_CASE("training: --recompute gives the losses and checkpoint of the plan without it, bit for bit", "[e2e][train]") {
  for (const std::string parallel : {"", " --devices 2:cpu --dp 2"}) {
    INFO("flags" << parallel);
    TempDir d;
    const std::string opt = "--optimizer sgd:lr=0.05,momentum=0.9" + parallel;
    const std::string kept = compile(d, "export/bn_mlp_train.onnx", opt, "kept.ofp");
    const std::string again = compile(d, "export/bn_mlp_train.onnx", opt + " --recompute", "again.ofp");
    CHECK(slurp(kept).size() < slurp(again).size());  // the clones and their waits are in the plan
    for (const std::string name : {"kept", "again"}) {
      CmdResult r = train(d, d / (name + ".ofp"), "--data " + kFashion + " --steps 6 --no-shuffle --log-every 1 --metrics " + (d / (name + ".jsonl")) +
                                                      " --checkpoint " + (d / ("ck_" + name)));
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
    }
    const std::vector<double> a = read_losses(d / "kept.jsonl"), b = read_losses(d / "again.jsonl");
    REQUIRE(a.size() == 6);
    CHECK(a == b);
    for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
      INFO(file);
      const std::string name = [&] {
        std::string n = slurp(d / "ck_kept/latest");
        while (!n.empty() && n.back() == '\n') n.pop_back();
        return n;
      }();
      CHECK(slurp(d / ("ck_kept/" + name + "/" + file)) == slurp(d / ("ck_again/" + name + "/" + file)));
    }
  }
}

TEST_CASE("training: resuming from a checkpoint gives exactly the uninterrupted losses", "[e2e][train]") {
  TempDir d;
  // (a warm-up schedule: a cosine one depends on --steps, which differs between the two runs here)
  std::string plan = compile(d, "tiny_b64.onnx", "--optimizer adam:lr=0.003 --schedule warmup:steps=5");
  CmdResult r = train(d, plan, "--data " + kFashion + " --steps 24 --seed 7 --metrics " + (d / "whole.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = train(d, plan, "--data " + kFashion + " --steps 10 --seed 7 --checkpoint " + (d / "ck") + " --metrics " + (d / "part.jsonl"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("checkpoint " + (d / "ck") + "/step-00000010") != std::string::npos);
  r = train(d, plan, "--data " + kFashion + " --steps 24 --checkpoint " + (d / "ck") + " --resume --metrics " + (d / "part.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<double> whole = read_losses(d / "whole.jsonl"), parts = read_losses(d / "part.jsonl");
  REQUIRE(whole.size() == 24);
  REQUIRE(parts.size() == 24);
  for (size_t s = 0; s < whole.size(); ++s) {
    INFO("step " << s + 1);
    CHECK(parts[s] == whole[s]);  // bit for bit: same batches, same lr, same state
  }
  // Nothing left to do is not an error; a different seed is.
  r = train(d, plan, "--data " + kFashion + " --steps 24 --checkpoint " + (d / "ck") + " --resume");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("already at step 24 of 24") != std::string::npos);
  r = train(d, plan, "--data " + kFashion + " --steps 30 --seed 8 --checkpoint " + (d / "ck") + " --resume");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("differs from --seed 8") != std::string::npos);
}

TEST_CASE("training: a per-epoch schedule holds each epoch's rate through micro-batches and a resume", "[e2e][train]") {
  // 320 samples in batches of 64 with 2 micro-batches a step: 5 batches an epoch, the last left
  // out, so 2 optimizer steps an epoch. torchvision's recipe: one warm-up epoch from 0.25 x lr,
  // then StepLR(step_size=2, gamma=0.5), stepped once an epoch.
  TempDir d;
  std::vector<float> features(320 * 784);
  for (size_t i = 0; i < features.size(); ++i) features[i] = float(i % 97) / 97.0f;
  std::vector<int64_t> labels(320);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int64_t(i % 10);
  of::write_npy(d / "x.npy", of::DType::f32, {320, 784}, features.data());
  of::write_npy(d / "y.npy", of::DType::i64, {320}, labels.data());
  const std::string data = " --data npy:" + (d / "x.npy") + "," + (d / "y.npy") + " --seed 3";
  std::string plan = compile(d, "tiny_b64.onnx", "--optimizer sgd:lr=0.1 --micro-batches 2 --schedule step:size=2,gamma=0.5,warmup=1,start=0.25,per=epoch");
  auto rates = [](const std::string& metrics) {
    std::vector<double> out;
    std::istringstream lines(slurp(metrics));
    for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line).at("lr").get<double>());
    return out;
  };
  CmdResult r = train(d, plan, data + " --steps 10 --metrics " + (d / "whole.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<double> want = {0.025, 0.025, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05};
  const std::vector<double> whole = rates(d / "whole.jsonl");
  REQUIRE(whole.size() == want.size());
  for (size_t s = 0; s < want.size(); ++s) {
    INFO("step " << s + 1);
    CHECK(whole[s] == Approx(want[s]).epsilon(1e-6));
  }
  // Stopped mid-epoch and resumed: the same rates, and the same losses bit for bit.
  r = train(d, plan, data + " --steps 3 --checkpoint " + (d / "ck") + " --metrics " + (d / "part.jsonl"));
  REQUIRE(r.exit_code == 0);
  r = train(d, plan, data + " --steps 10 --checkpoint " + (d / "ck") + " --resume --metrics " + (d / "part.jsonl"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(rates(d / "part.jsonl") == whole);
  CHECK(read_losses(d / "part.jsonl") == read_losses(d / "whole.jsonl"));
}

TEST_CASE("training: checkpoints written while training goes on hold the state of their own step", "[e2e][train]") {
  // A periodic save stages the tensors and writes them on a thread of its own while the next steps
  // update them: each checkpoint must still be the one a run that stops at its step writes.
  TempDir d;
  std::string plan = compile(d, "mlp.onnx", "--optimizer sgd:lr=0.01,momentum=0.9");
  CmdResult r = train(d, plan, "--data " + kFashion + " --steps 6 --checkpoint " + (d / "ck") + " --checkpoint-every 2 --keep-checkpoints 3");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("checkpoint " + (d / "ck") + "/step-00000006") != std::string::npos);
  for (int step : {2, 4}) {
    const std::string alone = d / ("ck" + std::to_string(step));
    r = train(d, plan, "--data " + kFashion + " --steps " + std::to_string(step) + " --checkpoint " + alone);
    REQUIRE(r.exit_code == 0);
    const std::string folder = fmt::format("/step-{:08d}/", step);
    for (const char* file : {"model.safetensors", "optimizer.safetensors", "state.json"}) {
      INFO("step " << step << ", " << file);
      const std::string got = slurp((d / "ck") + folder + file);
      CHECK(got.size() > 100);
      CHECK(got == slurp(alone + folder + file));
    }
  }
}

TEST_CASE("training: a checkpoint of another model is refused naming the first tensor that differs", "[e2e][train]") {
  TempDir d;
  std::string tiny = compile(d, "tiny_b64.onnx", "--optimizer sgd:lr=0.01,momentum=0.9", "tiny.ofp");
  std::string mlp = compile(d, "mlp.onnx", "--optimizer sgd:lr=0.01,momentum=0.9", "mlp.ofp");
  CmdResult r = train(d, tiny, "--data " + kFashion + " --steps 2 --checkpoint " + (d / "ck"));
  REQUIRE(r.exit_code == 0);
  r = train(d, mlp, "--data " + kFashion + " --steps 4 --checkpoint " + (d / "ck") + " --resume");
  CHECK(r.exit_code == 1);
  CHECK(r.err == "ofrun: error: " + (d / "ck") + "/step-00000002/model.safetensors: tensor 'fc1.weight': is f32 [32,784], the plan " + mlp +
                     " expects f32 [1024,784]\n");
  CHECK(line_count(r.err) == 1);
  // Same weights, other optimizer: the SGD momentum buffers are not Adam's state.
  std::string adam = compile(d, "tiny_b64.onnx", "--optimizer adam", "adam.ofp");
  r = train(d, adam, "--data " + kFashion + " --steps 4 --checkpoint " + (d / "ck") + " --resume");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("tensor 'fc1.bias.momentum_buffer': is not a tensor of the plan") != std::string::npos);
}

TEST_CASE("training: SIGKILL while checkpointing leaves a checkpoint that loads and resumes", "[e2e][train]") {
  TempDir d;
  std::string plan = compile(d, "mlp.onnx", "--optimizer sgd:lr=0.01,momentum=0.9");
  const std::string ck = d / "ck";
  // Every step writes a 15 MB checkpoint, so most moments fall inside a write.
  for (int trial = 0; trial < 4; ++trial) {
    INFO("trial " << trial);
    const std::string before = latest_pointer(ck);
    pid_t pid = spawn(bin("ofrun") + " " + plan + " --data " + kFashion + " --steps 100000 --checkpoint " + ck +
                          " --checkpoint-every 1 --resume --metrics " + (d / "m.jsonl"), d);
    // Wait until this run has saved, then a little more.
    const bool saved = wait_for_new_latest(ck, before);
    std::this_thread::sleep_for(std::chrono::milliseconds(37 * trial));
    kill(pid, SIGKILL);
    const int status = wait_exit(pid);
    // A run that never saved, or ended before the kill, has not tested a kill inside a write.
    INFO(slurp(d / "bg.err"));
    REQUIRE(saved);
    REQUIRE(status == -SIGKILL);
    // The checkpoint `latest` names is whole: it evaluates and training resumes from it.
    CmdResult e = train(d, plan, "--data " + kFashion + " --eval --checkpoint " + ck);
    INFO(e.err);
    CHECK(e.exit_code == 0);
    CHECK(e.out.find("ofrun: eval 10000 samples") != std::string::npos);
  }
  REQUIRE(std::filesystem::exists(ck + "/latest"));
  std::string name = slurp(ck + "/latest");
  const int64_t step = std::stoll(name.substr(5));
  CmdResult r = train(d, plan, "--data " + kFashion + " --steps " + std::to_string(step + 2) + " --checkpoint " + ck +
                                   " --resume --metrics " + (d / "m.jsonl"));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("trained 2 steps") != std::string::npos);
  // Each resume dropped the metrics of steps after its checkpoint: every step is there once.
  std::istringstream lines(slurp(d / "m.jsonl"));
  int64_t expect = 1;
  for (std::string line; std::getline(lines, line); ++expect) REQUIRE(nlohmann::json::parse(line).at("step") == expect);
  CHECK(expect == step + 3);
  // At most the two newest step folders remain (and leftovers of killed writes are hidden).
  int folders = 0;
  for (const auto& e : std::filesystem::directory_iterator(ck)) folders += e.path().filename().string().rfind("step-", 0) == 0;
  CHECK(folders <= 2);
}

TEST_CASE("training: SIGINT ends at a step boundary, saves a checkpoint and exits 130", "[e2e][train]") {
  TempDir d;
  std::string plan = compile(d, "tiny_b64.onnx", "--optimizer sgd:lr=0.01,momentum=0.9 --micro-batches 2");
  const std::string ck = d / "ck";
  pid_t pid = spawn(bin("ofrun") + " " + plan + " --data " + kFashion + " --steps 1000000 --checkpoint " + ck +
                        " --checkpoint-every 5 --log-every 0",
                    d);
  // Interrupted once it trains (a fixed sleep raced a slow start on a loaded machine).
  REQUIRE(wait_for_new_latest(ck, ""));
  kill(pid, SIGINT);
  CHECK(wait_exit(pid) == 130);  // 128 + SIGINT, as shells expect (checkpoint_dir_test checks the others)
  std::string out = slurp(d / "bg.out");
  INFO(out << slurp(d / "bg.err"));
  const size_t at = out.find("ofrun: interrupted at step ");
  REQUIRE(at != std::string::npos);
  const int64_t step = std::stoll(out.substr(at + 27));
  CHECK(step > 0);
  CHECK(slurp(ck + "/latest") == fmt::format("step-{:08d}\n", step));
  nlohmann::json state = nlohmann::json::parse(slurp(fmt::format("{}/step-{:08d}/state.json", ck, step)));
  CHECK(state["step"] == step);
  CHECK(state["pieces"] == 2 * step);
}

TEST_CASE("training: one epoch of the MLP on Fashion-MNIST reaches 82% test accuracy", "[e2e][train]") {
  TempDir d;
  std::string plan = compile(d, "mlp.onnx", "--optimizer sgd:lr=0.01,momentum=0.9");
  CmdResult r = train(d, plan, "--data " + kFashion + " --epochs 1 --seed 1 --eval");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.out.find("accuracy ");
  REQUIRE(at != std::string::npos);
  const double accuracy = std::stod(r.out.substr(at + 9));
  CHECK(accuracy >= 82.0);
  CHECK(r.out.find("ofrun: eval 10000 samples") != std::string::npos);
  CHECK(r.out.find("ofrun: trained 937 steps (59968 samples)") != std::string::npos);
}

TEST_CASE("training: bad data, options and checkpoints fail with one line and change nothing", "[e2e][train]") {
  TempDir d;
  std::string plan = compile(d, "tiny_b64.onnx", "--optimizer sgd:lr=0.01,momentum=0.9");
  std::string cnn = compile(d, "cnn.onnx", "", "cnn.ofp");
  const std::string ck = d / "ck";
  REQUIRE(train(d, plan, "--data " + kFashion + " --steps 3 --checkpoint " + ck).exit_code == 0);
  const std::string step = ck + "/step-00000003";
  const std::string model_bytes = slurp(step + "/model.safetensors");
  struct Row {
    std::string what, args, want;
    std::function<void()> damage = [] {};
  };
  std::vector<Row> rows = {
      {"images that are not the model's input", cnn + " --data " + kFashion + " --steps 1",
       "ofrun: error: " + kFashion + ": a sample's features are f32 [28,28], but the model's input 'input' is f32 [32,3,32,32], which is not 32 such samples"},
      {"a missing IDX folder", plan + " --data idx:" + (d / "nowhere") + " --steps 1",
       "ofrun: error: " + (d / "nowhere") + ": no train-images-idx3-ubyte or train-images-idx3-ubyte.gz (IDX split 'train')"},
      {"labels and features of different lengths",
       plan + " --data npy:" + fixture("mlp_input.npy") + "," + fixture("cnn_labels.npy") + " --steps 1",
       "ofrun: error: " + fixture("cnn_labels.npy") + ": holds 32 labels but " + fixture("mlp_input.npy") + " holds 64 samples"},
      {"--epochs and --steps together", plan + " --data " + kFashion + " --epochs 1 --steps 3",
       "ofrun: error: give --epochs or --steps, not both"},
      {"an evaluation plan given --data to train", (d / "train.eval.ofp") + " --data " + kFashion + " --steps 3",
       "ofrun: error: " + (d / "train.eval.ofp") + ": is not a training plan (compile with ofc --train; feed inference plans with --input)"},
      {"a training plan given --input", plan + " --input input=" + fixture("mlp_input.npy"),
       "ofrun: error: " + plan + ": is a training plan: give ofrun --data (and --epochs or --steps) to train it"},
      {"a flipped byte in a checkpoint's weights", plan + " --data " + kFashion + " --steps 5 --checkpoint " + ck + " --resume",
       "ofrun: error: " + step + "/model.safetensors: checksum mismatch: the file is corrupt",
       [&] {
         std::string b = model_bytes;
         b[b.size() / 2] ^= 0x40;
         std::ofstream(step + "/model.safetensors", std::ios::binary) << b;
       }},
      {"a truncated checkpoint file", plan + " --data " + kFashion + " --eval --checkpoint " + ck,
       "ofrun: error: " + step + "/model.safetensors: has 1000 bytes, state.json records " + std::to_string(model_bytes.size()) +
           " (truncated or replaced?)",
       [&] { std::ofstream(step + "/model.safetensors", std::ios::binary) << model_bytes.substr(0, 1000); }},
      {"a state.json that is not JSON", plan + " --data " + kFashion + " --steps 5 --checkpoint " + ck + " --resume",
       "ofrun: error: " + step + "/state.json: is not a JSON object",
       [&] {
         std::ofstream(step + "/model.safetensors", std::ios::binary) << model_bytes;
         std::ofstream(step + "/state.json") << "{\"format\": 3";
       }},
      {"a latest pointer that escapes the folder", plan + " --data " + kFashion + " --steps 5 --checkpoint " + ck + " --resume",
       "ofrun: error: " + ck + "/latest: does not name a step folder (has '../x')",
       [&] { std::ofstream(ck + "/latest") << "../x\n"; }},
      {"an unknown optimizer key", bin("ofc") + " " + fixture("tiny_b64.onnx") + " -o " + (d / "x.ofp") + " --train --loss cross_entropy --optimizer sgd:lr=0.1,momentun=0.9",
       "ofc: error: --optimizer 'sgd:lr=0.1,momentun=0.9': unknown key 'momentun' for sgd (known: lr, momentum, dampening, nesterov, weight_decay)"},
      {"an optimizer switch that is not 0 or 1", bin("ofc") + " " + fixture("tiny_b64.onnx") + " -o " + (d / "x.ofp") + " --train --loss cross_entropy --optimizer adamw:amsgrad=0.5",
       "ofc: error: --optimizer 'adamw:amsgrad=0.5': amsgrad=0.5 is not 0 or 1"},
      {"an unknown schedule", bin("ofc") + " " + fixture("tiny_b64.onnx") + " -o " + (d / "x.ofp") + " --train --loss cross_entropy --schedule onecycle",
       "ofc: error: --schedule 'onecycle': unknown schedule 'onecycle' (constant, warmup:steps=N, cosine[:warmup=N,min_lr=X], "
       "linear[:warmup=N], step:size=N[,gamma=G], multistep:milestones=A/B/...[,gamma=G], exponential:gamma=G, "
       "polynomial[:power=P,min_lr=X], cosine_restarts:t0=N[,t_mult=K,min_lr=X]; all but constant take warmup=N,start=S,per=step|epoch)"},
  };
  for (Row& row : rows) {
    INFO("row: " << row.what);
    row.damage();
    const bool is_ofc = row.args.rfind(bin("ofc"), 0) == 0;
    CmdResult r = run_cmd(is_ofc ? row.args : bin("ofrun") + " " + row.args, d);
    CHECK(r.exit_code == 1);
    CHECK(r.err == row.want + "\n");
    CHECK(!std::filesystem::exists(d / "x.ofp"));
  }
  // The refused resumes left the checkpoint folder as it was: nothing new was saved.
  int folders = 0;
  for (const auto& e : std::filesystem::directory_iterator(ck)) folders += e.path().filename().string().rfind("step-", 0) == 0;
  CHECK(folders == 1);
}

TEST_CASE("training: a data file that shrinks during the run changes nothing (it is read and checked once)", "[e2e][train]") {
  TempDir d;
  std::string lm = compile(d, "lm.onnx", "--optimizer sgd:lr=0.1,momentum=0.9");
  std::filesystem::copy_file(fixture("lm_corpus.u16"), d / "corpus.u16");
  pid_t pid = spawn(bin("ofrun") + " " + lm + " --data tokens:" + (d / "corpus.u16") + " --steps 20000 --metrics " + (d / "m.jsonl"), d);
  for (int waited = 0; waited < 1200 && slurp(d / "m.jsonl").empty(); ++waited) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  REQUIRE_FALSE(slurp(d / "m.jsonl").empty());  // training has started
  std::filesystem::resize_file(d / "corpus.u16", 10);  // mid-run
  // Mid-run indeed: the run has not ended after the file shrank (nor written its last step).
  int early = 0;
  const bool running = waitpid(pid, &early, WNOHANG) == 0;
  const size_t steps_then = line_count(slurp(d / "m.jsonl"));  // (the last line may be half written)
  {
    INFO("the run ended before the file shrank: " << slurp(d / "bg.err"));
    REQUIRE(running);
  }
  CHECK(steps_then < 20000);
  CHECK(wait_exit(pid) == 0);
  INFO(slurp(d / "bg.err"));
  CHECK(slurp(d / "bg.out").find("ofrun: trained 20000 steps") != std::string::npos);
  CHECK(read_losses(d / "m.jsonl").size() == 20000);
  // The next run opens the shrunken file and refuses it with one line.
  CmdResult r = train(d, lm, "--data tokens:" + (d / "corpus.u16") + " --steps 1");
  CHECK(r.exit_code == 1);
  CHECK(line_count(r.err) == 1);
}

TEST_CASE("training: optimizer state starts as zeros outside the weights file, and SGD without momentum keeps none", "[e2e][train]") {
  TempDir d;
  auto keys = [&](const std::string& file) {
    std::vector<std::string> out;
    for (const auto& [key, entry] : of::read_safetensors(file).entries) out.push_back(key);
    return out;
  };
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (const char* optimizer : {"adamw:lr=0.001", "sgd:lr=0.01,momentum=0.9", "sgd:lr=0.01"}) {
    INFO(optimizer);
    const std::string plan = compile(d, "mlp.onnx", std::string("--optimizer ") + optimizer, "p.ofp");
    const std::vector<std::string> stored = keys(d / "p.safetensors");
    // The model's tensors and the loss's constant seed of the backward pass; no state.
    CHECK(stored == std::vector<std::string>{"fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight", "fc3.bias", "fc3.weight", "loss/one"});
    for (const std::string& k : stored) CHECK_FALSE((ends_with(k, ".exp_avg") || ends_with(k, ".exp_avg_sq") || ends_with(k, ".momentum_buffer")));
    const std::string ck = d / (std::string("ck-") + optimizer);
    CmdResult r = train(d, plan, "--data " + kFashion + " --steps 2 --checkpoint " + ck);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    // The checkpoint keeps the state a run made: Adam's two tensors or SGD's momentum per weight,
    // and none for SGD without momentum (torch keeps no buffer then).
    const size_t state = keys(ck + "/step-00000002/optimizer.safetensors").size();
    CHECK(state == (optimizer[0] == 'a' ? 12u : std::string(optimizer).find("momentum") != std::string::npos ? 6u : 0u));
  }
}

TEST_CASE("training: a checkpoint that kept SGD's zero momentum buffers without momentum still resumes and other contents are refused", "[e2e][train]") {
  TempDir d;
  const std::string plan = compile(d, "mlp.onnx", "--optimizer sgd:lr=0.01", "p.ofp");
  const std::string ck = d / "ck";
  REQUIRE(train(d, plan, "--data " + kFashion + " --steps 2 --checkpoint " + ck).exit_code == 0);
  // What earlier versions wrote: a zero momentum_buffer per weight in optimizer.safetensors.
  const of::SafetensorsFile model = of::read_safetensors(ck + "/step-00000002/model.safetensors");
  auto write_state = [&](float value) {
    std::vector<std::vector<float>> buffers;
    of::SafetensorsWriter w;
    for (const auto& [key, e] : model.entries) {
      buffers.emplace_back(size_t(e.bytes / 4), value);
      w.add(key + ".momentum_buffer", e.dtype, e.shape, buffers.back().data());
    }
    const std::vector<uint8_t> bytes = w.serialize();
    of::write_file_atomic(ck + "/step-00000002/optimizer.safetensors", bytes);
    // state.json records each file's size and checksum, as that version wrote them.
    nlohmann::json state = nlohmann::json::parse(slurp(ck + "/step-00000002/state.json"));
    state["files"]["optimizer.safetensors"] = {{"bytes", bytes.size()}, {"crc32", of::crc32_of(bytes.data(), bytes.size())}};
    const std::string text = state.dump(2);
    of::write_file_atomic(ck + "/step-00000002/state.json", text.data(), text.size());
  };
  write_state(0.5f);  // not what a run without momentum leaves: refused, nothing changes
  CmdResult r = train(d, plan, "--data " + kFashion + " --steps 3 --checkpoint " + ck + " --resume");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(".momentum_buffer': is not a tensor of the plan") != std::string::npos);
  CHECK(line_count(r.err) == 1);
  write_state(0.0f);
  r = train(d, plan, "--data " + kFashion + " --steps 3 --checkpoint " + ck + " --resume");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::exists(ck + "/step-00000003/model.safetensors"));
}
