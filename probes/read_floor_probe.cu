// The floor of a memory-bound GEMM row: the fastest this GPU reads the row's bytes once, with
// nothing else to do (issue 21: is "1.15x cuBLASLt on M <= 32" reachable at all?). For each
// "m n k bytes_per_element" line on stdin it reads (M + N) x K inputs plus M x N outputs' worth
// of bytes with several read strategies and prints the best median, timed like `autogemm bench`:
// an L2 flush (a read of 256 MiB with plain loads, as the bench's) before every call, outside the
// CUDA event pair; 5 warm-up and
// 30 timed calls; median.
// Strategies: 16-byte loads (ld.global.nc.L1::no_allocate) grid-stride or a contiguous span per
// CTA, 4/8/16 loads in flight per thread, 1-8 CTAs per SM; and TMA bulk copies
// (cp.async.bulk, PTX ISA 8.0) of 16-32 KB into a shared-memory ring per CTA.
// Environment: PROBE_ALL=1 lists every strategy; PROBE_FLUSH_MB sets the flush (default 256);
// PROBE_AROW=1 adds the ring with no A row and with a distinct A row per CTA (the shared row is
// an L2 hot spot); PROBE_TRACE=1 re-runs the ring and bulk-row strategies with a per-CTA
// timeline (%globaltimer: entry, first stage, exit), printed as "#T" lines.
// PROBE_FILL=const fills the data with one byte (0x5a, as before 2026-11-25 (5)); the default is
// hash-random words. PROBE_ROTATE=W reads W disjoint 128 MiB windows in turn, one per call, so
// no call finds its bytes left in the L2 by an earlier one. PROBE_CUBLAS=1 also times cuBLASLt's
// BF16 GEMM of the row (A and B in the same window, D apart) under the same flush and rotation,
// printed as "#C" lines.
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o read_floor_probe read_floor_probe.cu -lcublasLt
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e = (x);                                                                  \
    if (e != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

#define CHECK_LT(x)                                                                       \
  do {                                                                                    \
    cublasStatus_t st = (x);                                                              \
    if (st != CUBLAS_STATUS_SUCCESS) {                                                    \
      std::fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, int(st));       \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// Byte offset of the window the next call reads (PROBE_ROTATE); 0 without rotation.
static long long g_shift = 0;

// The L2 flush before every timed call: a read of the flush buffer with plain loads, as autogemm
// bench's (src/kernels/bench/l2_flush.cuh). Loads marked .nc (the read_grid_stride path, used by
// this probe's flush before 2026-11-25 (5); PROBE_FLUSH=nc) leave much of a row that fits the L2
// there: the L2 seems to give up their lines first.
__global__ void flush_plain(const uint4* data, long long vectors, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < vectors;
       i += (long long)gridDim.x * blockDim.x) {
    const uint4 v = data[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// Hash-random words, so no part of the memory system sees constant data.
__global__ void fill_hash(unsigned* p, long long words, unsigned seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned x = unsigned(i) * 0x9e3779b9u ^ seed ^ unsigned(i >> 32);
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    // BF16 halves with exponents near 1.0 (no NaN or Inf for the GEMM), still random bits.
    p[i] = (x & 0x807f807fu) | 0x3f003f00u;
  }
}

__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Timeline trace (PROBE_TRACE=1): thread 0 of each CTA writes entry, first data, exit
// (%globaltimer ns) to g_trace[3 * blockIdx.x ...] when g_trace is set.
__device__ unsigned long long* g_trace = nullptr;
__device__ __forceinline__ unsigned long long timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void trace_mark(int slot, unsigned long long t) {
  if (g_trace != nullptr && threadIdx.x == 0) g_trace[3 * blockIdx.x + slot] = t;
}

// Grid-stride: iteration i of thread t reads vectors t + (i * kInFlight + j) * stride.
template <int kInFlight>
__global__ void read_grid_stride(const uint4* data, long long vectors, unsigned* sink) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  unsigned acc = 0;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (kInFlight - 1) * stride < vectors; i += kInFlight * stride) {
    uint4 v[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) v[j] = load_stream(data + i + j * stride);
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < vectors; i += stride) {
    const uint4 v = load_stream(data + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// A contiguous span per CTA, read block-wide kInFlight vectors per thread at a time.
template <int kInFlight>
__global__ void read_spans(const uint4* data, long long vectors, unsigned* sink) {
  const long long per_cta = (vectors + gridDim.x - 1) / gridDim.x;
  const long long begin = blockIdx.x * per_cta;
  const long long end = min(vectors, begin + per_cta);
  unsigned acc = 0;
  long long i = begin + threadIdx.x;
  for (; i + (kInFlight - 1) * (long long)blockDim.x < end; i += kInFlight * blockDim.x) {
    uint4 v[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) v[j] = load_stream(data + i + j * blockDim.x);
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < end; i += blockDim.x) {
    const uint4 v = load_stream(data + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Spins until the barrier's phase of `parity` has completed (PTX ISA mbarrier.try_wait.parity).
__device__ __forceinline__ void wait_parity(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
}

// TMA bulk copies of `chunk` bytes into a ring of kStages slots; thread 0 issues, every warp's
// lane reads one word of each landed slot (so the copy is consumed), then the slot is refilled.
template <int kStages>
__global__ void read_bulk(const unsigned char* data, long long bytes, int chunk, unsigned* sink) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) unsigned long long full[kStages];
  const long long chunks = (bytes + chunk - 1) / chunk;
  const long long per_cta = (chunks + gridDim.x - 1) / gridDim.x;
  const long long first = blockIdx.x * per_cta;
  const long long last = min(chunks, first + per_cta);
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages; ++s)
      asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(smem_addr(&full[s])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  auto issue = [&](long long c) {
    const int s = int((c - first) % kStages);
    const long long offset = c * chunk;
    const unsigned size = unsigned(min((long long)chunk, bytes - offset));
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(smem_addr(&full[s])),
                 "r"(size)
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smem_addr(ring + s * chunk)),
        "l"(data + offset), "r"(size), "r"(smem_addr(&full[s]))
        : "memory");
  };
  if (threadIdx.x == 0)
    for (long long c = first; c < min(last, first + kStages); ++c) issue(c);
  unsigned acc = 0;
  for (long long c = first; c < last; ++c) {
    const int s = int((c - first) % kStages);
    const unsigned parity = unsigned(((c - first) / kStages) & 1);
    wait_parity(&full[s], parity);
    acc ^= reinterpret_cast<const unsigned*>(ring + s * chunk)[threadIdx.x];
    __syncthreads();   // every thread read the slot before it is refilled
    if (threadIdx.x == 0 && c + kStages < last) issue(c + kStages);
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}


// The decode kernel's own access pattern, without its arithmetic: B as rows of `row_bytes`,
// tiles of 16 rows, units of kRun bytes of each of a tile's rows; lane (g = lane / 4, p = lane %
// 4) reads rows g and g + 8, 16 bytes at p * 16 of every 64 (mma.sync's fragment rows). Two
// units in flight per warp. kCtaInterleave: a CTA's range of units is walked by its four warps
// in turn (a CTA reads 4 x kRun contiguous bytes of each row at a time); otherwise every warp
// takes its own range.
template <int kRun, bool kCtaInterleave, int kLanesPerRow = 4>
__global__ void read_tiles(const unsigned char* data, long long rows, long long row_bytes,
                           unsigned* sink) {
  // kLanesPerRow 4: mma.sync's fragment rows (8 rows x 64 B an instruction); 8, 16, 32: each
  // instruction reads 32 / kLanesPerRow rows x kLanesPerRow x 16 contiguous bytes (a transpose
  // through shared memory would then make the fragments).
  static_assert(kRun % (kLanesPerRow * 16) == 0, "whole instructions per row");
  constexpr int kChunks = kRun / 64;
  constexpr int kRowsPerLoad = 32 / kLanesPerRow;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const long long steps = row_bytes / kRun, units = rows / 16 * steps;
  long long begin, end, stride;
  if (kCtaInterleave) {
    begin = blockIdx.x * units / gridDim.x + warp;
    end = (blockIdx.x + 1) * units / gridDim.x;
    stride = 4;
  } else {
    const long long w = blockIdx.x * 4ll + warp, warps = gridDim.x * 4ll;
    begin = w * units / warps;
    end = (w + 1) * units / warps;
    stride = 1;
  }
  auto load = [&](long long u, uint4 (&v)[2][kChunks]) {
    const long long tile = u / steps, step = u % steps;
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        // Load i = r * kChunks + c of the lane's 2 x kChunks: rows 16 over kRowsPerLoad each.
        const int i = r * kChunks + c;
        const int per_row = kRun / (kLanesPerRow * 16);   // loads per row
        const int row = (i / per_row) * kRowsPerLoad + lane / kLanesPerRow;
        const int col = (i % per_row) * kLanesPerRow * 16 + (lane % kLanesPerRow) * 16;
        v[r][c] = kLanesPerRow == 4
                      ? load_stream(reinterpret_cast<const uint4*>(
                            data + (tile * 16 + lane / 4 + 8 * r) * row_bytes + step * kRun +
                            c * 64 + (lane % 4) * 16))
                      : load_stream(reinterpret_cast<const uint4*>(
                            data + (tile * 16 + row) * row_bytes + step * kRun + col));
      }
  };
  unsigned acc = 0;
  uint4 cur[2][kChunks], nxt[2][kChunks];
  if (begin < end) load(begin, cur);
  for (long long u = begin; u < end; u += stride) {
    if (u + stride < end) load(u + stride, nxt);
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int c = 0; c < kChunks; ++c) acc ^= cur[r][c].x ^ cur[r][c].y ^ cur[r][c].z ^ cur[r][c].w;
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int c = 0; c < kChunks; ++c) cur[r][c] = nxt[r][c];
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// Per-row bulk copies into a shared-memory ring: a stage is 16 rows x `run` bytes of one tile,
// lanes 0-15 of warp 0 each copy one row (cp.async.bulk, 1-D), counted on the stage's barrier.
// The CTA's range of units (tile, step) is contiguous, as in read_tiles.
template <int kStages>
__global__ void read_bulk_rows(const unsigned char* data, long long rows, long long row_bytes,
                               int run, unsigned* sink) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) unsigned long long full[kStages];
  trace_mark(0, timer_ns());
  const long long steps = row_bytes / run, units = rows / 16 * steps;
  const long long first = blockIdx.x * units / gridDim.x, last = (blockIdx.x + 1) * units / gridDim.x;
  const int stage_bytes = 16 * run;
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages; ++s)
      asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(smem_addr(&full[s])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  auto issue = [&](long long u) {
    const int s = int((u - first) % kStages);
    const long long tile = u / steps, step = u % steps;
    if (threadIdx.x == 0)
      asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(smem_addr(&full[s])),
                   "r"(stage_bytes)
                   : "memory");
    __syncwarp();
    if (threadIdx.x < 16)
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
              smem_addr(ring + s * stage_bytes + threadIdx.x * run)),
          "l"(data + (tile * 16 + threadIdx.x) * row_bytes + step * run), "r"(run),
          "r"(smem_addr(&full[s]))
          : "memory");
  };
  if (threadIdx.x < 32)
    for (long long u = first; u < min(last, first + kStages); ++u) issue(u);
  unsigned acc = 0;
  for (long long u = first; u < last; ++u) {
    const int s = int((u - first) % kStages);
    const unsigned parity = unsigned(((u - first) / kStages) & 1);
    wait_parity(&full[s], parity);
    if (u == first) trace_mark(1, timer_ns());
    acc ^= reinterpret_cast<const unsigned*>(ring + s * stage_bytes)[threadIdx.x];
    __syncthreads();
    if (threadIdx.x < 32 && u + kStages < last) issue(u + kStages);
  }
  if (acc == 0x9e3779b9u) *sink = acc;
  trace_mark(2, timer_ns());
}

// The bulk-copy decode kernel's ring protocol without its arithmetic (branch decode-bulk-ring):
// a copy warp and four consumer warps, full and empty barriers per stage, a stage = 16 B rows +
// one A row of `run` bytes (the A row from a small buffer, as A is L2-resident), CTAs taking
// contiguous ranges of (tile, stage) units; kTileSync adds the kernel's two 128-thread named
// barriers at every tile end (its warps' sums).
// kARow: 1 = every CTA copies the same A row (the kernel's case at M = 1), 0 = no A row,
// 2 = a distinct A row per CTA (no L2 hot spot).
template <int kStages, bool kTileSync, int kARow = 1>
__global__ void read_ring(const unsigned char* data, const unsigned char* a_row, long long rows,
                          long long row_bytes, int run, unsigned* sink) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) unsigned long long full[kStages], empty[kStages];
  trace_mark(0, timer_ns());
  const long long steps = row_bytes / run, units = rows / 16 * steps;
  const long long first = blockIdx.x * units / gridDim.x, last = (blockIdx.x + 1) * units / gridDim.x;
  const int pitch = run + 16, stage_bytes = 17 * pitch;
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages; ++s) {
      asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(smem_addr(&full[s])));
      asm volatile("mbarrier.init.shared.b64 [%0], 4;" ::"r"(smem_addr(&empty[s])));
    }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 4) {
    for (long long u = first; u < last; ++u) {
      const long long i = u - first;
      const int s = int(i % kStages);
      if (i >= kStages) wait_parity(&empty[s], unsigned((i / kStages - 1) & 1));
      const long long tile = u / steps, step = u % steps;
      if (lane == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(smem_addr(&full[s])),
                     "r"((kARow == 0 ? 16 : 17) * run)
                     : "memory");
      __syncwarp();
      if (lane < (kARow == 0 ? 16 : 17)) {
        const unsigned char* src = lane < 16 ? data + (tile * 16 + lane) * row_bytes + step * run
                                             : a_row + (kARow == 2 ? blockIdx.x * row_bytes : 0) + step * run;
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                smem_addr(ring + s * stage_bytes + lane * pitch)),
            "l"(src), "r"(run), "r"(smem_addr(&full[s]))
            : "memory");
      }
    }
    return;
  }
  unsigned acc = 0;
  for (long long u = first; u < last; ++u) {
    const long long i = u - first;
    const int s = int(i % kStages);
    wait_parity(&full[s], unsigned((i / kStages) & 1));
    if (i == 0) trace_mark(1, timer_ns());
    acc ^= reinterpret_cast<const unsigned*>(ring + s * stage_bytes + (threadIdx.x % 17) * pitch)[lane];
    __syncwarp();
    if (lane == 0) asm volatile("mbarrier.arrive.shared.b64 _, [%0];" ::"r"(smem_addr(&empty[s])) : "memory");
    if (kTileSync && ((u + 1) % steps == 0 || u + 1 == last)) {
      asm volatile("bar.sync 1, 128;" ::: "memory");
      asm volatile("bar.sync 1, 128;" ::: "memory");
    }
  }
  if (acc == 0x9e3779b9u) *sink = acc;
  trace_mark(2, timer_ns());
}

struct Variant {
  std::string name;
  std::function<void(cudaStream_t)> launch;
};

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const long long max_bytes = 512ll << 20;
  unsigned char* data = nullptr;
  unsigned char* flush = nullptr;
  unsigned* sink = nullptr;
  const long long flush_bytes = (std::getenv("PROBE_FLUSH_MB") ? std::atoll(std::getenv("PROBE_FLUSH_MB")) : 256ll) << 20;
  CHECK(cudaMalloc(&data, max_bytes));
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMalloc(&sink, 4));
  const unsigned char* flush_a = nullptr;   // set below: one "A row" source
  CHECK(cudaMemset(data, 0x5a, max_bytes));
  const bool const_fill = std::getenv("PROBE_FILL") && std::string(std::getenv("PROBE_FILL")) == "const";
  if (!const_fill) fill_hash<<<1024, 256>>>(reinterpret_cast<unsigned*>(data), max_bytes / 4, 12345u);
  const long long window = 128ll << 20;
  const int windows = std::getenv("PROBE_ROTATE") ? std::max(1, std::min(int(max_bytes / window), std::atoi(std::getenv("PROBE_ROTATE")))) : 1;
  const bool use_cublas = std::getenv("PROBE_CUBLAS") != nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  void* d_out = nullptr;
  if (use_cublas) {
    CHECK_LT(cublasLtCreate(&lt));
    CHECK(cudaMalloc(&workspace, 64u << 20));
    CHECK(cudaMalloc(&d_out, 64u << 20));
  }
  CHECK(cudaMemset(flush, 0x3c, flush_bytes));
  flush_a = flush;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  const bool nc_flush = std::getenv("PROBE_FLUSH") && std::string(std::getenv("PROBE_FLUSH")) == "nc";
  auto flush_l2 = [&] {
    if (nc_flush)
      read_grid_stride<8><<<sms * 4, 512, 0, stream>>>(reinterpret_cast<const uint4*>(flush), flush_bytes / 16, sink);
    else
      flush_plain<<<sms * 8, 256, 0, stream>>>(reinterpret_cast<const uint4*>(flush), flush_bytes / 16, sink);
  };
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int stages : {4, 8})
    for (int chunk : {16384, 32768}) {
      const int smem = stages * chunk;
      if (smem > 227 * 1024) continue;
      if (stages == 4)
        CHECK(cudaFuncSetAttribute(read_bulk<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      else
        CHECK(cudaFuncSetAttribute(read_bulk<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    }
  CHECK(cudaFuncSetAttribute(read_bulk_rows<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024));
  CHECK(cudaFuncSetAttribute(read_ring<2, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  CHECK(cudaFuncSetAttribute(read_ring<2, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  CHECK(cudaFuncSetAttribute(read_ring<3, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  CHECK(cudaFuncSetAttribute(read_ring<3, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  CHECK(cudaFuncSetAttribute(read_ring<2, false, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  CHECK(cudaFuncSetAttribute(read_ring<3, false, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  CHECK(cudaFuncSetAttribute(read_ring<2, false, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  CHECK(cudaFuncSetAttribute(read_ring<3, false, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  CHECK(cudaFuncSetAttribute(read_bulk_rows<6>, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024));
  CHECK(cudaFuncSetAttribute(read_bulk_rows<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024));
  std::printf("# %s, %d SMs\n", prop.name, sms);
  std::printf("m,n,k,elem_bytes,bytes,floor_us,floor_gbps,variant,second_us,second_variant\n");
  long long m, n, k;
  int elem;
  while (std::scanf("%lld %lld %lld %d", &m, &n, &k, &elem) == 4) {
    const long long bytes = std::min(max_bytes, ((m + n) * k * elem + m * n * 2) / 16 * 16);
    const long long vectors = bytes / 16;
    const uint4* v = reinterpret_cast<const uint4*>(data);
    const bool rotate = windows > 1 && bytes <= window;
    std::vector<Variant> variants;
    for (int per_sm : {1, 2, 4, 8})
      for (int threads : {256, 512}) {
        const int grid = sms * per_sm;
        if (threads * per_sm > 2048) continue;
        const std::string tag = "x" + std::to_string(per_sm) + " t" + std::to_string(threads);
        variants.push_back({"stride4 " + tag, [=](cudaStream_t s) { read_grid_stride<4><<<grid, threads, 0, s>>>(v + g_shift / 16, vectors, sink); }});
        variants.push_back({"stride8 " + tag, [=](cudaStream_t s) { read_grid_stride<8><<<grid, threads, 0, s>>>(v + g_shift / 16, vectors, sink); }});
        variants.push_back({"stride16 " + tag, [=](cudaStream_t s) { read_grid_stride<16><<<grid, threads, 0, s>>>(v + g_shift / 16, vectors, sink); }});
        variants.push_back({"span8 " + tag, [=](cudaStream_t s) { read_spans<8><<<grid, threads, 0, s>>>(v + g_shift / 16, vectors, sink); }});
      }
    for (int per_sm : {1, 2})
      for (int chunk : {16384, 32768}) {
        const int grid = sms * per_sm;
        const std::string tag = " x" + std::to_string(per_sm) + " " + std::to_string(chunk / 1024) + "K";
        if (4 * chunk * per_sm <= 227 * 1024)
          variants.push_back({"bulk4" + tag, [=](cudaStream_t s) { read_bulk<4><<<grid, 256, 4 * chunk, s>>>(data + g_shift, bytes, chunk, sink); }});
        if (8 * chunk * per_sm <= 227 * 1024)
          variants.push_back({"bulk8" + tag, [=](cudaStream_t s) { read_bulk<8><<<grid, 256, 8 * chunk, s>>>(data + g_shift, bytes, chunk, sink); }});
      }
    // The decode kernel's pattern on B alone (N rows of K elements), when a row holds whole
    // 512-byte runs.
    const long long row_bytes = k * elem;
    if (n % 16 == 0 && row_bytes % 512 == 0 && n * row_bytes <= max_bytes) {
      const unsigned char* d = data;
      for (int per_sm : {2, 3, 4, 6}) {
        const int grid = sms * per_sm;
        const std::string tag = " x" + std::to_string(per_sm);
        variants.push_back({"tiles128 warp" + tag, [=](cudaStream_t s) { read_tiles<128, false><<<grid, 128, 0, s>>>(d + g_shift, n, row_bytes, sink); }});
        variants.push_back({"tiles256 warp" + tag, [=](cudaStream_t s) { read_tiles<256, false><<<grid, 128, 0, s>>>(d + g_shift, n, row_bytes, sink); }});
        variants.push_back({"tiles512 warp" + tag, [=](cudaStream_t s) { read_tiles<512, false><<<grid, 128, 0, s>>>(d + g_shift, n, row_bytes, sink); }});
        variants.push_back({"tiles128 cta" + tag, [=](cudaStream_t s) { read_tiles<128, true><<<grid, 128, 0, s>>>(d + g_shift, n, row_bytes, sink); }});
        variants.push_back({"tiles256 cta" + tag, [=](cudaStream_t s) { read_tiles<256, true><<<grid, 128, 0, s>>>(d + g_shift, n, row_bytes, sink); }});
        variants.push_back({"tiles512 cta" + tag, [=](cudaStream_t s) { read_tiles<512, true><<<grid, 128, 0, s>>>(d + g_shift, n, row_bytes, sink); }});
        variants.push_back({"rows256 l16" + tag, [=](cudaStream_t s) { read_tiles<256, false, 16><<<grid, 128, 0, s>>>(d + g_shift, n, row_bytes, sink); }});
        variants.push_back({"rows512 l32" + tag, [=](cudaStream_t s) { read_tiles<512, false, 32><<<grid, 128, 0, s>>>(d + g_shift, n, row_bytes, sink); }});
        variants.push_back({"rows512 l16" + tag, [=](cudaStream_t s) { read_tiles<512, false, 16><<<grid, 128, 0, s>>>(d + g_shift, n, row_bytes, sink); }});
        variants.push_back({"rows256 l8" + tag, [=](cudaStream_t s) { read_tiles<256, false, 8><<<grid, 128, 0, s>>>(d + g_shift, n, row_bytes, sink); }});
      }
      // The bulk-copy decode kernel's ring protocol, 2 and 3 stages, 1 and 2 CTAs an SM.
      for (int per_sm : {1, 2})
        for (int run : {1024, 2048})
          for (int stages : {2, 3}) {
            const int smem = stages * 17 * (run + 16);
            if (smem * per_sm > 220 * 1024 || row_bytes % run != 0) continue;   // whole runs only
            const int grid = sms * per_sm;
            const std::string tag = std::to_string(run) + " x" + std::to_string(per_sm) + " s" + std::to_string(stages);
            const unsigned char* a_row = flush_a;
            if (stages == 2) {
              variants.push_back({"ring" + tag, [=](cudaStream_t s) { read_ring<2, false><<<grid, 160, smem, s>>>(d + g_shift, a_row, n, row_bytes, run, sink); }});
              variants.push_back({"ringsync" + tag, [=](cudaStream_t s) { read_ring<2, true><<<grid, 160, smem, s>>>(d + g_shift, a_row, n, row_bytes, run, sink); }});
            } else {
              variants.push_back({"ring" + tag, [=](cudaStream_t s) { read_ring<3, false><<<grid, 160, smem, s>>>(d + g_shift, a_row, n, row_bytes, run, sink); }});
              variants.push_back({"ringsync" + tag, [=](cudaStream_t s) { read_ring<3, true><<<grid, 160, smem, s>>>(d + g_shift, a_row, n, row_bytes, run, sink); }});
            }
          }
      if (std::getenv("PROBE_AROW") && row_bytes % 2048 == 0)
        for (int per_sm : {1, 2}) {
          const int run = 2048, stages = per_sm == 1 ? 2 : 3;
          const int smem = stages * 17 * (run + 16), grid = sms * per_sm;
          const std::string tag = " x" + std::to_string(per_sm) + " s" + std::to_string(stages);
          const unsigned char* a_row = flush_a;
          if (stages == 2) {
            variants.push_back({"ringnoA2048" + tag, [=](cudaStream_t s) { read_ring<2, false, 0><<<grid, 160, smem, s>>>(d + g_shift, a_row, n, row_bytes, run, sink); }});
            variants.push_back({"ringownA2048" + tag, [=](cudaStream_t s) { read_ring<2, false, 2><<<grid, 160, smem, s>>>(d + g_shift, a_row, n, row_bytes, run, sink); }});
          } else {
            variants.push_back({"ringnoA2048" + tag, [=](cudaStream_t s) { read_ring<3, false, 0><<<grid, 160, smem, s>>>(d + g_shift, a_row, n, row_bytes, run, sink); }});
            variants.push_back({"ringownA2048" + tag, [=](cudaStream_t s) { read_ring<3, false, 2><<<grid, 160, smem, s>>>(d + g_shift, a_row, n, row_bytes, run, sink); }});
          }
        }
      // Per-row bulk copies: 16 rows x kRun bytes a stage, one cp.async.bulk per row.
      for (int per_sm : {1, 2})
        for (int run : {512, 1024, 2048}) {
          // Whole runs only: the kernels walk row_bytes / run steps (1 x 24576 x 1536's 3 KB rows
          // in 2 KB runs read two thirds of B before 2026-11-25 (5)).
          if (row_bytes % run != 0) continue;
          const int grid = sms * per_sm, stage = 16 * run;
          const int stages = std::min(8, 96 * 1024 / stage);
          const std::string tag = " x" + std::to_string(per_sm) + " s" + std::to_string(stages);
          if (stages == 8)
            variants.push_back({"bulkrows" + std::to_string(run) + tag, [=](cudaStream_t s) { read_bulk_rows<8><<<grid, 128, 8 * stage, s>>>(d + g_shift, n, row_bytes, run, sink); }});
          else if (stages == 6)
            variants.push_back({"bulkrows" + std::to_string(run) + tag, [=](cudaStream_t s) { read_bulk_rows<6><<<grid, 128, 6 * stage, s>>>(d + g_shift, n, row_bytes, run, sink); }});
          else if (stages == 3)
            variants.push_back({"bulkrows" + std::to_string(run) + tag, [=](cudaStream_t s) { read_bulk_rows<3><<<grid, 128, 3 * stage, s>>>(d + g_shift, n, row_bytes, run, sink); }});
        }
    }
    std::vector<std::pair<float, std::string>> results;
    for (const Variant& var : variants) {
      std::vector<float> times;
      for (int it = 0; it < 35; ++it) {
        g_shift = rotate ? (it % windows) * window : 0;
        flush_l2();
        CHECK(cudaEventRecord(start, stream));
        var.launch(stream);
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (it >= 5) times.push_back(ms * 1000.f);
      }
      CHECK(cudaGetLastError());
      std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
      results.push_back({times[times.size() / 2], var.name});
    }
    std::sort(results.begin(), results.end());
    if (std::getenv("PROBE_ALL"))
      for (const auto& [us, name] : results) std::printf("#  %lld %lld %lld %d %-22s %.2f\n", m, n, k, elem, name.c_str(), us);
    if (std::getenv("PROBE_TRACE"))
      for (const Variant& var : variants) {
        if (var.name.rfind("ring", 0) != 0 && var.name.rfind("bulkrows", 0) != 0) continue;
        const int max_ctas = sms * 8;
        unsigned long long* trace = nullptr;
        CHECK(cudaMalloc(&trace, 3 * max_ctas * sizeof(unsigned long long)));
        std::vector<unsigned long long> host(3 * max_ctas);
        std::vector<double> spans, firsts, ends;
        for (int it = 0; it < 7; ++it) {
          g_shift = rotate ? (it % windows) * window : 0;
          CHECK(cudaMemset(trace, 0, 3 * max_ctas * sizeof(unsigned long long)));
          CHECK(cudaMemcpyToSymbol(g_trace, &trace, sizeof(trace)));
          flush_l2();
          CHECK(cudaEventRecord(start, stream));
          var.launch(stream);
          CHECK(cudaEventRecord(stop, stream));
          CHECK(cudaEventSynchronize(stop));
          unsigned long long* none = nullptr;
          CHECK(cudaMemcpyToSymbol(g_trace, &none, sizeof(none)));
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, start, stop));
          CHECK(cudaMemcpy(host.data(), trace, host.size() * 8, cudaMemcpyDeviceToHost));
          unsigned long long t0 = ~0ull, entry_max = 0;
          std::vector<double> first, exit;
          for (int c = 0; c < max_ctas; ++c)
            if (host[3 * c] != 0) t0 = std::min(t0, host[3 * c]);
          for (int c = 0; c < max_ctas; ++c) {
            if (host[3 * c] == 0) continue;
            entry_max = std::max(entry_max, host[3 * c] - t0);
            first.push_back(double(host[3 * c + 1] - t0) * 1e-3);
            exit.push_back(double(host[3 * c + 2] - t0) * 1e-3);
          }
          std::sort(first.begin(), first.end());
          std::sort(exit.begin(), exit.end());
          if (it >= 2)
            std::printf("#T %lld %lld %lld %-22s event %.2f us: entry spread %.2f, first data p50 %.2f max %.2f, exit min %.2f p50 %.2f p90 %.2f max %.2f\n",
                        m, n, k, var.name.c_str(), ms * 1e3, entry_max * 1e-3, first[first.size() / 2], first.back(),
                        exit.front(), exit[exit.size() / 2], exit[exit.size() * 9 / 10], exit.back());
        }
        CHECK(cudaFree(trace));
      }
    if (use_cublas && elem == 2 && (m * k + n * k) * 2 <= window && m * n * 2 <= (64ll << 20)) {
      // D^T[N,M] = B[N,K] A[M,K]^T in cuBLASLt's column-major terms (docs/baselines.md).
      cublasLtMatmulDesc_t desc;
      CHECK_LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
      CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
      CHECK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
      cublasLtMatrixLayout_t la, lb, ld;
      CHECK_LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, n, k));
      CHECK_LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, m, k));
      CHECK_LT(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, n, m, n));
      // Three ways to call it: the library's defaults with a 32 MiB workspace; autogemm bench's
      // (src/runtime/cublaslt.cpp: 64 MiB, split-K parts kept in FP32, and a wait on and a
      // record of the workspace's event around the call, inside the timed window); and bench's
      // without the events.
      struct LtWay { const char* name; size_t workspace; bool fp32_parts; bool events; };
      const LtWay ways[] = {{"default", 32u << 20, false, false},
                            {"bench", 64u << 20, true, true},
                            {"bench-no-events", 64u << 20, true, false}};
      cudaEvent_t workspace_free;
      CHECK(cudaEventCreateWithFlags(&workspace_free, cudaEventDisableTiming));
      for (const LtWay& way : ways) {
        cublasLtMatmulPreference_t pref;
        CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
        CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &way.workspace, sizeof(way.workspace)));
        if (way.fp32_parts) {
          const uint32_t mask = uint32_t(CUBLASLT_REDUCTION_SCHEME_NONE) | uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
          CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask)));
        }
        cublasLtMatmulHeuristicResult_t heur;
        int found = 0;
        CHECK_LT(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &heur, &found));
        const float alpha = 1.f, beta = 0.f;
        std::vector<float> times;
        for (int it = 0; found > 0 && it < 35; ++it) {
          g_shift = rotate ? (it % windows) * window : 0;
          const unsigned char* a_ptr = data + g_shift;
          const unsigned char* b_ptr = a_ptr + (m * k * 2 + 255) / 256 * 256;
          flush_l2();
          CHECK(cudaEventRecord(start, stream));
          if (way.events && it > 0) CHECK(cudaStreamWaitEvent(stream, workspace_free, 0));
          CHECK_LT(cublasLtMatmul(lt, desc, &alpha, b_ptr, la, a_ptr, lb, &beta, d_out, ld, d_out, ld, &heur.algo,
                                  workspace, way.workspace, stream));
          if (way.events) CHECK(cudaEventRecord(workspace_free, stream));
          CHECK(cudaEventRecord(stop, stream));
          CHECK(cudaEventSynchronize(stop));
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, start, stop));
          if (it >= 5) times.push_back(ms * 1000.f);
        }
        if (!times.empty()) {
          std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
          std::printf("#C %lld %lld %lld cublasLt %-16s %.2f us, best read %.2f us (%s): read / cublasLt %.3f\n", m, n, k,
                      way.name, times[times.size() / 2], results[0].first, results[0].second.c_str(),
                      times[times.size() / 2] / results[0].first);
        }
        cublasLtMatmulPreferenceDestroy(pref);
      }
      CHECK(cudaEventDestroy(workspace_free));
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(ld);
      cublasLtMatmulDescDestroy(desc);
    }
    std::printf("%lld,%lld,%lld,%d,%lld,%.2f,%.0f,%s,%.2f,%s\n", m, n, k, elem, bytes,
                results[0].first, bytes / results[0].first * 1e-3, results[0].second.c_str(),
                results[1].first, results[1].second.c_str());
    std::fflush(stdout);
  }
  return 0;
}
