#include "trace/tile_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "autogemm/errors.hpp"
#include "kernels/sm90/gemm_params.cuh"
#include "cuda/cuda_check.hpp"

namespace autogemm::trace {

namespace {
constexpr int kWords = sm90::kTileTraceWords;
}

const std::string& tile_trace_path() {
  static const std::string path = [] {
    const char* v = std::getenv("AUTOGEMM_TRACE_TILES");
    return std::string(v != nullptr ? v : "");
  }();
  return path;
}

TileTraceBuffer allocate_tile_trace(int64_t ctas, int64_t clusters, int64_t work_items,
                                    cudaStream_t stream) {
  TileTraceBuffer b;
  b.ctas = ctas;
  // A persistent cluster takes every clusters-th work item.
  b.capacity = static_cast<int>((work_items + clusters - 1) / std::max<int64_t>(clusters, 1));
  const size_t bytes = size_t(ctas) * size_t(b.capacity) * kWords * sizeof(unsigned long long);
  void* memory = nullptr;
  cuda_check(cudaMallocAsync(&memory, bytes, stream), "cudaMallocAsync(tile trace)");
  cuda_check(cudaMemsetAsync(memory, 0, bytes, stream), "cudaMemsetAsync(tile trace)");
  b.records = static_cast<unsigned long long*>(memory);
  return b;
}

void write_tile_trace(const TileTraceBuffer& b, const GemmProblem& p,
                      const std::string& kernel_text, cudaStream_t stream) {
  static std::atomic<int> calls{0};
  const int call = calls++;
  std::vector<unsigned long long> host(size_t(b.ctas) * b.capacity * kWords);
  cuda_check(cudaMemcpyAsync(host.data(), b.records, host.size() * sizeof(host[0]),
                             cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync(tile trace)");
  cuda_check(cudaFreeAsync(b.records, stream), "cudaFreeAsync(tile trace)");
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(tile trace)");
  unsigned long long origin = ~0ull;
  for (size_t r = 0; r < host.size(); r += kWords)
    if (host[r] != 0) origin = std::min(origin, host[r]);

  const std::string& path = tile_trace_path();
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr)
    throw InvalidArgument("AUTOGEMM_TRACE_TILES", path, "cannot be opened for appending");
  if (std::ftell(f) == 0)
    fmt::print(f, "call,m,n,k,config,cta,sm,item,m_tile,n_tile,k_first,k_last,partial,"
                  "start_ns,end_ns,first_data_cycles,main_loop_cycles,cycles\n");
  // A fused epilogue's calls are told from the plain GEMM's and the unfused sequence's that
  // bench times beside them on the same configuration by the epilogue's token in the column.
  const std::string config =
      p.epilogue.empty() ? kernel_text : kernel_text + " epi:" + p.epilogue.token();
  const std::string shape = fmt::format("{},{},{},\"{}\"", p.m, p.n, p.k, config);
  for (int64_t cta = 0; cta < b.ctas; ++cta) {
    for (int item = 0; item < b.capacity; ++item) {
      const unsigned long long* r = &host[(size_t(cta) * b.capacity + item) * kWords];
      if (r[0] == 0) break;   // records are written in order; the rest are unused
      fmt::print(f, "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", call, shape, cta, r[3] >> 48,
                 item, r[2] >> 32, r[2] & 0xffffffffu, (r[3] >> 20) & 0xfffff, r[3] & 0xfffff,
                 (r[3] >> 40) & 1, r[0] - origin, r[1] - origin, r[4] >> 32, r[4] & 0xffffffffu,
                 r[5]);
    }
  }
  std::fclose(f);
}

}  // namespace autogemm::trace
