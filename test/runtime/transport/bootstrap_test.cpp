// SPDX-License-Identifier: Apache-2.0
// Ranks as threads of one process meeting over loopback TCP.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "runtime/transport/bootstrap.h"

using namespace of::runtime::transport;

namespace {

BootstrapOptions options(int32_t rank, int32_t world, int port, int listen_fd = -1) {
  return BootstrapOptions{.rank = rank, .world = world, .host = "127.0.0.1", .port = port, .listen_fd = listen_fd,
                          .token = "t0k3n", .identity = "plan 1234 of 0.1", .timeout_s = 5};
}

std::vector<uint8_t> blob(int32_t rank) { return std::vector<uint8_t>(size_t(10 + rank), uint8_t(rank)); }

// Runs rank `r` of `o` on a thread: its blobs, or the error it threw.
struct RankThread {
  std::vector<std::vector<uint8_t>> blobs;
  std::string error;
  std::thread thread;
  RankThread(BootstrapOptions o, bool barrier = true)
      : thread([this, o, barrier] {
          try {
            Bootstrap b(o, blob(o.rank));
            blobs = b.blobs();
            if (barrier) b.barrier("start");
          } catch (const of::Error& e) {
            error = e.what();
          }
        }) {}
};

int connect_local(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

}  // namespace

TEST_CASE("bootstrap: three ranks exchange their addresses and pass a barrier", "[transport]") {
  int port = 0;
  const int listener = listen_socket("127.0.0.1", &port);
  RankThread r1(options(1, 3, port)), r2(options(2, 3, port));
  Bootstrap b0(options(0, 3, port, listener), blob(0));
  b0.barrier("start");
  r1.thread.join();
  r2.thread.join();
  REQUIRE(r1.error.empty());
  REQUIRE(r2.error.empty());
  for (const auto& got : {b0.blobs(), r1.blobs, r2.blobs}) {
    REQUIRE(got.size() == 3);
    for (int32_t k = 0; k < 3; ++k) CHECK(got[size_t(k)] == blob(k));
  }
  CHECK(b0.peers().size() == 2);
}

TEST_CASE("bootstrap: a stray connection and a wrong token are refused and the job goes on", "[transport]") {
  int port = 0;
  const int listener = listen_socket("127.0.0.1", &port);
  std::optional<Bootstrap> b0;
  std::string error0;
  std::thread coordinator([&] {
    try {
      b0.emplace(options(0, 2, port, listener), blob(0));
    } catch (const of::Error& e) {
      error0 = e.what();
    }
  });
  const int stray = connect_local(port);  // says nothing sensible
  const char junk[] = "GET / HTTP/1.0\r\n\r\n";
  CHECK(::send(stray, junk, sizeof junk, MSG_NOSIGNAL) > 0);
  BootstrapOptions intruder = options(1, 2, port);
  intruder.token = "guess";
  RankThread bad(intruder, false);
  bad.thread.join();
  CHECK_FALSE(bad.error.empty());  // the coordinator closed on it
  RankThread good(options(1, 2, port), false);
  good.thread.join();
  coordinator.join();
  ::close(stray);
  CHECK(error0.empty());
  CHECK(good.error.empty());
  REQUIRE(b0);
  CHECK(b0->blobs()[1] == blob(1));
}

TEST_CASE("bootstrap: a rank with another plan is refused and both say which", "[transport]") {
  int port = 0;
  const int listener = listen_socket("127.0.0.1", &port);
  BootstrapOptions other = options(1, 2, port);
  other.identity = "plan 9999 of 0.1";
  RankThread r1(other, false);
  std::string error0;
  try {
    Bootstrap b0(options(0, 2, port, listener), blob(0));
  } catch (const of::Error& e) {
    error0 = e.what();
  }
  r1.thread.join();
  CHECK(error0.find("rank 1 runs another plan") != std::string::npos);
  CHECK(r1.error.find("rank 1 runs another plan") != std::string::npos);
}

TEST_CASE("bootstrap: a rank that never comes is named when the wait ends", "[transport]") {
  int port = 0;
  const int listener = listen_socket("127.0.0.1", &port);
  BootstrapOptions o0 = options(0, 3, port, listener), o1 = options(1, 3, port);
  o0.timeout_s = 0.5;
  o1.timeout_s = 3;  // waits longer than rank 0, so it hears why
  RankThread r1(o1, false);
  std::string error0;
  try {
    Bootstrap b0(o0, blob(0));
  } catch (const of::Error& e) {
    error0 = e.what();
  }
  r1.thread.join();
  CHECK(error0.find("rank 2 did not join") != std::string::npos);
  CHECK(r1.error.find("rank 2 did not join") != std::string::npos);  // told by rank 0
}
