#pragma once
// Tuning files: autotuning's winners in one file a deployment ships (`autogemm tune --export
// FILE`), so every rank and process makes the same choices without timing anything.
#include <cstddef>
#include <string>
#include <vector>

namespace autogemm {

struct TuningFileLoad {
  std::size_t entries = 0;            // entries in the file
  std::size_t used = 0;               // made for a GPU of this process and this build
  std::vector<std::string> ignored;   // for each other entry: its problem and which field differs
};

// Reads a tuning file and makes its entries this process's choices: gemm() runs a problem the
// file holds with the file's winner (one of our configurations or a cuBLASLt algorithm) without
// timing, ahead of the tuning record on disk and of autotuning. Entries made on another GPU model
// (name, SM count, compute capability) or by another build (library version, kernel
// fingerprint) are ignored, each with a log line (AUTOGEMM_LOG >= 2) naming the field. Loading
// again adds entries (a later file's entry for the same problem replaces the earlier one).
// AUTOGEMM_TUNING_FILE=FILE loads one on the first gemm() call (docs/env-vars.md). Load before
// the first gemm() call of the problems it holds: gemm() plans each problem once per process,
// and a problem already planned keeps its plan.
// Throws InvalidArgument("path", path, what is wrong) for a file that cannot be read or is not a
// tuning file.
TuningFileLoad load_tuning_file(const std::string& path);

}  // namespace autogemm
