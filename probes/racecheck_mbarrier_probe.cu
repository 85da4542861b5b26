// A correct mbarrier ring, for asking compute-sanitizer racecheck whether it follows mbarrier
// ordering (scripts/gpu-sanitize.sh builds and runs it with nvcc). One producer warp writes a
// slot of 32 floats with plain shared stores and arrives on the stage's full barrier (32
// arrivals); one consumer warp waits on it, reads the slot, and (after __syncwarp) its lane 0
// arrives on the stage's empty barrier, which the producer waits on before writing the slot
// again: the protocol of the GEMM kernel's scale slots (kernels/sm90/fp8_scale_copy.cuh).
// Exit 0 when the sums are right. Build: nvcc -gencode arch=compute_90a,code=sm_90a.
#include <cstdio>

constexpr int kStages = 2, kRounds = 16;

__device__ void init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(unsigned(__cvta_generic_to_shared(bar))),
               "r"(count));
}
__device__ void arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared.b64 _, [%0];" ::"r"(
                   unsigned(__cvta_generic_to_shared(bar)))
               : "memory");
}
__device__ void wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n wait_%=:\n"
      " mbarrier.try_wait.parity.shared.b64 done, [%0], %1;\n"
      " @!done bra wait_%=;\n}" ::"r"(unsigned(__cvta_generic_to_shared(bar))),
      "r"(parity)
      : "memory");
}

__global__ void ring(float* out) {
  __shared__ float slot[kStages][32];
  __shared__ unsigned long long full[kStages], empty[kStages];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages; ++s) {
      init(&full[s], 32);
      init(&empty[s], 1);
    }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  float sum = 0;
  for (int round = 0; round < kRounds; ++round) {
    const int s = round % kStages;
    const unsigned phase = (round / kStages) & 1;
    if (warp == 0) {   // producer
      wait(&empty[s], phase ^ 1);
      slot[s][lane] = float(round * 32 + lane);
      arrive(&full[s]);
    } else {           // consumer
      wait(&full[s], phase);
      sum += slot[s][lane];
      __syncwarp();
      if (lane == 0) arrive(&empty[s]);
    }
  }
  if (warp == 1) out[lane] = sum;
}

int main() {
  float* out = nullptr;
  cudaMalloc(&out, 32 * sizeof(float));
  ring<<<1, 64>>>(out);
  float host[32];
  if (cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess) return 2;
  for (int lane = 0; lane < 32; ++lane) {
    float want = 0;
    for (int round = 0; round < kRounds; ++round) want += float(round * 32 + lane);
    if (host[lane] != want) {
      std::printf("lane %d: %f, want %f\n", lane, host[lane], want);
      return 1;
    }
  }
  std::printf("mbarrier ring correct\n");
  return 0;
}
