// SPDX-License-Identifier: Apache-2.0
// No lost work: one writer per checkpoint folder (a second is refused naming the holder), a fresh
// run never re-points `latest` over another run's checkpoints unless told to start over, what
// killed saves leave is cleaned, signals checkpoint and exit 128 + the signal, and what a run
// needs is checked before its first step. (A full disk and read-only mounts: disk_full_check.py.)
#include <signal.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "e2e/e2e_util.h"
#include "schemas/plan_format.h"

using namespace of::e2e;

namespace {

const std::string kData = " --data npy:" + fixture("mlp_input.npy") + "," + fixture("mlp_labels.npy");

std::string compile_mlp(const TempDir& d) {
  CmdResult c = run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "t.ofp") + " --train --loss cross_entropy", d);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  return d / "t.ofp";
}

CmdResult ofrun(const TempDir& d, const std::string& plan, const std::string& flags) {
  return run_cmd(bin("ofrun") + " " + plan + kData + " " + flags, d);
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("checkpoint folder: a second writer is refused naming the holder and the holder loses nothing", "[e2e][train]") {
  TempDir d;
  const std::string plan = compile_mlp(d), ck = d / "ck";
  const pid_t holder = spawn(bin("ofrun") + " " + plan + kData + " --steps 1000000 --checkpoint " + ck + " --checkpoint-every 20", d);
  REQUIRE(wait_for_new_latest(ck, ""));
  for (const char* flags : {"--steps 5", "--steps 5 --overwrite", "--steps 5 --resume"}) {
    INFO(flags);
    CmdResult r = ofrun(d, plan, std::string(flags) + " --checkpoint " + ck);
    CHECK(r.exit_code == 1);
    CHECK(r.err == fmt::format("ofrun: error: {}: checkpoint folder is in use by another run (pid {}); wait for it to end or choose "
                               "another --checkpoint\n", ck, holder));
  }
  // Reading is never refused: evaluating the holder's latest checkpoint works while it trains.
  CmdResult e = ofrun(d, plan, "--eval --checkpoint " + ck);
  INFO(e.err);
  CHECK(e.exit_code == 0);
  kill(holder, SIGTERM);
  CHECK(wait_exit(holder) == 143);
  const std::string out = slurp(d / "bg.out");
  INFO(out);
  const size_t at = out.find("ofrun: interrupted at step ");
  REQUIRE(at != std::string::npos);
  CHECK(slurp(ck + "/latest") == fmt::format("step-{:08d}\n", std::stoll(out.substr(at + 27))));
  // The lock died with its holder's exit (as it does with a SIGKILL): the next run takes it.
  CmdResult next = ofrun(d, plan, "--steps 1 --checkpoint " + ck + " --overwrite");
  INFO(next.err);
  CHECK(next.exit_code == 0);
}

TEST_CASE("checkpoint folder: a fresh run over checkpoints is refused and --overwrite starts over", "[e2e][train]") {
  TempDir d;
  const std::string plan = compile_mlp(d), ck = d / "ck";
  REQUIRE(ofrun(d, plan, "--steps 6 --checkpoint " + ck + " --checkpoint-every 2").exit_code == 0);
  CHECK(entries(ck) == std::vector<std::string>{".lock", "latest", "step-00000004", "step-00000006"});
  CmdResult r = ofrun(d, plan, "--steps 2 --checkpoint " + ck);
  CHECK(r.exit_code == 1);
  CHECK(r.err == "ofrun: error: " + ck + ": holds checkpoints (latest step-00000006): --resume continues them, --overwrite starts over and replaces them\n");
  CHECK(slurp(ck + "/latest") == "step-00000006\n");
  CHECK(r.out.find("trained") == std::string::npos);
  // Usage errors are exit status 2, in one line.
  CmdResult both = ofrun(d, plan, "--steps 2 --checkpoint " + ck + " --resume --overwrite");
  CHECK(both.exit_code == 2);
  CHECK(both.err == "ofrun: error: --resume excludes --overwrite (see ofrun --help)\n");
  // Resuming keeps the checkpoint it resumed from and the new one; the older one goes.
  REQUIRE(ofrun(d, plan, "--steps 8 --checkpoint " + ck + " --resume").exit_code == 0);
  CHECK(entries(ck) == std::vector<std::string>{".lock", "latest", "step-00000006", "step-00000008"});
  // Starting over: the old checkpoints stay until the new run's first save, then go.
  CmdResult o = ofrun(d, plan, "--steps 2 --checkpoint " + ck + " --overwrite");
  INFO(o.err);
  REQUIRE(o.exit_code == 0);
  CHECK(slurp(ck + "/latest") == "step-00000002\n");
  CHECK(entries(ck) == std::vector<std::string>{".lock", "latest", "step-00000002"});
}

TEST_CASE("checkpoint folder: --keep-checkpoints N keeps the newest N of the line, across a resume", "[e2e][train]") {
  TempDir d;
  const std::string plan = compile_mlp(d), ck = d / "ck";
  REQUIRE(ofrun(d, plan, "--steps 6 --checkpoint " + ck + " --checkpoint-every 1 --keep-checkpoints 3").exit_code == 0);
  CHECK(entries(ck) == std::vector<std::string>{".lock", "latest", "step-00000004", "step-00000005", "step-00000006"});
  // The resumed run's line begins with the checkpoints before it.
  REQUIRE(ofrun(d, plan, "--steps 7 --checkpoint " + ck + " --resume --keep-checkpoints 3").exit_code == 0);
  CHECK(entries(ck) == std::vector<std::string>{".lock", "latest", "step-00000005", "step-00000006", "step-00000007"});
  // The default keeps two.
  REQUIRE(ofrun(d, plan, "--steps 8 --checkpoint " + ck + " --resume").exit_code == 0);
  CHECK(entries(ck) == std::vector<std::string>{".lock", "latest", "step-00000007", "step-00000008"});
  // Keeping 1 would remove the checkpoint a reader may have just found through `latest`.
  CmdResult one = ofrun(d, plan, "--steps 9 --checkpoint " + ck + " --resume --keep-checkpoints 1");
  CHECK(one.exit_code == 2);
  CHECK(one.err.find("--keep-checkpoints") != std::string::npos);
  CHECK(slurp(ck + "/latest") == "step-00000008\n");
}

TEST_CASE("checkpoint folder: what SIGKILLed saves leave is removed by the next run", "[e2e][train]") {
  TempDir d;
  const std::string plan = compile_mlp(d), ck = d / "ck";
  // Leftovers as a kill inside a save leaves them (a partial folder, a pointer's temporary file).
  std::filesystem::create_directories(ck + "/.partial-step-00000009-4242");
  std::ofstream(ck + "/.partial-step-00000009-4242/model.safetensors") << std::string(1 << 20, 'x');
  std::ofstream(ck + "/latest.tmp.4242") << "step-00000009\n";
  for (int trial = 0; trial < 3; ++trial) {
    const std::string before = latest_pointer(ck);
    const pid_t pid = spawn(bin("ofrun") + " " + plan + kData + " --steps 1000000 --checkpoint-every 1 --checkpoint " + ck +
                                (trial == 0 ? " --overwrite" : " --resume"), d);
    // Wait until this run has saved, then kill it mid-stream.
    const bool saved = wait_for_new_latest(ck, before);
    std::this_thread::sleep_for(std::chrono::milliseconds(13 * trial));
    kill(pid, SIGKILL);
    CHECK(saved);
    CHECK(wait_exit(pid) == -SIGKILL);
    if (trial == 0) CHECK(slurp(d / "bg.err").find("removed 2 unfinished save(s) of killed runs") != std::string::npos);
  }
  CmdResult r = ofrun(d, plan, "--steps 1 --checkpoint " + ck + " --overwrite");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(entries(ck) == std::vector<std::string>{".lock", "latest", "step-00000001"});
}

TEST_CASE("signals: SIGINT SIGTERM and SIGHUP checkpoint and exit 130 143 and 129", "[e2e][train]") {
  TempDir d;
  const std::string plan = compile_mlp(d);
  for (auto [sig, status] : {std::pair{SIGINT, 130}, std::pair{SIGTERM, 143}, std::pair{SIGHUP, 129}, std::pair{SIGTERM, 0}}) {
    const std::string ck = d / fmt::format("ck{}_{}", sig, status);
    const std::string zero = status == 0 ? " --zero-exit-on-signal" : "";
    const pid_t pid = spawn(bin("ofrun") + " " + plan + kData + " --steps 1000000 --checkpoint-every 10 --checkpoint " + ck + zero, d);
    REQUIRE(wait_for_new_latest(ck, ""));
    kill(pid, sig);
    INFO("signal " << sig << slurp(d / "bg.err"));
    CHECK(wait_exit(pid) == status);
    const std::string out = slurp(d / "bg.out");
    const size_t at = out.find("ofrun: interrupted at step ");
    REQUIRE(at != std::string::npos);
    CHECK(slurp(ck + "/latest") == fmt::format("step-{:08d}\n", std::stoll(out.substr(at + 27))));
  }
}

TEST_CASE("checks before work: what a run needs is checked before its first step", "[e2e][train]") {
  TempDir d;
  const std::string plan = compile_mlp(d);
  std::ofstream(d / "file") << "not a folder";
  struct Case {
    std::string flags, line;
  };
  const std::vector<Case> cases = {
      {"--steps 50 --eval --eval-data npy:" + (d / "no_test.npy") + "," + fixture("mlp_labels.npy"),
       "ofrun: error: " + (d / "no_test.npy") + ": cannot open: No such file or directory"},
      {"--steps 50 --checkpoint " + (d / "file/ck"), "ofrun: error: " + (d / "file/ck") + ": cannot create the checkpoint folder: Not a directory"},
      {"--steps 50 --metrics " + plan, "ofrun: error: " + plan + ": --metrics would overwrite the plan (" + plan + "); write it elsewhere"},
      {"--steps 50 --trace " + (d / "t.safetensors"),
       "ofrun: error: " + (d / "t.safetensors") + ": --trace would overwrite the plan's weights (" + (d / "t.safetensors") + "); write it elsewhere"},
      {"--steps 50 --metrics " + fixture("mlp_labels.npy"),
       "ofrun: error: " + fixture("mlp_labels.npy") + ": --metrics would overwrite --data (" + fixture("mlp_labels.npy") + "); write it elsewhere"},
      {"--steps 50 --metrics " + (d / "nowhere/m.jsonl"), "ofrun: error: " + (d / "nowhere/m.jsonl") + ": cannot write --metrics here: No such file or directory"},
  };
  for (const Case& c : cases) {
    INFO(c.flags);
    CmdResult r = ofrun(d, plan, c.flags);
    CHECK(r.exit_code == 1);
    CHECK(r.err == c.line + "\n");
    CHECK(r.out.find("trained") == std::string::npos);
  }
  // An inference output over its input, and a binding given twice.
  CmdResult c = run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "i.ofp"), d);
  REQUIRE(c.exit_code == 0);
  std::filesystem::copy_file(fixture("mlp_input.npy"), d / "x.npy");
  CmdResult over = run_cmd(bin("ofrun") + " " + (d / "i.ofp") + " --input input=" + (d / "x.npy") + " --output logits=" + (d / "x.npy"), d);
  CHECK(over.exit_code == 1);
  CHECK(over.err == "ofrun: error: " + (d / "x.npy") + ": --output logits would overwrite --input input (" + (d / "x.npy") + "); write it elsewhere\n");
  CmdResult twice = run_cmd(bin("ofrun") + " " + (d / "i.ofp") + " --input input=" + (d / "x.npy") + " --input input=" + (d / "x.npy"), d);
  CHECK(twice.exit_code == 2);
  CHECK(twice.err == "ofrun: error: --input 'input' is given twice\n");
  // The compiler never writes over its model.
  std::filesystem::copy_file(fixture("mlp.onnx"), d / "m.onnx");
  const std::string model_bytes = slurp(d / "m.onnx");
  CmdResult self = run_cmd(bin("ofc") + " " + (d / "m.onnx") + " -o " + (d / "m.onnx"), d);
  CHECK(self.exit_code == 1);
  CHECK(self.err == "ofc: error: " + (d / "m.onnx") + ": the plan would overwrite the model (" + (d / "m.onnx") + "); write it elsewhere\n");
  std::filesystem::create_symlink(d / "m.onnx", d / "link.ofp");
  CHECK(run_cmd(bin("ofc") + " " + (d / "m.onnx") + " -o " + (d / "link.ofp"), d).exit_code == 1);
  CHECK(slurp(d / "m.onnx") == model_bytes);
  // A plan that cannot be written is found before the compile, not after it.
  CmdResult nowhere = run_cmd(bin("ofc") + " " + (d / "m.onnx") + " -o " + (d / "nowhere/p.ofp"), d);
  CHECK(nowhere.exit_code == 1);
  CHECK(nowhere.err == "ofc: error: " + (d / "nowhere/p.ofp") + ": cannot write the plan here: No such file or directory\n");
}

TEST_CASE("command lines: --version and usage errors in one line with exit status 2", "[e2e]") {
  TempDir d;
  for (const char* tool : {"ofc", "ofrun", "ofdump"}) {
    CmdResult v = run_cmd(bin(tool) + " --version", d);
    CHECK(v.exit_code == 0);
    CHECK(v.out.rfind(std::string(tool) + " 0.1 (plan format " + std::to_string(of::plan_format::kVersion) + ", commit ", 0) == 0);
    CmdResult bad = run_cmd(bin(tool) + " --no-such-flag", d);
    CHECK(bad.exit_code == 2);
    CHECK(line_count(bad.err) == 1);
    CHECK(bad.err.rfind(std::string(tool) + ": error: ", 0) == 0);
  }
  struct Case {
    std::string cmd, line;
  };
  const std::string mlp = fixture("mlp.onnx");
  const std::vector<Case> cases = {
      {bin("ofrun") + " p.ofp --threads 0", "ofrun: error: --threads: must be at least 1, got 0 (see ofrun --help)"},
      {bin("ofrun") + " p.ofp --threads many", "ofrun: error: --threads: 'many' is not an integer (see ofrun --help)"},
      {bin("ofrun") + " p.ofp --stall-timeout 0", "ofrun: error: --stall-timeout: must be a positive number, got 0 (see ofrun --help)"},
      {bin("ofc") + " " + mlp + " -o p.ofp --optimizer adam:lr=abc", "ofc: error: --optimizer requires --train (see ofc --help)"},
      {bin("ofc") + " " + mlp + " -o p.ofp --train", "ofc: error: --train requires --loss (see ofc --help)"},
      {bin("ofc") + " " + mlp + " -o p.ofp --train --loss hinge", "ofc: error: --loss: 'hinge' is not cross_entropy[:...], mse or output (see ofc --help)"},
      {bin("ofc") + " " + mlp + " -o p.ofp --slots 65", "ofc: error: --slots: must be from 1 to 64, got 65 (see ofc --help)"},
      {bin("ofc") + " " + mlp + " -o a.ofp -o b.ofp", "ofc: error: --output: At Most 1 required but received 2 (see ofc --help)"},
      {bin("ofrun") + " p.ofp --steps 5", "ofrun: error: --steps requires --data (see ofrun --help)"},
      {bin("ofrun") + " p.ofp --data npy:a,b --input x=y.npy", "ofrun: error: --input excludes --data (see ofrun --help)"},
      {bin("ofdump") + " p.ofp --memory --diff q.ofp", "ofdump: error: --memory excludes --diff (see ofdump --help)"},
  };
  for (const Case& c : cases) {
    INFO(c.cmd);
    CmdResult r = run_cmd(c.cmd, d);
    CHECK(r.exit_code == 2);
    CHECK(r.err == c.line + "\n");
  }
}

TEST_CASE("ofdump: text views combine and --diff exits 1 when plans differ", "[e2e]") {
  TempDir d;
  REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "a.ofp"), d).exit_code == 0);
  REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "b.ofp") + " --slots 3", d).exit_code == 0);
  CmdResult memory = run_cmd(bin("ofdump") + " --memory " + (d / "a.ofp"), d);
  CmdResult stages = run_cmd(bin("ofdump") + " --stages " + (d / "a.ofp"), d);
  CmdResult both = run_cmd(bin("ofdump") + " --memory --stages " + (d / "a.ofp"), d);
  REQUIRE(both.exit_code == 0);
  CHECK(both.out == stages.out + "\n" + memory.out);
  CmdResult diff = run_cmd(bin("ofdump") + " --diff " + (d / "a.ofp") + " " + (d / "b.ofp"), d);
  CHECK(diff.exit_code == 1);
  CHECK_FALSE(diff.out.empty());
  CmdResult same = run_cmd(bin("ofdump") + " --diff " + (d / "a.ofp") + " " + (d / "a.ofp"), d);
  CHECK(same.exit_code == 0);
  CHECK(same.out == "the plans are identical\n");
}
