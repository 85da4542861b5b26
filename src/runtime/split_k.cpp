#include "runtime/split_k.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "autogemm/errors.hpp"
#include "cuda/cuda_check.hpp"

namespace autogemm::runtime {

namespace {

struct Buffer {
  void* pointer = nullptr;
  size_t bytes = 0;
};

struct StreamWorkspace {
  Buffer sync;       // counters, then flags: all zero between calls
  Buffer partials;
};

// Makes `buffer` hold at least `bytes` (zeroed when `zero`), stream-ordered: the old one is freed
// after the kernels already queued that use it.
void grow(Buffer& buffer, size_t bytes, bool zero, cudaStream_t stream, const char* what) {
  if (buffer.bytes >= bytes) return;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cuda_check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  if (capture != cudaStreamCaptureStatusNone)
    throw InvalidArgument("stream", fmt::format("{} (capturing)", static_cast<void*>(stream)),
                          fmt::format("split-K needs {} B of {} on this stream and has {} B; its "
                                      "workspace is allocated outside graph capture: make one "
                                      "split-K call of this size on the stream before capturing",
                                      bytes, what, buffer.bytes));
  const size_t grown_bytes = std::max<size_t>(bytes, 2 * buffer.bytes);
  void* grown = nullptr;
  cuda_check(cudaMallocAsync(&grown, grown_bytes, stream), "cudaMallocAsync(split-K workspace)");
  if (zero)
    cuda_check(cudaMemsetAsync(grown, 0, grown_bytes, stream), "cudaMemsetAsync(split-K counters)");
  if (buffer.pointer != nullptr)
    cuda_check(cudaFreeAsync(buffer.pointer, stream), "cudaFreeAsync(split-K workspace)");
  buffer = {grown, grown_bytes};
}

}  // namespace

SplitKWorkspace split_k_workspace(const SplitKWorkspaceLayout& size, cudaStream_t stream) {
  static std::mutex mutex;
  static std::map<std::pair<int, unsigned long long>, StreamWorkspace> by_stream;
  // The stream's id (not its handle, which a new stream may reuse) keys its workspace, but
  // cudaStreamGetId fails on a capturing stream (cudaErrorStreamCaptureUnsupported, H200, CUDA
  // 13.0): a capture finds the id an uncaptured call on the same handle recorded, and a stream
  // captured before any uncaptured split-K call on it is refused, as growing the workspace
  // inside a graph would be (its allocation would belong to the graph).
  static std::map<std::pair<int, cudaStream_t>, unsigned long long> id_by_handle;
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cuda_check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  unsigned long long stream_id = 0;
  if (capture == cudaStreamCaptureStatusNone)
    cuda_check(cudaStreamGetId(stream, &stream_id), "cudaStreamGetId");
  std::lock_guard<std::mutex> lock(mutex);
  if (capture == cudaStreamCaptureStatusNone) {
    id_by_handle[{device, stream}] = stream_id;
  } else {
    const auto known = id_by_handle.find({device, stream});
    if (known == id_by_handle.end())
      throw InvalidArgument("stream", "capturing",
                            "a split-K GEMM captured into a CUDA graph needs its stream's "
                            "workspace first: run the same call once on that stream before "
                            "capturing (a warm-up)");
    stream_id = known->second;
  }
  StreamWorkspace& w = by_stream[{device, stream_id}];
  if (capture != cudaStreamCaptureStatusNone &&
      (w.sync.bytes < size_t(size.sync_bytes()) || w.partials.bytes < size_t(size.partial_bytes())))
    throw InvalidArgument("stream", "capturing",
                          "this split-K GEMM needs a larger workspace than the stream's: run "
                          "it once on that stream before capturing (a warm-up)");
  grow(w.sync, size_t(size.sync_bytes()), true, stream, "arrival counters and flags");
  grow(w.partials, size_t(size.partial_bytes()), false, stream, "partial sums");
  auto* sync = static_cast<unsigned*>(w.sync.pointer);
  return {sync, sync + size.counters, static_cast<float*>(w.partials.pointer)};
}

}  // namespace autogemm::runtime
