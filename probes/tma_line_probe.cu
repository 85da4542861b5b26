// TMA 2D tile loads of a row-major bf16 matrix (rows x K), no math, as our GEMM's producer
// issues them. Does a row pitch that is not whole 128-byte lines slow the loads, and does any box
// shape, swizzle or promotion avoid it?
// stdin lines: rows K passes box_rows box_cols swizzle(0,32,64,128) promo(0,64,128,256) ctas_per_sm stages flush(0/1)
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a probes/tma_line_probe.cu -o tma_line_probe -lcuda
// Figures: docs/decisions.md, the calibration of rows whose pitch is 16 mod 32 bytes.
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__global__ void __launch_bounds__(32) tma_read(const __grid_constant__ CUtensorMap map, int tiles, int kblocks,
                                               int passes, int box_rows, int box_cols, int stages, int box_bytes) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = (unsigned char*)(((size_t)smem_raw + 1023) & ~(size_t)1023);
  __shared__ __align__(8) unsigned long long bars[16];
  if (threadIdx.x != 0) return;
  for (int s = 0; s < stages; ++s)
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(smem_u32(&bars[s])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  long long n = 0;
  const int items = tiles * passes;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const int tile = item % tiles;
    for (int kb = 0; kb < kblocks; ++kb, ++n) {
      const int slot = (int)(n % stages);
      if (n >= stages) {
        const unsigned phase = (unsigned)((n / stages - 1) & 1);
        asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n@!p bra W;\n}" ::"r"(
                         smem_u32(&bars[slot])), "r"(phase) : "memory");
      }
      asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(smem_u32(&bars[slot])), "r"(box_bytes) : "memory");
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::
                       "r"(smem_u32(smem + (size_t)slot * box_bytes)), "l"(&map), "r"(kb * box_cols), "r"(tile * box_rows),
                   "r"(smem_u32(&bars[slot])) : "memory");
    }
  }
  for (long long m = (n > stages ? n - stages : 0); m < n; ++m) {
    const int slot = (int)(m % stages);
    const unsigned phase = (unsigned)((m / stages) & 1);
    asm volatile("{\n.reg .pred p;\nW2: mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n@!p bra W2;\n}" ::"r"(
                     smem_u32(&bars[slot])), "r"(phase) : "memory");
  }
}

__global__ void flush(const int4* p, long long n, int* sink) {
  int acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) acc ^= p[i].x;
  if (acc == 0x12345678) *sink = acc;
}
__global__ void fill(unsigned* p, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = (unsigned)(i * 2654435761u) | 0x3c003c00u;
}

int main() {
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const long long flush_bytes = 256ll << 20;
  int4* fbuf; int* sink; CK(cudaMalloc(&fbuf, flush_bytes)); CK(cudaMalloc(&sink, 4));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  long long rows, K; int passes, box_rows, box_cols, swz, promo, per_sm, stages, do_flush;
  while (scanf("%lld %lld %d %d %d %d %d %d %d %d", &rows, &K, &passes, &box_rows, &box_cols, &swz, &promo, &per_sm, &stages, &do_flush) == 10) {
    const long long pitch = K * 2, bytes = rows * pitch;
    void* a; CK(cudaMalloc(&a, bytes + 4096));
    fill<<<1024, 256>>>((unsigned*)a, (bytes + 4096) / 4);
    CUtensorMap map;
    cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)pitch};
    cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    cuuint32_t es[2] = {1, 1};
    CUtensorMapSwizzle sw = swz == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : swz == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                            : swz == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
    CUtensorMapL2promotion pr = promo == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : promo == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                : promo == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B : CU_TENSOR_MAP_L2_PROMOTION_NONE;
    CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, a, dims, strides, box, es,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, sw, pr, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { printf("encode failed %d\n", (int)r); CK(cudaFree(a)); continue; }
    const int tiles = (int)((rows + box_rows - 1) / box_rows), kblocks = (int)((K + box_cols - 1) / box_cols);
    const int box_bytes = box_rows * box_cols * 2;
    const int smem = stages * box_bytes + 1024;
    CK(cudaFuncSetAttribute(tma_read, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const int grid = sms * per_sm;
    std::vector<float> t;
    for (int it = 0; it < 25; ++it) {
      if (do_flush) flush<<<sms * 4, 512>>>(fbuf, flush_bytes / 16, sink);
      cudaEventRecord(e0);
      tma_read<<<grid, 32, smem>>>(map, tiles, kblocks, passes, box_rows, box_cols, stages, box_bytes);
      cudaEventRecord(e1);
      CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1);
      if (it >= 5) t.push_back(ms * 1000);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    const double us = t[t.size() / 2];
    const double moved = (double)tiles * box_rows * kblocks * box_cols * 2 * passes;
    printf("rows %6lld K %5lld (pitch %% 128 = %3lld) x%d box %3dx%-3d swz %3d promo %3d %dx/SM s%-2d %s: %8.2f us  %6.2f TB/s\n",
           rows, K, pitch % 128, passes, box_rows, box_cols, swz, promo, per_sm, stages, do_flush ? "cold" : "warm", us, moved / us / 1e6);
    CK(cudaFree(a));
  }
}
