#include "runtime/split_k.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "autogemm/errors.hpp"
#include "runtime/cuda_check.hpp"

namespace autogemm::runtime {

SplitKWorkspaceSize split_k_workspace_size(const GemmProblem& p, const GemmConfig& c) {
  const auto padded_tiles = [](int64_t extent, int block, int cluster) {
    const int64_t tiles = (extent + block - 1) / block;
    return (tiles + cluster - 1) / cluster * cluster;
  };
  SplitKWorkspaceSize size;
  size.counters = padded_tiles(p.m, c.block_m, c.cluster_m) *
                  padded_tiles(p.n, c.block_n, c.cluster_n) * c.num_consumers;
  size.partial_floats =
      size.counters * c.split_k * int64_t(c.block_m / c.num_consumers) * c.block_n;
  return size;
}

namespace {

struct Counters {
  unsigned* pointer = nullptr;
  int64_t capacity = 0;
};

// The stream's counters, at least `needed` of them. Kernels on one stream run one after the
// other, and each leaves its counters zero, so the stream's calls can share them; calls on
// other streams may run at the same time and get their own.
unsigned* stream_counters(int64_t needed, cudaStream_t stream) {
  static std::mutex mutex;
  static std::map<std::pair<int, unsigned long long>, Counters> by_stream;
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  unsigned long long stream_id = 0;
  cuda_check(cudaStreamGetId(stream, &stream_id), "cudaStreamGetId");
  std::lock_guard<std::mutex> lock(mutex);
  Counters& counters = by_stream[{device, stream_id}];
  if (counters.capacity >= needed) return counters.pointer;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cuda_check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  if (capture != cudaStreamCaptureStatusNone)
    throw InvalidArgument("stream", fmt::format("{} (capturing)", static_cast<void*>(stream)),
                          fmt::format("split-K needs {} arrival counters on this stream and has {}; "
                                      "they are allocated outside graph capture: make one "
                                      "split-K call of this size on the stream before capturing",
                                      needed, counters.capacity));
  // Stream-ordered: the old buffer is freed after the kernels already queued that use it.
  const int64_t capacity = std::max<int64_t>(needed, 4096);
  unsigned* grown = nullptr;
  cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&grown), size_t(capacity) * sizeof(unsigned),
                             stream),
             "cudaMallocAsync(split-K counters)");
  cuda_check(cudaMemsetAsync(grown, 0, size_t(capacity) * sizeof(unsigned), stream),
             "cudaMemsetAsync(split-K counters)");
  if (counters.pointer != nullptr)
    cuda_check(cudaFreeAsync(counters.pointer, stream), "cudaFreeAsync(split-K counters)");
  counters = {grown, capacity};
  return grown;
}

}  // namespace

SplitKWorkspace acquire_split_k_workspace(const GemmProblem& p, const GemmConfig& c,
                                          cudaStream_t stream) {
  const SplitKWorkspaceSize size = split_k_workspace_size(p, c);
  SplitKWorkspace w;
  w.counters = stream_counters(size.counters, stream);
  cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&w.partials),
                             size_t(size.partial_floats) * sizeof(float), stream),
             "cudaMallocAsync(split-K partial sums)");
  return w;
}

void release_split_k_workspace(const SplitKWorkspace& w, cudaStream_t stream) {
  cuda_check(cudaFreeAsync(w.partials, stream), "cudaFreeAsync(split-K partial sums)");
}

}  // namespace autogemm::runtime
