#pragma once
// The GPU's device-memory copy bandwidth: the reference for memory-bound GEMM rows (small M, where
// reading B dominates). Counted like BenchRow::gbps, bytes read + bytes written per second
// (1 GB = 1e9 bytes), so a row's gbps / copy gbps is the share of the achievable DRAM bandwidth
// it reaches.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/timing.hpp"

namespace autogemm::bench {

struct BenchRow;  // bench_runner.hpp

// Rows with M at most kMemoryBoundMaxM are memory-bound: B (N x K) dominates the bytes, so a GEMM
// does about 2 * M FLOP per element of B: 2 * 128 / 1 = 256 FLOP/byte for e4m3, 128 for bf16,
// under the dense ridge points of hopper-facts.md (H100 ~590 FP8 / ~295 BF16, H200 ~412 / ~206
// FLOP/byte). Up to 256 rows (issue 49's middle: 512 FLOP/byte for e4m3, still near the
// H200's FP8 ridge) a row counts too when B is at least 90% of its bytes (plan::weight_bound):
// such a row should still take about a read of its bytes.
inline constexpr int64_t kMemoryBoundMaxM = 128;

struct CopyBandwidth {
  std::size_t bytes = 0;  // size of one buffer: each copy reads and writes this many bytes
  TimingStats stats;      // per-copy times, microseconds
  double gbps = 0;        // copy_gbps(bytes, stats.median_us)
};

// 2 * bytes / median_us in GB/s (read + write, as GemmProblem::min_bytes counts a GEMM); 0 for a
// non-positive time.
double copy_gbps(std::size_t bytes, double median_us);

// The buffer size used for `free_bytes` of free device memory: 1 GiB, or a quarter of the free
// memory (two buffers take half, leaving room for the driver and other processes) rounded down
// to 2 MiB (cudaMalloc's large-page granularity). Throws InvalidArgument below 256 MiB, where the
// L2 (50 MiB on H100 and H200) would hold too large a share of the traffic.
std::size_t copy_buffer_bytes(std::size_t free_bytes);

// Times cudaMemcpyAsync device-to-device of copy_buffer_bytes(free memory) on `device` (made
// current) and `stream`: `warmup` untimed copies, then `iters` copies each between its own event
// pair (bench/timing.hpp), median. CUDA failures throw CudaError.
CopyBandwidth measure_copy_bandwidth(int device, cudaStream_t stream, int warmup = 3,
                                     int iters = 20);

// "1 GiB" or "512 MiB" (whole MiB), for the report line.
std::string format_buffer_size(std::size_t bytes);

// ---- memory-bound rows against the copy bandwidth ------------------------------------------

// M <= kMemoryBoundMaxM, or plan::weight_bound (M <= 256, B 90% of the bytes).
bool is_memory_bound(const BenchRow& row);

// row.gbps / copy_gbps (1.0: as fast as a plain copy). Throws InvalidArgument unless
// copy_gbps > 0.
double copy_share(const BenchRow& row, double copy_gbps);

// The row's time against a copy of its own bytes timed in the same loop (BenchRow::
// same_bytes_copy): copy median / GEMM median, 1.0 when the GEMM is as fast as that copy; 0 when
// the row has no such copy.
double same_bytes_share(const BenchRow& row);

struct MemoryBoundSummary {
  int rows = 0;              // memory-bound rows; the fields below are 0 when there is none
  double min_share = 0;
  std::string min_shape;     // "MxNxK" of the row with min_share
  double geomean_share = 0;  // geometric mean of the positive shares
  // The same against the same-bytes copies, over the rows that have one (same_bytes_rows).
  int same_bytes_rows = 0;
  double same_bytes_min_share = 0;
  std::string same_bytes_min_shape;
  double same_bytes_geomean_share = 0;
};

// copy_share over the memory-bound rows. Throws InvalidArgument unless copy_gbps > 0.
MemoryBoundSummary memory_bound_summary(const std::vector<BenchRow>& rows, double copy_gbps);

// One line, no newline: "copy bandwidth (cudaMemcpy D2D, 1 GiB): 2950 GB/s; memory-bound rows
// (M <= 128): min 71% (64x7168x16384), geomean 85% of it", then, when the rows have same-bytes
// copies, a second line "memory-bound rows against a copy of their own bytes timed like them:
// min ..., geomean ..."; without memory-bound rows the part after ';' says so.
std::string format_copy_bandwidth_line(const CopyBandwidth& copy,
                                       const std::vector<BenchRow>& rows);

// The memory-bound rows that have a same-bytes copy, one line each: shape, bytes, GEMM and
// copy medians, the share. Empty when there is none.
std::string format_same_bytes_table(const std::vector<BenchRow>& rows);

}  // namespace autogemm::bench
