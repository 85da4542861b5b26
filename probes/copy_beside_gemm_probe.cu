// The rate of the tensor-parallel peer copies while both GPUs run GEMMs (issue 54): the ring's
// partials and finished bands of all-reduce on 2 GPUs cross beside cuBLAS-sized GEMMs at about
// half the idle copy rate (AUTOGEMM_TP_TRACE: 58.7 MB in ~284 us). Which of these sets it?
//  - the link itself when both directions carry at once;
//  - one copy engine a stream, where two streams (two engines) would move more;
//  - the GEMM's traffic or power (a GEMM against a kernel that only holds the SMs);
//  - the copy pushed by the sender against pulled by the receiver.
// GPUs 0 and 1; each copy set is 4 chunks of 58.7 MB (8192 x 28672 BF16 / 2 / 4, the bands of
// all-reduce 8192 x 28672 x 8192 on 2 GPUs). Beside GEMMs each GPU runs 4 cuBLAS BF16 GEMMs of
// 4096 x 28672 x 4096 (~5 ms), the copies starting with the first.
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o copy_beside_gemm_probe
//        copy_beside_gemm_probe.cu -lcublas
// Run:   NCCL_NVLS_ENABLE=0 ./copy_beside_gemm_probe
//        ./copy_beside_gemm_probe sustain   (GEMMs alone, then beside copies both ways, ~2 s
//        each, stamped, for nvidia-smi's clock and power samples: is it the power cap?)
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "probe_util.cuh"

#define CHECK_BLAS(x)                                                                       \
  do {                                                                                      \
    if ((x) != CUBLAS_STATUS_SUCCESS) {                                                     \
      std::printf("%s:%d cuBLAS error\n", __FILE__, __LINE__);                              \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

constexpr int kGpus = 2;
constexpr int kChunks = 4;
constexpr size_t kChunkBytes = size_t(4096) / kChunks * 28672 * 2;  // 58.7 MB
constexpr int kGemmM = 4096, kGemmN = 28672, kGemmK = 4096, kGemms = 4;

struct Gpu {
  cudaStream_t compute, copy[2];
  cublasHandle_t blas;
  void *a, *b, *d, *send, *recv;
  cudaEvent_t go, gemm_end, copy_start, copy_end[2];
};

enum class Load { idle, gemm, hold };

struct Result {
  float copy_us[kGpus];  // per sender, first copy to last
  float load_us[kGpus];
};

// One scenario: `senders` GPUs push (or, `pull`, have their receiver pull) kChunks chunks to the
// other GPU, each chunk split over `streams` streams, while every GPU runs `load`.
Result run(std::vector<Gpu>& g, Load load, int senders, int streams, bool pull, int hold_khz) {
  for (int i = 0; i < kGpus; ++i) {
    CHECK(cudaSetDevice(i));
    CHECK(cudaDeviceSynchronize());
  }
  for (int i = 0; i < kGpus; ++i) {
    CHECK(cudaSetDevice(i));
    CHECK(cudaEventRecord(g[i].go, g[i].compute));
    const float one = 1.0f, zero = 0.0f;
    if (load == Load::gemm)
      for (int j = 0; j < kGemms; ++j)
        CHECK_BLAS(cublasGemmEx(g[i].blas, CUBLAS_OP_T, CUBLAS_OP_N, kGemmN, kGemmM, kGemmK, &one,
                                g[i].b, CUDA_R_16BF, kGemmK, g[i].a, CUDA_R_16BF, kGemmK, &zero,
                                g[i].d, CUDA_R_16BF, kGemmN, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    else if (load == Load::hold) {
      int sms = 0;
      CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, i));
      hold_sms<<<sms, 128, 227 * 1024, g[i].compute>>>(5ll * hold_khz);
    }
    CHECK(cudaEventRecord(g[i].gemm_end, g[i].compute));
  }
  for (int s = 0; s < senders; ++s) {
    const int to = (s + 1) % kGpus;
    const int issuer = pull ? to : s;  // the GPU whose streams carry the copies
    CHECK(cudaSetDevice(issuer));
    Gpu& q = g[issuer];
    for (int c = 0; c < streams; ++c) CHECK(cudaStreamWaitEvent(q.copy[c], g[issuer].go, 0));
    CHECK(cudaEventRecord(q.copy_start, q.copy[0]));
    for (int c = 1; c < streams; ++c) CHECK(cudaStreamWaitEvent(q.copy[c], q.copy_start, 0));
    const size_t part = kChunkBytes / streams;
    for (int k = 0; k < kChunks; ++k)
      for (int c = 0; c < streams; ++c) {
        const size_t at = k * kChunkBytes + c * part;
        CHECK(cudaMemcpyAsync(static_cast<char*>(g[to].recv) + at,
                              static_cast<const char*>(g[s].send) + at, part, cudaMemcpyDefault,
                              q.copy[c]));
      }
    for (int c = 0; c < streams; ++c) CHECK(cudaEventRecord(q.copy_end[c], q.copy[c]));
  }
  Result r{};
  for (int s = 0; s < senders; ++s) {
    const int issuer = pull ? (s + 1) % kGpus : s;
    CHECK(cudaSetDevice(issuer));
    for (int c = 0; c < streams; ++c)
      r.copy_us[s] = std::max(r.copy_us[s], 1e3f * ms_between(g[issuer].copy_start, g[issuer].copy_end[c]));
  }
  for (int i = 0; i < kGpus; ++i) {
    CHECK(cudaSetDevice(i));
    r.load_us[i] = 1e3f * ms_between(g[i].go, g[i].gemm_end);
  }
  return r;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int main(int argc, char** argv) {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  if (count < kGpus) {
    std::printf("needs 2 GPUs, %d visible\n", count);
    return 1;
  }
  int clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  std::vector<Gpu> g(kGpus);
  const size_t copy_bytes = kChunkBytes * kChunks;
  for (int i = 0; i < kGpus; ++i) {
    CHECK(cudaSetDevice(i));
    const cudaError_t e = cudaDeviceEnablePeerAccess(1 - i, 0);
    if (e != cudaErrorPeerAccessAlreadyEnabled) CHECK(e);
    (void)cudaGetLastError();
    Gpu& q = g[i];
    CHECK(cudaStreamCreateWithFlags(&q.compute, cudaStreamNonBlocking));
    for (auto& s : q.copy) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_BLAS(cublasCreate(&q.blas));
    CHECK_BLAS(cublasSetStream(q.blas, q.compute));
    CHECK(cudaMalloc(&q.a, size_t(kGemmM) * kGemmK * 2));
    CHECK(cudaMalloc(&q.b, size_t(kGemmN) * kGemmK * 2));
    CHECK(cudaMalloc(&q.d, size_t(kGemmM) * kGemmN * 2));
    CHECK(cudaMalloc(&q.send, copy_bytes));
    CHECK(cudaMalloc(&q.recv, copy_bytes));
    CHECK(cudaMemset(q.a, 0x3c, size_t(kGemmM) * kGemmK * 2));  // ~1.1 in bf16: real data
    CHECK(cudaMemset(q.b, 0x3c, size_t(kGemmN) * kGemmK * 2));
    CHECK(cudaMemset(q.send, 0x3c, copy_bytes));
    for (cudaEvent_t* e : {&q.go, &q.gemm_end, &q.copy_start, &q.copy_end[0], &q.copy_end[1]})
      CHECK(cudaEventCreate(e));
    CHECK(cudaFuncSetAttribute(hold_sms, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  }
  struct Case {
    const char* name;
    Load load;
    int senders, streams;
    bool pull;
  };
  const Case cases[] = {
      {"idle, 0 -> 1, 1 stream", Load::idle, 1, 1, false},
      {"idle, both ways, 1 stream each", Load::idle, 2, 1, false},
      {"idle, both ways, 2 streams each", Load::idle, 2, 2, false},
      {"GEMMs alone", Load::gemm, 0, 1, false},
      {"beside GEMMs, 0 -> 1, 1 stream", Load::gemm, 1, 1, false},
      {"beside GEMMs, both ways, 1 stream each", Load::gemm, 2, 1, false},
      {"beside GEMMs, both ways, 2 streams each", Load::gemm, 2, 2, false},
      {"beside GEMMs, both ways, pulled, 1 stream", Load::gemm, 2, 1, true},
      {"beside GEMMs, both ways, pulled, 2 streams", Load::gemm, 2, 2, true},
      {"beside SM-holding kernel, both ways, 1 stream", Load::hold, 2, 1, false},
  };
  run(g, Load::gemm, 2, 1, false, clock_khz);  // warm cuBLAS and the links
  if (argc > 1 && std::strcmp(argv[1], "sustain") == 0) {
    for (int senders : {0, 2, 0, 2}) {
      const double t0 = now_s();
      float load = 0;
      int reps = 0;
      for (; now_s() - t0 < 2.0; ++reps)
        load += run(g, Load::gemm, senders, 1, false, clock_khz).load_us[0];
      std::printf("%.3f-%.3f %s: GEMMs %.0f us a set of 4\n", t0, now_s(),
                  senders ? "beside copies both ways" : "GEMMs alone", load / reps);
    }
    return 0;
  }
  std::printf("%zu MB a sender in %d chunks; GEMMs %d x %dx%dx%d BF16 (cuBLAS) on each GPU\n",
              copy_bytes >> 20, kChunks, kGemms, kGemmM, kGemmN, kGemmK);
  for (const Case& c : cases) {
    std::vector<float> copy, load;
    for (int rep = 0; rep < 5; ++rep) {
      const Result r = run(g, c.load, c.senders, c.streams, c.pull, clock_khz);
      float worst = 0;
      for (int s = 0; s < c.senders; ++s) worst = std::max(worst, r.copy_us[s]);
      copy.push_back(worst);
      load.push_back(std::max(r.load_us[0], r.load_us[1]));
    }
    std::sort(copy.begin(), copy.end());
    std::sort(load.begin(), load.end());
    const float cu = copy[copy.size() / 2], lu = load[load.size() / 2];
    if (c.senders)
      std::printf("%-48s copies %6.0f us (%4.0f GB/s a sender)", c.name, cu, copy_bytes / (cu * 1e3));
    else
      std::printf("%-48s %24s", c.name, "");
    if (c.load != Load::idle) std::printf("  load %6.0f us", lu);
    std::printf("\n");
  }
  return 0;
}
