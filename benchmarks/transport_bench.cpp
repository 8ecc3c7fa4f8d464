// SPDX-License-Identifier: Apache-2.0
// of_transport_bench: one register crossing from rank 0 to rank 1 as ofrun moves it — the
// runtime's UCX transport (runtime/transport/), event-driven as in ofrun (sleeping on UCX's
// event fd, no busy polling), the protocol's ready with the slot's bytes and the free back.
//
//   of_transport_bench --bytes N [--iters K] [--slots S]
//
// Forks itself into the two ranks (they meet at the bootstrap on loopback). Rank 0 sends K
// pieces through S slots of N bytes and prints one line: "bytes N slots S iters K seconds T
// us_per_piece U MBps B". With one slot each piece waits for its free: a round trip (latency);
// with two, slots alternate (bandwidth). benchmarks/bench_transport.py runs it next to
// ucx_perftest on the same transport.
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/transport/bootstrap.h"
#include "runtime/transport/routes.h"
#include "runtime/transport/ucx_transport.h"

using namespace of;
using namespace of::runtime::transport;

namespace {

plan::Plan two_tasks(uint64_t bytes, int32_t slots) {
  plan::Plan p;
  p.devices = {plan::DeviceRef{.rank = 0}, plan::DeviceRef{.rank = 1}};
  p.tasks.resize(2);
  p.tasks[0].id = 0;
  p.tasks[0].device = 0;
  p.tasks[0].out_regsts = {0};
  p.tasks[1].id = 1;
  p.tasks[1].device = 1;
  p.tasks[1].in_regsts = {0};
  plan::Regst r;
  r.producer = 0;
  r.consumers = {1};
  r.slots = slots;
  r.slot_bytes = bytes;
  p.regsts = {r};
  return p;
}

struct Inbox final : UcxTransport::Receiver {
  std::deque<WireHeader> got;
  std::string failure;
  void deliver(const WireHeader& h) override { got.push_back(h); }
  void failed(const std::string& why) override { failure = why; }
};

// Sleeps until the network has events, as ofrun's event thread does, then progresses.
void wait_for_events(UcxTransport& t, int epoll_fd) {
  t.progress();
  if (!t.arm()) return;
  epoll_event ev;
  epoll_wait(epoll_fd, &ev, 1, 1);  // the 1 ms tick of ofrun's network thread (actor_system.cpp)
  t.progress();
}

int run_rank(int32_t rank, int listen_fd, int port, uint64_t bytes, int32_t slots, int64_t iters) {
  const plan::Plan p = two_tasks(bytes, slots);
  const RankRoutes routes(p, rank);
  std::vector<uint8_t> memory(bytes * uint64_t(slots), uint8_t(rank + 1));  // rank 0: the slots; rank 1: landing
  std::vector<std::vector<uint8_t*>> landing(1);
  if (rank == 1)
    for (int32_t s = 0; s < slots; ++s) landing[0].push_back(memory.data() + bytes * uint64_t(s));
  Inbox inbox;
  UcxTransport t(routes, landing, inbox);
  Bootstrap boot(BootstrapOptions{.rank = rank, .world = 2, .host = "127.0.0.1", .port = port, .listen_fd = listen_fd,
                                  .token = "bench", .identity = "transport bench", .timeout_s = 30},
                 t.address());
  t.connect(boot.blobs());
  const int epoll_fd = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, t.fd(), &ev);
  boot.barrier("start");
  const auto begin = std::chrono::steady_clock::now();
  if (rank == 0) {
    int64_t sent = 0, freed = 0;
    while (freed < iters) {
      while (sent < iters && sent - freed < slots) {
        const auto slot = int32_t(sent % slots);
        t.ready(0, 1, 0, slot, sent, memory.data() + bytes * uint64_t(slot), bytes);
        ++sent;
      }
      t.progress();
      while (!inbox.got.empty()) {
        inbox.got.pop_front();
        ++freed;
      }
      if (!inbox.failure.empty()) fail({}, "{}", inbox.failure);
      if (freed < iters && inbox.got.empty()) wait_for_events(t, epoll_fd);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    std::printf("bytes %llu slots %d iters %lld seconds %.6f us_per_piece %.3f MBps %.1f\n", static_cast<unsigned long long>(bytes), slots,
                static_cast<long long>(iters), seconds, 1e6 * seconds / double(iters), double(bytes) * double(iters) / seconds / 1e6);
  } else {
    int64_t got = 0;
    while (got < iters) {
      t.progress();
      while (!inbox.got.empty()) {
        const WireHeader h = inbox.got.front();
        inbox.got.pop_front();
        if (h.kind != WireKind::ready) continue;
        t.free(1, 0, 0, h.slot);
        ++got;
      }
      if (!inbox.failure.empty()) fail({}, "{}", inbox.failure);
      if (got < iters) wait_for_events(t, epoll_fd);
    }
  }
  t.flush(5);
  boot.barrier("end", [&] { t.progress(); });
  ::close(epoll_fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t bytes = 4096;
  int32_t slots = 2;
  int64_t iters = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--bytes") bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--slots") slots = std::atoi(argv[i + 1]);
    else if (a == "--iters") iters = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: of_transport_bench --bytes N [--iters K] [--slots S]\n");
      return 2;
    }
  }
  if (bytes == 0 || slots < 1 || iters < 1) {
    std::fprintf(stderr, "of_transport_bench: --bytes, --slots and --iters must be positive\n");
    return 2;
  }
  try {
    int port = 0;
    const int listener = listen_socket("127.0.0.1", &port);
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(listener);
      try {
        ::_exit(run_rank(1, -1, port, bytes, slots, iters));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "of_transport_bench: rank 1: %s\n", e.what());
        ::_exit(1);
      }
    }
    const int rc = run_rank(0, listener, port, bytes, slots, iters);
    int status = 0;
    ::waitpid(child, &status, 0);
    return rc != 0 ? rc : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "of_transport_bench: %s\n", e.what());
    return 1;
  }
}
