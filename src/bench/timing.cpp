#include "bench/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "autogemm/errors.hpp"
#include "kernels/bench/gpu_hold_params.cuh"
#include "kernels/bench/l2_flush_params.cuh"
#include "cuda/cuda_check.hpp"
#include "runtime/gpu_settle.hpp"
#include "runtime/simple_launch.hpp"

namespace autogemm::bench {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

TimingStats summarize(std::vector<double> times_us) {
  if (times_us.empty()) throw InvalidArgument("times_us", "empty", "need at least one sample");
  std::sort(times_us.begin(), times_us.end());
  TimingStats stats;
  stats.samples = static_cast<int>(times_us.size());
  stats.median_us = median(times_us);
  stats.min_us = times_us.front();
  stats.max_us = times_us.back();
  double sum = 0;
  for (double t : times_us) sum += t;
  stats.mean_us = sum / double(times_us.size());
  return stats;
}

double geometric_mean(const std::vector<double>& values) {
  double log_sum = 0;
  int count = 0;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) continue;
    log_sum += std::log(v);
    ++count;
  }
  return count == 0 ? 0.0 : std::exp(log_sum / count);
}

L2Flusher::L2Flusher(std::size_t bytes) : buffer_(bytes / 16 * 16), sink_(sizeof(unsigned)) {
  // Written once so the reads see defined values; the flush itself only reads.
  cuda_check(cudaMemset(buffer_.get(), 0x5a, buffer_.bytes()), "cudaMemset(L2 flush buffer)");
}

void L2Flusher::flush(cudaStream_t stream) {
  L2FlushParams params{};
  params.data = static_cast<const unsigned*>(buffer_.get());
  params.words = static_cast<long long>(buffer_.bytes() / 4);
  params.sink = static_cast<unsigned*>(sink_.get());
  params.never = 0x5a5a5a5bu;   // the XOR of the buffer's words is 0: never equal
  runtime::SimpleGrid grid;
  grid.grid_x = 1024;   // enough CTAs to keep every SM's loads in flight
  grid.block_x = 256;
  runtime::launch_simple_kernel("bench/l2_flush.cuh", "autogemm_l2_flush", grid, &params, stream,
                                "l2_flush");
}

namespace {

// Owns CUDA events; destroyed without throwing.
class EventPool {
 public:
  explicit EventPool(std::size_t count) {
    events_.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      cudaEvent_t e = nullptr;
      cuda_check(cudaEventCreate(&e), "cudaEventCreate(timing)");
      events_.push_back(e);
    }
  }
  ~EventPool() {
    for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
  }
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// Without a flush between the timed calls the GPU's work per iteration can be shorter than
// the host's cost to enqueue it (7.6 us per call of ours on the H100 machine, 15.6 for
// cuBLASLt's; a decode GEMM with warm L2 takes 5-10 us), and then each event pair would time
// the host. A hold kernel ahead of the loop keeps the stream busy while the host enqueues it
// all: 50 us per call, generous for those host paths, within 1-50 ms.
void hold_stream_for_enqueue(std::size_t calls, cudaStream_t stream) {
  constexpr double kHostUsPerCall = 50;
  GpuHoldParams params{};
  params.nanoseconds = static_cast<unsigned long long>(
      std::clamp(kHostUsPerCall * double(calls), 1e3, 5e4) * 1e3);
  runtime::SimpleGrid grid;
  grid.grid_x = 1;
  grid.block_x = 32;
  runtime::launch_simple_kernel("bench/gpu_hold.cuh", "autogemm_gpu_hold", grid, &params, stream,
                                "gpu_hold");
}

}  // namespace

SameBytesCopy::SameBytesCopy(std::size_t bytes, cudaStream_t stream)
    : bytes_(bytes / 16 * 16), source_(bytes_), destination_(bytes_) {
  if (bytes_ > 0)
    cuda_check(cudaMemsetAsync(source_.get(), 0x5a, bytes_, stream),
               "cudaMemsetAsync(same-bytes copy source)");
}

void SameBytesCopy::operator()(cudaStream_t stream) const {
  cuda_check(cudaMemcpyAsync(destination_.get(), source_.get(), bytes_, cudaMemcpyDeviceToDevice,
                             stream),
             "cudaMemcpyAsync(same-bytes copy)");
}

std::vector<std::vector<double>> time_interleaved(
    const std::vector<std::function<void(cudaStream_t)>>& calls, int warmup, int iters,
    cudaStream_t stream, L2Flusher* flusher) {
  if (warmup < 0) throw InvalidArgument("warmup", std::to_string(warmup), "must be >= 0");
  if (iters < 1) throw InvalidArgument("iters", std::to_string(iters), "must be >= 1");
  // The warm-up runs the calls as the timed loop does (after a flush where it flushes): at least
  // `warmup` rounds and, unless `warmup` is 0 (the ladder's one-call probes of kernels that take
  // seconds), at least runtime::kGpuSettle of GPU time. The host waits for the round before the
  // one it has just enqueued, so the GPU is never idle and the host's clock trails it by one
  // round (long calls stop after `warmup` rounds, as before). After 5 rounds alone the GPU had
  // not settled: with the same cuBLASLt call in both seats (H200, L2 flushed, 50 calls each, 10
  // runs) the first seat, whose blocks start earlier, ran 1.4-11% behind on the process's first
  // shape (1649 x 16 x 16) and -0.2..+1.9% at 2048^3, timed last; reversing every other round's
  // order did not change that. With it: 0.93-1.05 (mean 1.00) and 0.99-1.01. Ours sits in the
  // first seat; the decode suite's ratio moved 1.088-1.092 -> 1.083-1.085 (rows -6..+8%,
  // alternated A/B).
  const auto settle_start = std::chrono::steady_clock::now();
  EventPool round_done(2);
  int rounds = warmup;
  for (int w = 0; w < rounds; ++w) {
    for (const auto& call : calls) {
      if (flusher != nullptr) flusher->flush(stream);
      call(stream);
    }
    cuda_check(cudaEventRecord(round_done[w % 2], stream), "cudaEventRecord(warm-up)");
    if (w > 0)
      cuda_check(cudaEventSynchronize(round_done[(w - 1) % 2]), "cudaEventSynchronize(warm-up)");
    // One more round while the GPU has not yet run them for kGpuSettle.
    if (w == rounds - 1 && std::chrono::steady_clock::now() - settle_start < runtime::kGpuSettle)
      ++rounds;
  }

  const std::size_t num_calls = calls.size();
  // Two events per timed call; all recorded first, read after one synchronisation, so no host
  // round trip sits between the calls.
  EventPool events(2 * num_calls * std::size_t(iters));
  // With a flush the flush kernel (tens of us) already lets the host run ahead.
  if (flusher == nullptr) hold_stream_for_enqueue(num_calls * std::size_t(iters), stream);
  // Each call runs kTimedBlock times in a row, the calls' blocks in turn (ours x 10, baseline x
  // 10, ours x 10, ...), so every timed call follows the flush and, but for a block's first, a
  // call of its own kind, while drift still reaches each call alike. Alternating call by call
  // does not time like calls alike: with the same cuBLASLt call in both seats (H200, L2 flushed,
  // 50 calls each), the first seat took 20-25% longer at 1649 x 16 x 12, 419 x 268 x 108 and
  // 512^3 (ratios 0.80, 0.81, 0.82; 1.24, 1.23, 1.18 with the seats swapped) and 4% at 2048^3;
  // in blocks of 10 the seats agreed within 4% (1.03, 1.00, 1.04, 1.00).
  constexpr int kTimedBlock = 10;
  for (int first = 0; first < iters; first += kTimedBlock)
    for (std::size_t c = 0; c < num_calls; ++c)
      for (int i = first; i < std::min(iters, first + kTimedBlock); ++i) {
        if (flusher != nullptr) flusher->flush(stream);
        const std::size_t slot = 2 * (std::size_t(i) * num_calls + c);
        cuda_check(cudaEventRecord(events[slot], stream), "cudaEventRecord(start)");
        calls[c](stream);
        cuda_check(cudaEventRecord(events[slot + 1], stream), "cudaEventRecord(stop)");
      }
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(timing)");

  std::vector<std::vector<double>> times(num_calls, std::vector<double>(std::size_t(iters)));
  for (int i = 0; i < iters; ++i)
    for (std::size_t c = 0; c < num_calls; ++c) {
      const std::size_t slot = 2 * (std::size_t(i) * num_calls + c);
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, events[slot], events[slot + 1]),
                 "cudaEventElapsedTime");
      times[c][std::size_t(i)] = double(ms) * 1000.0;
    }
  return times;
}

std::vector<double> time_calls(const std::function<void(cudaStream_t)>& call, int warmup,
                               int iters, cudaStream_t stream, L2Flusher* flusher) {
  return time_interleaved({call}, warmup, iters, stream, flusher).front();
}

}  // namespace autogemm::bench
