// SPDX-License-Identifier: Apache-2.0
#include "runtime/launch/launch_local.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "common/error.h"
#include "runtime/transport/bootstrap.h"

namespace of::runtime::launch {
namespace {

int g_signal_pipe = -1;
extern "C" void forward_signal(int sig) {
  const unsigned char s = static_cast<unsigned char>(sig);
  if (::write(g_signal_pipe, &s, 1) < 0) {
  }
}

std::string job_token() {
  unsigned char bytes[16] = {};
  FILE* f = std::fopen("/dev/urandom", "rb");
  if (!f || std::fread(bytes, 1, sizeof bytes, f) != sizeof bytes) fail({.file = "/dev/urandom"}, "cannot read a job token");
  std::fclose(f);
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

struct Child {
  pid_t pid = -1;
  int out = -1, err = -1;  // read ends of its stdout and stderr
  std::string out_line, err_line;
  bool exited = false;
  int status = 0;
};

// Writes the complete lines of `buf` with the rank's prefix; keeps the rest.
void emit(std::string& buf, int rank, FILE* to, bool flush_all) {
  size_t at = 0;
  for (size_t nl; (nl = buf.find('\n', at)) != std::string::npos; at = nl + 1)
    fmt::print(to, "[rank {}] {}\n", rank, std::string_view(buf).substr(at, nl - at));
  buf.erase(0, at);
  if (flush_all && !buf.empty()) {
    fmt::print(to, "[rank {}] {}\n", rank, buf);
    buf.clear();
  }
  std::fflush(to);
}

}  // namespace

int launch_local(int32_t world, const std::vector<std::string>& args, double grace_s) {
  int port = 0;
  const int listener = transport::listen_socket("127.0.0.1", &port);
  const std::string token = job_token();
  int sig_pipe[2];
  if (::pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) fail({}, "--launch-local: cannot make a pipe: {}", std::strerror(errno));
  g_signal_pipe = sig_pipe[1];
  struct sigaction sa {}, old_int{}, old_term{}, old_hup{};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);

  std::vector<Child> children(static_cast<size_t>(world));
  for (int32_t r = 0; r < world; ++r) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) fail({}, "--launch-local: cannot make a pipe: {}", std::strerror(errno));
    std::vector<std::string> argv = args;
    argv.insert(argv.end(), {"--rank", std::to_string(r), "--world", std::to_string(world), "--coordinator", fmt::format("127.0.0.1:{}", port)});
    const pid_t pid = ::fork();
    if (pid < 0) fail({}, "--launch-local: cannot start rank {}: {}", r, std::strerror(errno));
    if (pid == 0) {
      ::setpgid(0, 0);  // its own group: a terminal's ^C reaches the launcher, which passes it on once
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      ::setenv("OF_JOB_TOKEN", token.c_str(), 1);
      if (r == 0) {
        ::fcntl(listener, F_SETFD, 0);  // rank 0 inherits the coordinator's socket
        ::setenv("OF_BOOTSTRAP_FD", std::to_string(listener).c_str(), 1);
      }
      std::vector<char*> cargv;
      for (std::string& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execv("/proc/self/exe", cargv.data());
      std::fprintf(stderr, "ofrun: --launch-local: cannot run rank %d: %s\n", r, std::strerror(errno));
      ::_exit(127);
    }
    ::setpgid(pid, pid);
    ::close(out[1]);
    ::close(err[1]);
    children[size_t(r)] = Child{.pid = pid, .out = out[0], .err = err[0]};
  }
  ::close(listener);

  using Clock = std::chrono::steady_clock;
  int first_failure = 0;
  int32_t failed_rank = -1;
  bool killing = false;  // a rank failed: the others get grace_s to stop by themselves
  Clock::time_point kill_at{};
  size_t running = children.size();
  while (running > 0) {
    std::vector<pollfd> pfs{{sig_pipe[0], POLLIN, 0}};
    std::vector<std::pair<size_t, bool>> who;  // (child, is stderr)
    for (size_t i = 0; i < children.size(); ++i) {
      if (children[i].out >= 0) {
        pfs.push_back({children[i].out, POLLIN, 0});
        who.emplace_back(i, false);
      }
      if (children[i].err >= 0) {
        pfs.push_back({children[i].err, POLLIN, 0});
        who.emplace_back(i, true);
      }
    }
    ::poll(pfs.data(), pfs.size(), 200);
    if (pfs[0].revents & POLLIN) {
      unsigned char s;
      while (::read(sig_pipe[0], &s, 1) == 1)
        for (const Child& c : children)
          if (!c.exited) ::kill(-c.pid, s);
    }
    for (size_t k = 1; k < pfs.size(); ++k) {
      if (!pfs[k].revents) continue;
      Child& c = children[who[k - 1].first];
      const bool is_err = who[k - 1].second;
      int& fd = is_err ? c.err : c.out;
      std::string& buf = is_err ? c.err_line : c.out_line;
      char chunk[4096];
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n > 0) {
        buf.append(chunk, size_t(n));
        emit(buf, int(who[k - 1].first), is_err ? stderr : stdout, false);
      } else if (n == 0 || errno != EINTR) {
        emit(buf, int(who[k - 1].first), is_err ? stderr : stdout, true);
        ::close(fd);
        fd = -1;
      }
    }
    for (size_t i = 0; i < children.size(); ++i) {
      Child& c = children[i];
      if (c.exited) continue;
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.exited = true;
      --running;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code != 0 && first_failure == 0) {
        first_failure = code;
        failed_rank = int32_t(i);
        killing = true;
        kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_s));
      }
    }
    if (killing && Clock::now() > kill_at) {
      for (const Child& c : children)
        if (!c.exited) ::kill(-c.pid, SIGKILL);
      killing = false;
    }
  }
  for (Child& c : children) {  // what the last reads left
    if (c.out >= 0) ::close(c.out);
    if (c.err >= 0) ::close(c.err);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  ::close(sig_pipe[0]);
  ::close(sig_pipe[1]);
  if (first_failure != 0) fmt::print(stderr, "ofrun: --launch-local: rank {} failed first (exit status {})\n", failed_rank, first_failure);
  return first_failure;
}

}  // namespace of::runtime::launch
