// measure_topology (multi_gpu.hpp): every ordered pair of GPUs timed with cudaMemcpyPeerAsync
// between CUDA events on the sending GPU's stream, the median of several copies.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "autogemm/multi_gpu.hpp"
#include "bench/tensors.hpp"
#include "bench/timing.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/current_device_guard.hpp"
#include "multi/device_list.hpp"
#include "multi/topology.hpp"

namespace autogemm {

namespace {

constexpr int kBandwidthWarmup = 2, kBandwidthIters = 5;
constexpr int kLatencyWarmup = 5, kLatencyIters = 20;

// Peer access enabled for the measurement, disabled again when it ends (only where this code
// enabled it: the caller's own settings stay).
class PeerAccess {
 public:
  ~PeerAccess() {
    for (const auto& [from, to] : enabled_) {
      if (cudaSetDevice(from) == cudaSuccess) (void)cudaDeviceDisablePeerAccess(to);
    }
    cudaGetLastError();
  }
  // True when `from` can map `to`'s memory (and now does).
  bool enable(int from, int to) {
    int can = 0;
    cuda_check(cudaDeviceCanAccessPeer(&can, from, to), "cudaDeviceCanAccessPeer");
    if (!can) return false;
    cuda_check(cudaSetDevice(from), "cudaSetDevice(peer access)");
    const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // already on: the caller's, leave it on
      return true;
    }
    cuda_check(e, "cudaDeviceEnablePeerAccess");
    enabled_.emplace_back(from, to);
    return true;
  }

 private:
  std::vector<std::pair<int, int>> enabled_;
};

// The copy size: 256 MiB, less where a GPU has little free memory (two buffers each, an eighth
// of the free memory at most).
std::size_t copy_bytes(const std::vector<int>& devices) {
  std::size_t bytes = multi::kBandwidthCopyBytes;
  for (int d : devices) {
    cuda_check(cudaSetDevice(d), "cudaSetDevice(topology)");
    std::size_t free_bytes = 0, total = 0;
    cuda_check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo(topology)");
    bytes = std::min(bytes, free_bytes / 8 / (std::size_t(2) << 20) * (std::size_t(2) << 20));
  }
  return std::max<std::size_t>(bytes, std::size_t(2) << 20);
}

double median_us(const std::function<void(cudaStream_t)>& call, int warmup, int iters,
                 cudaStream_t stream) {
  return bench::summarize(bench::time_calls(call, warmup, iters, stream, nullptr)).median_us;
}

Link measure_link(int from, int to, void* source, void* destination, std::size_t bytes,
                  bool peer_access) {
  cuda_check(cudaSetDevice(from), "cudaSetDevice(topology)");
  bench::Stream stream;
  auto copy = [&](std::size_t n) {
    return [=](cudaStream_t s) {
      cuda_check(cudaMemcpyPeerAsync(destination, to, source, from, n, s), "cudaMemcpyPeerAsync");
    };
  };
  const double bandwidth_us = median_us(copy(bytes), kBandwidthWarmup, kBandwidthIters, stream.get());
  const double latency_us =
      median_us(copy(multi::kLatencyCopyBytes), kLatencyWarmup, kLatencyIters, stream.get());
  Link link;
  link.bandwidth_gbps = bandwidth_us > 0 ? double(bytes) / bandwidth_us * 1e-3 : 0;
  link.latency_us = latency_us;
  link.kind = multi::infer_link_kind(link.bandwidth_gbps);
  int rank = -1, supported = 0;
  cuda_check(cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, from, to),
             "cudaDeviceGetP2PAttribute(performance rank)");
  cuda_check(cudaDeviceGetP2PAttribute(&supported, cudaDevP2PAttrAccessSupported, from, to),
             "cudaDeviceGetP2PAttribute(access supported)");
  link.performance_rank = rank;
  link.peer_access = peer_access && supported != 0;
  link.source = fmt::format(
      "measured: cudaMemcpyPeerAsync of {} MiB (median of {}) and of {} bytes (median of {}){}; "
      "{} inferred from the bandwidth ({} {} GB/s)",
      bytes >> 20, kBandwidthIters, multi::kLatencyCopyBytes, kLatencyIters,
      peer_access ? ", peer access on" : ", no peer access (staged through the host)",
      to_string(link.kind), link.kind == LinkKind::nvlink ? ">" : "<=",
      multi::kNvlinkInferenceGbps);
  return link;
}

// Pinned host memory to `device`: the copy a GEMM whose operands live on the host waits for.
Link measure_host_link(int device, const void* host, void* destination, std::size_t bytes) {
  cuda_check(cudaSetDevice(device), "cudaSetDevice(topology)");
  bench::Stream stream;
  auto copy = [=](std::size_t n) {
    return [=](cudaStream_t s) {
      cuda_check(cudaMemcpyAsync(destination, host, n, cudaMemcpyHostToDevice, s),
                 "cudaMemcpyAsync(host to device)");
    };
  };
  Link link;
  link.kind = LinkKind::pcie;
  const double bandwidth_us = median_us(copy(bytes), kBandwidthWarmup, kBandwidthIters, stream.get());
  link.bandwidth_gbps = bandwidth_us > 0 ? double(bytes) / bandwidth_us * 1e-3 : 0;
  link.latency_us =
      median_us(copy(multi::kLatencyCopyBytes), kLatencyWarmup, kLatencyIters, stream.get());
  link.source = fmt::format("measured: cudaMemcpyAsync from pinned host memory, {} MiB (median of "
                            "{}) and {} bytes (median of {})",
                            bytes >> 20, kBandwidthIters, multi::kLatencyCopyBytes, kLatencyIters);
  return link;
}

}  // namespace

Topology measure_topology(const std::vector<int>& devices) {
  multi::check_device_list("devices", devices);
  CurrentDeviceGuard restore;
  const int g = int(devices.size());
  Topology t = multi::uniform_topology(Link{}, g, "");
  t.devices = devices;
  t.measured = true;
  const std::size_t bytes = copy_bytes(devices);
  // One source and one destination buffer per GPU, reused by every pair it is in.
  std::vector<bench::DeviceBuffer> source, destination;
  for (int d : devices) {
    cuda_check(cudaSetDevice(d), "cudaSetDevice(topology)");
    source.emplace_back(bytes);
    destination.emplace_back(bytes);
    cuda_check(cudaMemset(source.back().get(), 0x5a, bytes), "cudaMemset(topology source)");
  }
  PeerAccess peers;
  for (int i = 0; i < g; ++i)
    for (int j = 0; j < g; ++j) {
      if (i == j) continue;
      const bool peer = peers.enable(devices[i], devices[j]);
      t.links[i][j] = measure_link(devices[i], devices[j], source[i].get(), destination[j].get(),
                                   bytes, peer);
    }
  {
    void* host = nullptr;
    cuda_check(cudaMallocHost(&host, bytes), "cudaMallocHost(topology)");
    std::unique_ptr<void, void (*)(void*)> held(host, [](void* p) { (void)cudaFreeHost(p); });
    std::memset(host, 0x5a, bytes);
    for (int i = 0; i < g; ++i)
      t.host_links[i] = measure_host_link(devices[i], host, destination[i].get(), bytes);
  }
  t.description = fmt::format(
      "{} GPUs ({}), every ordered pair measured with cudaMemcpyPeerAsync, and the host's links",
      g, multi::device_list_text(devices));
  return t;
}

}  // namespace autogemm
