// SPDX-License-Identifier: Apache-2.0
#include "runtime/launch/rank_env.h"

#include <charconv>
#include <cstring>

#include "common/error.h"

namespace of::runtime::launch {
namespace {

int64_t to_int(const std::string& s, const std::string& what, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || v < lo || v > hi) fail({}, "{} is '{}', not a number from {} to {}", what, s, lo, hi);
  return v;
}

// "HOST:PORT" (the host may be [v6]).
void parse_coordinator(const std::string& s, const std::string& what, RankEnv& e) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) fail({}, "{} is '{}', not HOST:PORT", what, s);
  std::string host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  e.host = host;
  e.port = int(to_int(s.substr(colon + 1), what + "'s port", 1, 65535));
}

}  // namespace

std::optional<RankEnv> rank_env(std::optional<int32_t> flag_rank, std::optional<int32_t> flag_world, const std::string& coordinator,
                                const std::function<const char*(const char*)>& getenv) {
  RankEnv e;
  auto var = [&](const char* name) -> std::optional<std::string> {
    const char* v = getenv(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
  if (flag_rank || flag_world) {
    if (!flag_rank || !flag_world) fail({}, "--rank and --world go together");
    e.rank = *flag_rank;
    e.world = *flag_world;
    e.from = "--rank/--world";
  } else {
    struct Source {
      const char *rank, *world, *name;
    };
    static const Source kSources[] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "mpirun"},
                                      {"SLURM_PROCID", "SLURM_NTASKS", "Slurm"},
                                      {"PMI_RANK", "PMI_SIZE", "PMI"},
                                      {"RANK", "WORLD_SIZE", "torchrun's RANK/WORLD_SIZE"}};
    const Source* found = nullptr;
    for (const Source& s : kSources)
      if (var(s.rank) && var(s.world)) {
        found = &s;
        break;
      }
    if (!found) return std::nullopt;
    e.from = found->name;
    e.rank = int32_t(to_int(*var(found->rank), found->rank, 0, 1 << 20));
    e.world = int32_t(to_int(*var(found->world), found->world, 1, 1 << 20));
  }
  if (e.world < 1 || e.rank < 0 || e.rank >= e.world) fail({}, "{}: rank {} is not one of a world of {}", e.from, e.rank, e.world);
  if (!coordinator.empty()) {
    parse_coordinator(coordinator, "--coordinator", e);
  } else if (auto c = var("OF_COORDINATOR")) {
    parse_coordinator(*c, "OF_COORDINATOR", e);
  } else if (auto addr = var("MASTER_ADDR")) {
    e.host = *addr;
    if (auto port = var("MASTER_PORT")) e.port = int(to_int(*port, "MASTER_PORT", 1, 65535));
  }
  return e;
}

}  // namespace of::runtime::launch
