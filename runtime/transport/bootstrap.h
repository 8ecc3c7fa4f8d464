// SPDX-License-Identifier: Apache-2.0
// How the ranks of one job meet before the first piece: rank 0 (the coordinator) listens on
// TCP; every other rank connects and presents the job token, the plan's identity (its hash and
// of's version) and its UCX worker address; rank 0 answers with every rank's address. Barriers
// before the first piece and after the last go over the same sockets, which then tell the run
// controller when a peer dies (a closed socket). Every wait has a deadline and its message names
// the ranks that did not come. A connection without the token, or not speaking this protocol,
// is refused in one logged line and the job goes on.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace of::runtime::transport {

struct BootstrapOptions {
  int32_t rank = 0;
  int32_t world = 1;
  std::string host = "127.0.0.1";  // rank 0 binds it, the others connect to it
  int port = 29500;
  int listen_fd = -1;              // rank 0: a socket already listening (--launch-local), or -1
  std::string token;               // the job's: every connection must present it
  std::string identity;            // the plan's hash and of's version: every rank's must agree
  double timeout_s = 60;
};

// What a rank says when it connects (frame 'H'), as decode_hello reads it from the network.
struct Hello {
  int32_t rank = 0, world = 0;
  std::string token, identity;
  std::vector<uint8_t> blob;  // its UCX worker address
};
std::vector<uint8_t> encode_hello(const Hello& h);
// nullopt for bytes that are not exactly one hello (magic, lengths within the buffer).
std::optional<Hello> decode_hello(const std::vector<uint8_t>& bytes);
// Rank 0's answer (frame 'A'): every rank's blob; nullopt unless exactly `world` of them.
std::optional<std::vector<std::vector<uint8_t>>> decode_address_table(const std::vector<uint8_t>& bytes, int32_t world);

// A rank that fails before it joins (a data file it cannot open, a plan it cannot load) says why,
// so that the job stops at once, naming it, instead of at the bootstrap timeout: another rank
// tells the coordinator (frame 'F': a hello whose blob is the reason); rank 0 answers the ranks
// that connect within a few seconds with the reason ('E'). Best effort, for at most a few
// seconds; nothing once this process has begun its bootstrap (the run controller reports later
// failures).
void report_failure_before_joining(const BootstrapOptions& o, const std::string& why);

// A socket listening on host:port (port 0: a free one, written back): --launch-local makes the
// coordinator's before it forks the ranks, so none can take the port in between.
int listen_socket(const std::string& host, int* port);

class Bootstrap {
 public:
  // Meets every rank, exchanging `mine` (this rank's UCX address). Throws of::Error naming the
  // ranks that did not come, or the one that disagreed.
  Bootstrap(const BootstrapOptions& o, const std::vector<uint8_t>& mine);
  ~Bootstrap();
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  // Every rank's blob, indexed by rank.
  const std::vector<std::vector<uint8_t>>& blobs() const { return blobs_; }
  // Returns once every rank reached the barrier `name`; throws naming those that did not.
  // `idle`, if given, runs every 10 ms while waiting (the end barrier keeps UCX progressing, so
  // that what this rank still sends reaches ranks that are not done yet).
  void barrier(const std::string& name, const std::function<void()>& idle = {});
  // The sockets that close when a peer dies, with its rank: rank 0 has one per rank, the
  // others one (to rank 0).
  std::vector<std::pair<int, int32_t>> peers() const;

 private:
  BootstrapOptions o_;
  std::vector<int> fds_;  // rank 0: per rank (its own -1); others: [0] is rank 0's
  std::vector<std::vector<uint8_t>> blobs_;
};

}  // namespace of::runtime::transport
