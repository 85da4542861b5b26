// Device-to-device copy bandwidth and the memory-bound rows' share of it (copy_bandwidth.hpp).
#include "bench/copy_bandwidth.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "autogemm/errors.hpp"
#include "bench/bench_runner.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "plan/swap_ab.hpp"

namespace autogemm::bench {

namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;
constexpr std::size_t kGiB = std::size_t(1) << 30;
// Large enough that the copy runs from DRAM: only the destination's last L2-full of dirty lines
// (50 MiB on H100/H200) can be in flight when the stop event fires, < 2.5% of 2 x 1 GiB moved.
constexpr std::size_t kTargetBytes = kGiB;
// Floor: the same effect stays under 10% of the 2 x 256 MiB moved.
constexpr std::size_t kMinBytes = 256 * kMiB;
// cudaMalloc hands out 2 MiB pages for large allocations; a multiple of it wastes nothing.
constexpr std::size_t kGranule = 2 * kMiB;

std::string shape_text(const GemmProblem& p) { return fmt::format("{}x{}x{}", p.m, p.n, p.k); }

void check_copy_gbps(double copy_gbps) {
  if (!(copy_gbps > 0) || !std::isfinite(copy_gbps))
    throw InvalidArgument("copy_gbps", fmt::format("{}", copy_gbps),
                          "the copy bandwidth must be a measured, positive number");
}

}  // namespace

double copy_gbps(std::size_t bytes, double median_us) {
  // bytes / us = 1e6 bytes/s; * 1e-3 gives GB/s (1e9), as BenchRow::gbps.
  return median_us > 0 ? 2.0 * double(bytes) / median_us * 1e-3 : 0.0;
}

std::size_t copy_buffer_bytes(std::size_t free_bytes) {
  const std::size_t bytes = std::min(kTargetBytes, free_bytes / 4 / kGranule * kGranule);
  if (bytes < kMinBytes)
    throw InvalidArgument("free device memory", format_buffer_size(free_bytes / kMiB * kMiB),
                          fmt::format("the copy bandwidth needs two buffers of at least {}, "
                                      "each at most a quarter of the free memory (a smaller "
                                      "copy would partly run from the L2)",
                                      format_buffer_size(kMinBytes)));
  return bytes;
}

CopyBandwidth measure_copy_bandwidth(int device, cudaStream_t stream, int warmup, int iters) {
  cuda_check(cudaSetDevice(device), "cudaSetDevice(copy bandwidth)");
  std::size_t free_bytes = 0, total_bytes = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo(copy bandwidth)");
  CopyBandwidth result;
  result.bytes = copy_buffer_bytes(free_bytes);
  DeviceBuffer source(result.bytes), destination(result.bytes);
  // Written once so the copy reads real pages, not never-touched memory.
  cuda_check(cudaMemsetAsync(source.get(), 0x5a, result.bytes, stream),
             "cudaMemsetAsync(copy source)");
  // No L2Flusher: each copy moves several times the L2 and so is its own flush. It leaves the L2 full of
  // dirty destination lines for the next copy to write back, as the flush's memset leaves
  // before each timed GEMM.
  const auto copy = [&](cudaStream_t s) {
    cuda_check(cudaMemcpyAsync(destination.get(), source.get(), result.bytes,
                               cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync(device to device)");
  };
  result.stats = summarize(time_calls(copy, warmup, iters, stream, nullptr));
  result.gbps = copy_gbps(result.bytes, result.stats.median_us);
  return result;
}

std::string format_buffer_size(std::size_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  return fmt::format("{} MiB", bytes / kMiB);
}

bool is_memory_bound(const BenchRow& row) {
  return row.problem.m <= kMemoryBoundMaxM || plan::weight_bound(row.problem);
}

double copy_share(const BenchRow& row, double copy_gbps) {
  check_copy_gbps(copy_gbps);
  return row.gbps / copy_gbps;
}

double same_bytes_share(const BenchRow& row) {
  if (!row.same_bytes_copy || !(row.ours.median_us > 0)) return 0;
  return row.same_bytes_copy->median_us / row.ours.median_us;
}

namespace {

// Count, minimum (with its shape) and geometric mean of `share_of(row)` over the rows it gives a
// value for (std::nullopt: the row is left out).
struct ShareStats {
  int rows = 0;
  double min = 0;
  std::string min_shape;
  double geomean = 0;
};

template <class ShareOf>
ShareStats share_stats(const std::vector<BenchRow>& rows, ShareOf share_of) {
  ShareStats stats;
  std::vector<double> shares;
  double min = std::numeric_limits<double>::infinity();
  for (const BenchRow& row : rows) {
    const std::optional<double> share = share_of(row);
    if (!share) continue;
    shares.push_back(*share);
    if (*share < min) {
      min = *share;
      stats.min_shape = shape_text(row.problem);
    }
  }
  stats.rows = static_cast<int>(shares.size());
  if (shares.empty()) return stats;
  stats.min = min;
  stats.geomean = geometric_mean(shares);
  return stats;
}

}  // namespace

MemoryBoundSummary memory_bound_summary(const std::vector<BenchRow>& rows, double copy_gbps) {
  check_copy_gbps(copy_gbps);
  const ShareStats copy = share_stats(rows, [&](const BenchRow& row) -> std::optional<double> {
    if (!is_memory_bound(row)) return std::nullopt;
    return copy_share(row, copy_gbps);
  });
  const ShareStats same = share_stats(rows, [](const BenchRow& row) -> std::optional<double> {
    const double share = is_memory_bound(row) ? same_bytes_share(row) : 0;
    if (!(share > 0)) return std::nullopt;
    return share;
  });
  // MemoryBoundSummary's fields in order: the 1 GiB copy's shares, then the same-bytes copy's.
  return {copy.rows, copy.min, copy.min_shape, copy.geomean,
          same.rows, same.min, same.min_shape, same.geomean};
}

std::string format_copy_bandwidth_line(const CopyBandwidth& copy,
                                       const std::vector<BenchRow>& rows) {
  std::string line = fmt::format("copy bandwidth (cudaMemcpy D2D, {}): {:.0f} GB/s",
                                 format_buffer_size(copy.bytes), copy.gbps);
  const MemoryBoundSummary s = memory_bound_summary(rows, copy.gbps);
  if (s.rows == 0)
    return line + fmt::format("; no memory-bound rows (M <= {})", kMemoryBoundMaxM);
  line += fmt::format("; memory-bound rows (M <= {}): min {:.0f}% ({}), geomean {:.0f}% of it",
                      kMemoryBoundMaxM, 100 * s.min_share, s.min_shape, 100 * s.geomean_share);
  if (s.same_bytes_rows > 0)
    line += fmt::format("\nmemory-bound rows against a copy of their own bytes timed like them "
                        "(cudaMemcpy D2D, L2 flushed): min {:.0f}% ({}), geomean {:.0f}% of its "
                        "speed",
                        100 * s.same_bytes_min_share, s.same_bytes_min_shape,
                        100 * s.same_bytes_geomean_share);
  return line;
}

std::string format_same_bytes_table(const std::vector<BenchRow>& rows) {
  std::string out;
  for (const BenchRow& row : rows) {
    if (!is_memory_bound(row) || !row.same_bytes_copy) continue;
    if (out.empty())
      out = fmt::format("{:<18} {:>9} {:>10} {:>10} {:>7}\n", "memory-bound row", "MB",
                        "GEMM us", "copy us", "share");
    out += fmt::format("{:<18} {:>9.1f} {:>10.2f} {:>10.2f} {:>6.0f}%\n", shape_text(row.problem),
                       row.problem.min_bytes() * 1e-6, row.ours.median_us,
                       row.same_bytes_copy->median_us, 100 * same_bytes_share(row));
  }
  return out;
}

}  // namespace autogemm::bench
