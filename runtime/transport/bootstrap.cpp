// SPDX-License-Identifier: Apache-2.0
#include "runtime/transport/bootstrap.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "common/error.h"

namespace of::runtime::transport {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMaxFrame = 1 << 20;  // a hello holds a UCX address: a few KiB
constexpr char kMagic[4] = {'o', 'f', 'b', '1'};
constexpr double kHelloSeconds = 5;  // what a connection gets to say hello before it is dropped
constexpr double kReportSeconds = 3;  // how long a rank that failed early tries to tell rank 0
constexpr size_t kMaxReasonBytes = 1024;
std::atomic<bool> g_begun{false};  // this process has started a bootstrap

// A reason that came over the network, fit for one log line: printable ASCII, bounded.
std::string printable(const std::vector<uint8_t>& bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && out.size() < kMaxReasonBytes; ++i)
    out += bytes[i] >= 0x20 && bytes[i] < 0x7f ? char(bytes[i]) : '?';
  return out;
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : int(std::min<long long>(left, 1 << 30));
}

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Reads exactly n bytes before the deadline: "" on success, else why not.
std::string read_exact(int fd, void* data, size_t n, Clock::time_point deadline) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    pollfd pf{fd, POLLIN, 0};
    const int r = ::poll(&pf, 1, remaining_ms(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return "timed out";
    const ssize_t got = ::recv(fd, p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) return "the connection closed";
    if (got < 0) return std::strerror(errno);
    p += got;
    n -= size_t(got);
  }
  return "";
}

// A frame: u32 length (little-endian) of a one-byte type and its payload.
bool send_frame(int fd, char type, const std::vector<uint8_t>& payload) {
  const auto len = uint32_t(payload.size() + 1);
  uint8_t head[5];
  std::memcpy(head, &len, 4);
  head[4] = uint8_t(type);
  return write_all(fd, head, 5) && write_all(fd, payload.data(), payload.size());
}
bool send_frame(int fd, char type, const std::string& text) { return send_frame(fd, type, std::vector<uint8_t>(text.begin(), text.end())); }

struct Frame {
  char type = 0;
  std::vector<uint8_t> payload;
};
std::optional<Frame> read_frame(int fd, Clock::time_point deadline, std::string* why) {
  uint32_t len = 0;
  if (std::string e = read_exact(fd, &len, 4, deadline); !e.empty()) {
    *why = e;
    return std::nullopt;
  }
  if (len == 0 || len > kMaxFrame) {
    *why = fmt::format("a frame of {} bytes", len);
    return std::nullopt;
  }
  std::vector<uint8_t> bytes(len);
  if (std::string e = read_exact(fd, bytes.data(), len, deadline); !e.empty()) {
    *why = e;
    return std::nullopt;
  }
  return Frame{char(bytes[0]), std::vector<uint8_t>(bytes.begin() + 1, bytes.end())};
}

// The hello: magic | rank | world | token | identity | blob, strings as u32 length + bytes.
void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  out.insert(out.end(), b, b + 4);
}
void put_bytes(std::vector<uint8_t>& out, const void* data, size_t n) {
  put_u32(out, uint32_t(n));
  out.insert(out.end(), static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + n);
}
std::vector<uint8_t> hello_bytes(const Hello& h) {
  std::vector<uint8_t> out(kMagic, kMagic + 4);
  put_u32(out, uint32_t(h.rank));
  put_u32(out, uint32_t(h.world));
  put_bytes(out, h.token.data(), h.token.size());
  put_bytes(out, h.identity.data(), h.identity.size());
  put_bytes(out, h.blob.data(), h.blob.size());
  return out;
}
struct Reader {
  const std::vector<uint8_t>& b;
  size_t at = 0;
  bool ok = true;
  uint32_t u32() {
    if (b.size() - at < 4) {
      ok = false;
      return 0;
    }
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    at += 4;
    return v;
  }
  std::vector<uint8_t> bytes() {
    const uint32_t n = u32();
    if (!ok || b.size() - at < n) {
      ok = false;
      return {};
    }
    std::vector<uint8_t> v(b.begin() + long(at), b.begin() + long(at + n));
    at += n;
    return v;
  }
};
std::optional<Hello> parse_hello(const std::vector<uint8_t>& b) {
  if (b.size() < 4 || std::memcmp(b.data(), kMagic, 4) != 0) return std::nullopt;
  Reader r{b, 4};
  Hello h;
  h.rank = int32_t(r.u32());
  h.world = int32_t(r.u32());
  std::vector<uint8_t> token = r.bytes(), identity = r.bytes();
  h.blob = r.bytes();
  if (!r.ok || r.at != b.size()) return std::nullopt;
  h.token.assign(token.begin(), token.end());
  h.identity.assign(identity.begin(), identity.end());
  return h;
}

std::string peer_name(const sockaddr_storage& a) {
  char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
  getnameinfo(reinterpret_cast<const sockaddr*>(&a), sizeof a, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
  return fmt::format("{}:{}", host, port);
}

addrinfo* resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) fail({}, "bootstrap: cannot resolve the coordinator {}:{}: {}", host, port, gai_strerror(rc));
  return res;
}

int listen_on(const std::string& host, int port) {
  addrinfo* res = resolve(host, port, true);
  int fd = -1;
  std::string why = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) break;
    why = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) fail({}, "bootstrap: rank 0 cannot listen on {}:{}: {}", host, port, why);
  return fd;
}

// Connects, retrying until the deadline (rank 0 may start after this rank).
int connect_to(const std::string& host, int port, Clock::time_point deadline, double timeout_s) {
  std::string why;
  for (;;) {
    addrinfo* res = resolve(host, port, false);
    for (addrinfo* a = res; a; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        freeaddrinfo(res);
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return fd;
      }
      why = std::strerror(errno);
      ::close(fd);
    }
    freeaddrinfo(res);
    if (Clock::now() >= deadline)
      fail({}, "bootstrap: cannot reach the coordinator (rank 0) at {}:{} within {:g} s: {}", host, port, timeout_s, why);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string missing_ranks(const std::vector<int>& fds, const std::vector<uint8_t>& arrived) {
  std::vector<int32_t> missing;
  for (size_t r = 1; r < fds.size(); ++r)
    if (!arrived[r]) missing.push_back(int32_t(r));
  return fmt::format("rank{} {}", missing.size() == 1 ? "" : "s", fmt::join(missing, ", "));
}

}  // namespace

std::vector<uint8_t> encode_hello(const Hello& h) { return hello_bytes(h); }
std::optional<Hello> decode_hello(const std::vector<uint8_t>& bytes) { return parse_hello(bytes); }

std::optional<std::vector<std::vector<uint8_t>>> decode_address_table(const std::vector<uint8_t>& bytes, int32_t world) {
  Reader r{bytes};
  if (r.u32() != uint32_t(world) || !r.ok) return std::nullopt;
  std::vector<std::vector<uint8_t>> out;
  for (int32_t k = 0; k < world; ++k) out.push_back(r.bytes());
  if (!r.ok || r.at != bytes.size()) return std::nullopt;
  return out;
}

int listen_socket(const std::string& host, int* port) {
  const int fd = listen_on(host, *port);
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    *port = a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port) : ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  return fd;
}

namespace {

// Rank 0 failed before it began its bootstrap: it answers the ranks that come within a few
// seconds with the reason, so that they stop now instead of at their timeout.
void tell_joining_ranks(const BootstrapOptions& o, const std::string& why, Clock::time_point deadline) {
  int listener = o.listen_fd;
  if (listener < 0) {
    try {
      listener = listen_on(o.host, o.port);
    } catch (const Error&) {
      return;
    }
  }
  std::vector<uint8_t> told(size_t(o.world), 0);
  int32_t left = o.world - 1;
  const std::string text = fmt::format("rank 0 failed before it joined: {}", why.substr(0, kMaxReasonBytes));
  while (left > 0) {
    pollfd pf{listener, POLLIN, 0};
    const int r = ::poll(&pf, 1, remaining_ms(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::string ignored;
    const std::optional<Frame> f = read_frame(fd, std::min(deadline, Clock::now() + std::chrono::seconds(1)), &ignored);
    const std::optional<Hello> h = f && f->type == 'H' ? parse_hello(f->payload) : std::nullopt;
    if (h && h->token == o.token && h->rank > 0 && h->rank < o.world && !told[size_t(h->rank)]) {
      send_frame(fd, 'E', text);
      told[size_t(h->rank)] = 1;
      --left;
    }
    ::close(fd);
  }
  ::close(listener);
}

}  // namespace

void report_failure_before_joining(const BootstrapOptions& o, const std::string& why) {
  if (g_begun.load() || o.world < 2 || o.rank < 0 || o.rank >= o.world) return;
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kReportSeconds));
  if (o.rank == 0) return tell_joining_ranks(o, why, deadline);
  int fd = -1;
  try {
    fd = connect_to(o.host, o.port, deadline, kReportSeconds);
  } catch (const Error&) {
    return;  // rank 0 is not there: it will name this rank when its wait ends
  }
  const std::string reason = why.substr(0, kMaxReasonBytes);
  send_frame(fd, 'F', hello_bytes(Hello{o.rank, o.world, o.token, o.identity, std::vector<uint8_t>(reason.begin(), reason.end())}));
  ::close(fd);
}

Bootstrap::Bootstrap(const BootstrapOptions& o, const std::vector<uint8_t>& mine) : o_(o) {
  g_begun.store(true);
  if (o.world < 1 || o.rank < 0 || o.rank >= o.world) fail({}, "rank {} is not one of a world of {}", o.rank, o.world);
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s));
  blobs_.assign(size_t(o.world), {});
  blobs_[size_t(o.rank)] = mine;
  if (o.world == 1) return;
  const Hello me{o.rank, o.world, o.token, o.identity, mine};

  if (o.rank != 0) {
    fds_.push_back(connect_to(o.host, o.port, deadline, o.timeout_s));
    if (!send_frame(fds_[0], 'H', hello_bytes(me))) fail({}, "bootstrap: rank {}: the coordinator {}:{} closed the connection", o.rank, o.host, o.port);
    std::string why;
    // A little longer than rank 0 waits for the others: then it hears rank 0 say who is missing.
    const Clock::time_point answer_by = deadline + std::chrono::seconds(5);
    std::optional<Frame> f = read_frame(fds_[0], answer_by, &why);
    if (!f) fail({}, "bootstrap: rank {}: no answer from the coordinator {}:{} within {:g} s ({})", o.rank, o.host, o.port, o.timeout_s + 5, why);
    if (f->type == 'E') fail({}, "bootstrap: {}", std::string(f->payload.begin(), f->payload.end()));
    std::optional<std::vector<std::vector<uint8_t>>> table = f->type == 'A' ? decode_address_table(f->payload, o.world) : std::nullopt;
    if (!table) fail({}, "bootstrap: rank {}: the coordinator's answer is not an address table of {} ranks", o.rank, o.world);
    blobs_ = std::move(*table);
    blobs_[size_t(o.rank)] = mine;
    return;
  }

  // Rank 0: take connections until every rank said hello.
  const int listener = o.listen_fd >= 0 ? o.listen_fd : listen_on(o.host, o.port);
  fds_.assign(size_t(o.world), -1);
  std::vector<uint8_t> arrived(size_t(o.world), 0);
  arrived[0] = 1;
  int32_t joined = 1;
  auto refuse_all = [&](const std::string& why) {
    for (int fd : fds_)
      if (fd >= 0) send_frame(fd, 'E', why);
    ::close(listener);
    fail({}, "bootstrap: {}", why);
  };
  while (joined < o.world) {
    pollfd pf{listener, POLLIN, 0};
    const int r = ::poll(&pf, 1, remaining_ms(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0)
      refuse_all(fmt::format("{} did not join within {:g} s (coordinator {}:{})", missing_ranks(fds_, arrived), o.timeout_s, o.host, o.port));
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    const int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const std::string who = peer_name(from);
    auto drop = [&](const std::string& why) {
      fmt::print(stderr, "ofrun: rank 0: refused a connection from {}: {}\n", who, why);
      ::close(fd);
    };
    std::string why;
    const Clock::time_point hello_by = std::min(deadline, Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kHelloSeconds)));
    std::optional<Frame> f = read_frame(fd, hello_by, &why);
    std::optional<Hello> h = f && (f->type == 'H' || f->type == 'F') ? parse_hello(f->payload) : std::nullopt;
    if (!h) {
      drop(f ? "not an of rank's hello" : why);
      continue;
    }
    if (h->token != o.token) {
      drop("wrong job token");
      continue;
    }
    // A rank of this job that failed before it could join: nobody waits for it.
    if (f->type == 'F' && h->rank > 0 && h->rank < o.world && !arrived[size_t(h->rank)]) {
      ::close(fd);
      refuse_all(fmt::format("rank {} failed before it joined: {}", h->rank, printable(h->blob)));
    }
    // A rank of this job that disagrees is the user's mistake: the whole job stops, saying why.
    if (h->world != o.world) {
      ::close(fd);
      refuse_all(fmt::format("rank {} runs a world of {}, rank 0 one of {}", h->rank, h->world, o.world));
    }
    if (h->rank <= 0 || h->rank >= o.world || arrived[size_t(h->rank)]) {
      drop(fmt::format("rank {} is not a missing rank of {}", h->rank, o.world));
      continue;
    }
    if (h->identity != o.identity) {
      send_frame(fd, 'E', fmt::format("rank {} runs another plan or of version ({}) than rank 0 ({})", h->rank, h->identity, o.identity));
      ::close(fd);
      refuse_all(fmt::format("rank {} runs another plan or of version ({}) than rank 0 ({})", h->rank, h->identity, o.identity));
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fds_[size_t(h->rank)] = fd;
    blobs_[size_t(h->rank)] = std::move(h->blob);
    arrived[size_t(h->rank)] = 1;
    ++joined;
  }
  ::close(listener);  // the job is complete: nobody else gets in
  std::vector<uint8_t> table;
  put_u32(table, uint32_t(o.world));
  for (const auto& b : blobs_) put_bytes(table, b.data(), b.size());
  for (int32_t k = 1; k < o.world; ++k)
    if (!send_frame(fds_[size_t(k)], 'A', table)) fail({}, "bootstrap: rank {} left before the address table reached it", k);
}

Bootstrap::~Bootstrap() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

std::vector<std::pair<int, int32_t>> Bootstrap::peers() const {
  std::vector<std::pair<int, int32_t>> out;
  if (o_.rank != 0) {
    if (!fds_.empty()) out.emplace_back(fds_[0], 0);
    return out;
  }
  for (size_t r = 1; r < fds_.size(); ++r) out.emplace_back(fds_[r], int32_t(r));
  return out;
}

void Bootstrap::barrier(const std::string& name, const std::function<void()>& idle) {
  if (o_.world == 1) return;
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.timeout_s));
  std::string why;
  const int tick_ms = idle ? 10 : -1;
  auto wait = [&](pollfd* pfs, size_t n) {  // poll until one is readable or the deadline; -1 on EINTR
    for (;;) {
      const int left = remaining_ms(deadline);
      const int r = ::poll(pfs, n, tick_ms < 0 ? left : std::min(left, tick_ms));
      if (r != 0 || left == 0) return r;
      idle();
    }
  };
  if (o_.rank != 0) {
    if (!send_frame(fds_[0], 'B', name)) fail({}, "barrier '{}': rank 0 is gone", name);
    pollfd pf{fds_[0], POLLIN, 0};
    while (wait(&pf, 1) < 0) {
    }
    std::optional<Frame> f = read_frame(fds_[0], deadline, &why);
    if (!f) fail({}, "barrier '{}': rank 0 did not release it within {:g} s ({})", name, o_.timeout_s, why);
    if (f->type == 'E') fail({}, "barrier '{}': {}", name, std::string(f->payload.begin(), f->payload.end()));
    if (f->type != 'G' || std::string(f->payload.begin(), f->payload.end()) != name) fail({}, "barrier '{}': rank 0 answered out of turn", name);
    return;
  }
  std::vector<uint8_t> arrived(fds_.size(), 0);
  arrived[0] = 1;
  size_t count = 1;
  while (count < fds_.size()) {
    std::vector<pollfd> pfs;
    std::vector<int32_t> ranks;
    for (size_t r = 1; r < fds_.size(); ++r)
      if (!arrived[r]) {
        pfs.push_back(pollfd{fds_[r], POLLIN, 0});
        ranks.push_back(int32_t(r));
      }
    const int n = wait(pfs.data(), pfs.size());
    if (n < 0) continue;
    if (n == 0) {
      const std::string missing = missing_ranks(fds_, arrived);
      for (size_t r = 1; r < fds_.size(); ++r)
        if (arrived[r]) send_frame(fds_[r], 'E', fmt::format("{} did not reach it within {:g} s", missing, o_.timeout_s));
      fail({}, "barrier '{}': {} did not reach it within {:g} s", name, missing, o_.timeout_s);
    }
    for (size_t i = 0; i < pfs.size(); ++i) {
      if (!pfs[i].revents) continue;
      std::optional<Frame> f = read_frame(pfs[i].fd, deadline, &why);
      if (!f || f->type != 'B' || std::string(f->payload.begin(), f->payload.end()) != name)
        fail({}, "barrier '{}': rank {} {}", name, ranks[i], f ? "sent something else" : "is gone (" + why + ")");
      arrived[size_t(ranks[i])] = 1;
      ++count;
    }
  }
  for (size_t r = 1; r < fds_.size(); ++r) send_frame(fds_[r], 'G', name);
}

}  // namespace of::runtime::transport
