#pragma once
// Whether a result computed on several GPUs is the single-GPU result: bit for bit, or within
// DeepGEMM's diff (the multi-GPU bench and tests).
#include <cstddef>
#include <vector>

#include "autogemm/problem.hpp"

namespace autogemm::multi {

struct ResultMatch {
  bool bitwise = false;   // every byte equal
  double diff = 0;        // bench::gemm_diff of the decoded values (0 when bitwise)
  bool finite = true;     // no NaN or infinity in `got` (an unwritten, poisoned element)
  // The multi-GPU rule: bitwise, or finite with diff < 1e-5 (the bound).
  bool ok() const { return bitwise || (finite && diff < 1e-5); }
};

// `got` and `want`: the same number of stored elements of type t.
ResultMatch match_results(const std::vector<unsigned char>& got,
                          const std::vector<unsigned char>& want, DType t);

// `bytes` bytes of device memory (any device), copied to the host.
std::vector<unsigned char> download_bytes(const void* device, std::size_t bytes);

}  // namespace autogemm::multi
