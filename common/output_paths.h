// SPDX-License-Identifier: Apache-2.0
// What every tool checks of the files it will write before it does any work: no output is one of
// its inputs (same device and inode: links, "./x" and "../d/x" alike), and each output can be
// created where it is to go. A run that would fail at its end fails at its start instead.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace of {

// True when both paths exist and are the same file.
bool same_file(const std::string& a, const std::string& b);

// A path and what it is to the run ("--metrics", "the model").
using NamedPath = std::pair<std::string, std::string>;

// Throws of::Error naming the output and the input it would overwrite. Empty paths are skipped.
void refuse_outputs_over_inputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs);

// Throws of::Error (naming `path` and `what`) unless a file can be created beside `path`, by
// creating and removing a probe file there: permissions, read-only mounts and missing folders
// are all found, as root too.
void check_can_create(const std::string& path, const std::string& what);

}  // namespace of
