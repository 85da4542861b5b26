#pragma once
// Resource usage reported by ptxas -v (which compile_to_cubin always passes), parsed from the
// NVRTC log, so that callers and tests can check "no spills" and register counts.
//
// The log has, per entry function:
//   ptxas info    : Compiling entry function '_Z6kernelv' for 'sm_90a'
//   ptxas info    : Function properties for _Z6kernelv
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 10 registers, used 0 barriers, 1024 bytes smem
#include <string>
#include <vector>

namespace autogemm::jit {

struct PtxasUsage {
  std::string function;        // mangled name ("" for the aggregate of several functions)
  int registers = 0;           // per thread
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_frame_bytes = 0;
  int static_smem_bytes = 0;   // "bytes smem" (static shared memory; dynamic is not listed)
  bool has_spills() const { return spill_store_bytes > 0 || spill_load_bytes > 0; }
};

// One entry per entry function found in the log, in log order.
std::vector<PtxasUsage> parse_ptxas_functions(const std::string& log);

// The worst case over all entry functions (max of each field; function is the name when
// there is exactly one). Throws Error when the log holds no ptxas resource report.
PtxasUsage parse_ptxas_usage(const std::string& log);

}  // namespace autogemm::jit
