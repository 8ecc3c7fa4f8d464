// SPDX-License-Identifier: Apache-2.0
// Which rank of which world this process is, and where the ranks meet: from ofrun's flags, else
// from the launcher's environment — mpirun (OMPI_COMM_WORLD_RANK/SIZE), Slurm (SLURM_PROCID,
// SLURM_NTASKS), PMI (PMI_RANK, PMI_SIZE), torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace of::runtime::launch {

struct RankEnv {
  int32_t rank = 0;
  int32_t world = 1;
  std::string host = "127.0.0.1";
  int port = 29500;
  std::string from;  // what said so, for messages: "--rank/--world", "mpirun", "Slurm", ...
};

// `flag_rank`/`flag_world`/`coordinator` ("HOST:PORT"): the flags, if given. `getenv` reads the
// environment (a parameter for tests). nullopt: nothing says this is a multi-process run.
// Throws of::Error for values that do not parse or do not fit (rank outside the world).
std::optional<RankEnv> rank_env(std::optional<int32_t> flag_rank, std::optional<int32_t> flag_world, const std::string& coordinator,
                                const std::function<const char*(const char*)>& getenv);

}  // namespace of::runtime::launch
