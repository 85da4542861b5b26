// What the tensor-parallel copies cost (issue 54): the copy-engine facts the all-reduce and
// gather plans rest on, on the GPUs of one host.
//  1. A device-local cudaMemcpyAsync (workspace -> D): its rate alone, and whether it runs while
//     a kernel holds every SM (a copy engine does; a copy kernel waits for the SMs).
//  2. One GPU's NVLink egress: 256 MB to 1, 2 or all peers at once, one stream each (are
//     concurrent copies faster than one, as the pushes of a finished D band could be?).
//  3. Every GPU sending to every other at once (the all-reduce's pushes), and a peer copy beside
//     a kernel that streams DRAM on the sender (the GEMM's traffic taking the copies' share).
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o copy_engine_probe copy_engine_probe.cu
// Run:   NCCL_NVLS_ENABLE=0 ./copy_engine_probe        (every visible GPU; 2 or more for 2-3)
#include <algorithm>
#include <vector>

#include "probe_util.cuh"

// Streams `n` uint4 from DRAM, `passes` times (a memory-bound GEMM's traffic).
__global__ void stream_dram(const uint4* p, long long n, int passes, unsigned* sink) {
  unsigned acc = 0;
  for (int k = 0; k < passes; ++k)
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
      const uint4 v = p[i];
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  if (acc == 0x12345678u) *sink = acc;
}

int main() {
  int gpus = 0;
  CHECK(cudaGetDeviceCount(&gpus));
  const size_t bytes = 256ull << 20;
  std::vector<void*> src(gpus), dst(gpus * gpus), local(gpus);
  std::vector<cudaStream_t> streams(gpus * gpus);
  for (int g = 0; g < gpus; ++g) {
    CHECK(cudaSetDevice(g));
    for (int q = 0; q < gpus; ++q)
      if (q != g) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(q, 0);
        if (e != cudaErrorPeerAccessAlreadyEnabled) CHECK(e);
      }
    (void)cudaGetLastError();
    CHECK(cudaMalloc(&src[g], bytes));
    CHECK(cudaMalloc(&local[g], bytes));
    CHECK(cudaMemset(src[g], 0x3c, bytes));
    for (int q = 0; q < gpus; ++q) {
      CHECK(cudaMalloc(&dst[g * gpus + q], bytes));  // on g: what q sends to g
      CHECK(cudaStreamCreateWithFlags(&streams[g * gpus + q], cudaStreamNonBlocking));
    }
    CHECK(cudaFuncSetAttribute(hold_sms, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  }
  CHECK(cudaSetDevice(0));
  int sms = 0, clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  cudaEvent_t e0, e1, e2, e3;
  for (cudaEvent_t* e : {&e0, &e1, &e2, &e3}) CHECK(cudaEventCreate(e));
  cudaStream_t a = streams[0], b = streams[1 % (gpus * gpus)];
  if (gpus == 1) CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));

  // 1. Local copy alone, then beside a kernel holding every SM for ~5 ms.
  const size_t local_bytes = 64ull << 20;
  for (int rep = 0; rep < 2; ++rep) {
    CHECK(cudaEventRecord(e0, a));
    CHECK(cudaMemcpyAsync(local[0], src[0], local_bytes, cudaMemcpyDeviceToDevice, a));
    CHECK(cudaEventRecord(e1, a));
  }
  const float alone = ms_between(e0, e1);
  const long long hold_cycles = 5ll * clock_khz;  // ~5 ms
  CHECK(cudaEventRecord(e2, b));
  hold_sms<<<sms, 128, 227 * 1024, b>>>(hold_cycles);
  CHECK(cudaEventRecord(e3, b));
  CHECK(cudaStreamWaitEvent(a, e2, 0));
  CHECK(cudaEventRecord(e0, a));
  CHECK(cudaMemcpyAsync(local[0], src[0], local_bytes, cudaMemcpyDeviceToDevice, a));
  CHECK(cudaEventRecord(e1, a));
  const float beside = ms_between(e0, e1), hold = ms_between(e2, e3);
  std::printf("local copy 64 MB: alone %.1f us (%.0f GB/s); beside a kernel holding all %d SMs "
              "for %.0f us: %.1f us -> %s\n",
              alone * 1e3, local_bytes / (alone * 1e6), sms, hold * 1e3, beside * 1e3,
              beside < 0.8f * hold ? "a copy engine (ran while the SMs were held)"
                                   : "waited for the SMs (a copy kernel?)");
  if (gpus < 2) return 0;

  // 2. GPU 0's egress to 1, 2, ... peers at once, a stream each.
  for (int peers = 1; peers < gpus; ++peers) {
    float best = 1e9f;
    for (int rep = 0; rep < 3; ++rep) {
      CHECK(cudaSetDevice(0));
      CHECK(cudaEventRecord(e0, streams[0]));
      for (int j = 1; j <= peers; ++j) {
        CHECK(cudaStreamWaitEvent(streams[j], e0, 0));
        CHECK(cudaMemcpyAsync(dst[j * gpus + 0], src[0], bytes, cudaMemcpyDefault, streams[j]));
        CHECK(cudaEventRecord(e1, streams[j]));
        CHECK(cudaStreamWaitEvent(streams[0], e1, 0));
      }
      CHECK(cudaEventRecord(e1, streams[0]));
      best = std::min(best, ms_between(e0, e1));
    }
    std::printf("GPU 0 -> %d peer(s) at once, 256 MB each: %.0f us, %.0f GB/s out of GPU 0\n",
                peers, best * 1e3, peers * bytes / (best * 1e6));
  }

  // 3a. Every GPU to every other at once (each GPU's pushes on their own streams).
  {
    std::vector<cudaEvent_t> start(gpus), end(gpus * gpus);
    for (int g = 0; g < gpus; ++g) {
      CHECK(cudaSetDevice(g));
      CHECK(cudaEventCreate(&start[g]));
      for (int q = 0; q < gpus; ++q) CHECK(cudaEventCreate(&end[g * gpus + q]));
    }
    CHECK(cudaDeviceSynchronize());
    for (int g = 0; g < gpus; ++g) {
      CHECK(cudaSetDevice(g));
      CHECK(cudaDeviceSynchronize());
    }
    float worst = 0;
    for (int g = 0; g < gpus; ++g) {
      CHECK(cudaSetDevice(g));
      CHECK(cudaEventRecord(start[g], streams[g * gpus + g]));
      for (int q = 0; q < gpus; ++q) {
        if (q == g) continue;
        CHECK(cudaStreamWaitEvent(streams[g * gpus + q], start[g], 0));
        CHECK(cudaMemcpyAsync(dst[q * gpus + g], src[g], bytes, cudaMemcpyDefault, streams[g * gpus + q]));
        CHECK(cudaEventRecord(end[g * gpus + q], streams[g * gpus + q]));
      }
    }
    for (int g = 0; g < gpus; ++g)
      for (int q = 0; q < gpus; ++q)
        if (q != g) {
          CHECK(cudaSetDevice(g));
          worst = std::max(worst, ms_between(start[g], end[g * gpus + q]));
        }
    std::printf("every GPU -> every other at once, 256 MB a pair: slowest sender %.0f us, %.0f GB/s "
                "out of each GPU\n", worst * 1e3, (gpus - 1) * bytes / (worst * 1e6));
  }

  // 3b. GPU 0 -> 1 alone, then beside a DRAM-streaming kernel on GPU 0.
  {
    CHECK(cudaSetDevice(0));
    void* big = nullptr;
    unsigned* sink = nullptr;
    const size_t big_bytes = 2ull << 30;
    CHECK(cudaMalloc(&big, big_bytes));
    CHECK(cudaMemset(big, 1, big_bytes));
    CHECK(cudaMalloc(&sink, 64));
    CHECK(cudaEventRecord(e0, streams[1]));
    CHECK(cudaMemcpyAsync(dst[1 * gpus + 0], src[0], bytes, cudaMemcpyDefault, streams[1]));
    CHECK(cudaEventRecord(e1, streams[1]));
    const float copy_alone = ms_between(e0, e1);
    CHECK(cudaEventRecord(e2, streams[0]));
    stream_dram<<<sms * 4, 512, 0, streams[0]>>>(static_cast<const uint4*>(big),
                                                  (long long)(big_bytes / 16), 3, sink);
    CHECK(cudaEventRecord(e3, streams[0]));
    CHECK(cudaStreamWaitEvent(streams[1], e2, 0));
    CHECK(cudaEventRecord(e0, streams[1]));
    CHECK(cudaMemcpyAsync(dst[1 * gpus + 0], src[0], bytes, cudaMemcpyDefault, streams[1]));
    CHECK(cudaEventRecord(e1, streams[1]));
    const float copy_beside = ms_between(e0, e1), stream_ms = ms_between(e2, e3);
    std::printf("GPU 0 -> 1, 256 MB: alone %.0f us (%.0f GB/s); beside a kernel reading DRAM "
                "(%.0f GB/s over %.0f us): %.0f us (%.0f GB/s)\n",
                copy_alone * 1e3, bytes / (copy_alone * 1e6), 3.0 * big_bytes / (stream_ms * 1e6),
                stream_ms * 1e3, copy_beside * 1e3, bytes / (copy_beside * 1e6));
  }
  return 0;
}
