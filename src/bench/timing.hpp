#pragma once
// Timing GPU work the way baselines.md measures cuBLASLt: CUDA events around one call, after
// an L2 flush that sits outside the event pair, warm-up first, median of the rest.
#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "bench/tensors.hpp"

namespace autogemm::bench {

struct TimingStats {
  int samples = 0;
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
  double mean_us = 0;
};

// Median (mean of the two middle values for an even count), min, max and mean. Throws
// InvalidArgument for an empty list.
TimingStats summarize(std::vector<double> times_us);

// Median of `values` (mean of the two middle values for an even count); 0 when empty.
double median(std::vector<double> values);

// Geometric mean of the positive, finite values (others are skipped); 0 when none is left.
double geometric_mean(const std::vector<double>& values);

// Evicts the GPU's L2 between timed calls by reading a buffer larger than any L2 so far
// (H100: 50 MiB, H200: 60 MiB, B200: 126 MiB; 256 MiB is used by baselines.md). Reading (a
// JIT-compiled kernel, kernels/bench/l2_flush.cuh) rather than a memset leaves no dirty lines
// for the timed call to write back.
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t bytes = std::size_t(256) << 20);
  void flush(cudaStream_t stream);

 private:
  DeviceBuffer buffer_;
  DeviceBuffer sink_;
};

// A device-to-device copy of `bytes` (rounded down to 16), the call a row's time is compared
// with: what a kernel that only moves the row's bytes costs, timed in the same loop. Its source
// is filled on `stream` when made; bytes 0 makes an empty copy that enabled() says not to time.
class SameBytesCopy {
 public:
  SameBytesCopy(std::size_t bytes, cudaStream_t stream);
  bool enabled() const { return bytes_ > 0; }
  void operator()(cudaStream_t stream) const;

 private:
  std::size_t bytes_;
  DeviceBuffer source_, destination_;
};

// Runs `call` (after a flush) at least `warmup` times and, when `warmup` > 0, for at least 25 ms,
// then `iters` times each between its own event pair with an L2 flush before every pair; returns
// the `iters` durations in microseconds. The warm-up waits on its calls one round behind; the
// timed calls are synchronised once, at the end. `flusher` may be null (no flush).
std::vector<double> time_calls(const std::function<void(cudaStream_t)>& call, int warmup,
                               int iters, cudaStream_t stream, L2Flusher* flusher);

// The same, for several calls interleaved in blocks of 10 calls of one kind (ours x 10, baseline
// x 10, ours x 10, ...), so that clock and thermal drift affect each alike and every call follows
// one of its own kind (timing.cpp says why not call by call). Result [c][i]: call c, timed call i.
std::vector<std::vector<double>> time_interleaved(
    const std::vector<std::function<void(cudaStream_t)>>& calls, int warmup, int iters,
    cudaStream_t stream, L2Flusher* flusher);

}  // namespace autogemm::bench
