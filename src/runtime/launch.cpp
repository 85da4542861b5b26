#include "runtime/launch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "jit/jit.hpp"
#include "jit/log.hpp"
#include "kernels/sm90/gemm_layout.cuh"
#include "kernels/sm90/gemm_params.cuh"
#include "plan/n_tail.hpp"
#include "plan/tail_split.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/driver.hpp"
#include "runtime/kernel_source.hpp"
#include "runtime/module.hpp"
#include "runtime/scale_layout.hpp"
#include "runtime/split_k.hpp"
#include "runtime/tail_split.hpp"
#include "runtime/tensor_maps.hpp"
#include "runtime/tile_trace.hpp"

namespace autogemm::runtime {

namespace {

struct PreparedKernel {
  std::shared_ptr<LoadedKernel> kernel;
  int threads = 0;
  int smem_bytes = 0;
  int cluster_size = 1;
  int max_resident_ctas = 0;   // CTAs that fit on the device at once (persistent grid)
};

std::string kernel_key(int device, const GemmProblem& p, const GemmConfig& c) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", device, to_string(p.a_type),
                     to_string(p.d_type), to_string(p.layout), p.n, p.k, c.describe(),
                     to_string(c.raster_order), to_string(p.b_type), to_string(p.scaling));
}

int current_device() {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

// The fields of a problem that select its kernel (kernel_key's, less the device).
struct KernelIdentity {
  DType a_type, b_type, d_type;
  Layout layout;
  Scaling scaling;
  int64_t n, k;
  GemmConfig config;
  friend bool operator==(const KernelIdentity&, const KernelIdentity&) = default;
};

const PreparedKernel& prepare(const GemmProblem& p, const GemmConfig& c) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<PreparedKernel>> prepared;
  const int device = current_device();
  // Back-to-back calls of one GEMM (a decode loop) skip formatting the key and the locked map
  // lookup: about a microsecond of the ~10 us a call costs the host (measured on the H100).
  // Entries of `prepared` are never removed, so the remembered pointer stays valid.
  thread_local struct {
    int device = -1;
    std::optional<KernelIdentity> identity;
    const PreparedKernel* kernel = nullptr;
  } last;
  const KernelIdentity identity{p.a_type, p.b_type, p.d_type, p.layout, p.scaling, p.n, p.k, c};
  if (last.kernel != nullptr && last.device == device && last.identity == identity)
    return *last.kernel;
  const std::string key = kernel_key(device, p, c);
  auto remember = [&](const PreparedKernel& kernel) -> const PreparedKernel& {
    last.device = device;
    last.identity = identity;
    last.kernel = &kernel;
    return kernel;
  };
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = prepared.find(key); it != prepared.end()) return remember(*it->second);
  }
  auto entry = std::make_unique<PreparedKernel>();
  const auto compiled = jit::get_or_compile(gemm_kernel_source(p, c));
  entry->kernel = load_kernel(*compiled);
  entry->threads = gemm_threads_per_cta(c);
  entry->cluster_size = c.cluster_m * c.cluster_n * c.cluster_k;
  entry->smem_bytes = gemm_smem_bytes(p, c);
  const auto& api = driver::api();
  driver::check(api.cuFuncSetAttribute(entry->kernel->function,
                                       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       entry->smem_bytes),
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  int sm_count = 0;
  cuda_check(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(MultiProcessorCount)");
  entry->max_resident_ctas = sm_count;   // one CTA per SM: these configurations use ~all smem
  if (c.split_k > 1 || c.tail_split > 1 || p.scaling == Scaling::block_1x128_128x128) {
    // Split-K and tail-split workspaces and transposed A scales (scale_layout.hpp) come from
    // the device's stream-ordered pool; by default the pool gives its memory back at every
    // synchronisation, making the next cudaMallocAsync a real allocation. Keep it (what
    // frameworks' caching allocators do).
    cudaMemPool_t pool = nullptr;
    cuda_check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;
    cuda_check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
               "cudaMemPoolSetAttribute(ReleaseThreshold)");
  }
  if (entry->cluster_size > 1) {
    // Not every GPC can host every cluster shape: size the grid from the occupancy query
    // (hopper-facts.md 6).
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = entry->cluster_size;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    CUlaunchConfig config{};
    config.gridDimX = entry->cluster_size;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = entry->threads;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = entry->smem_bytes;
    config.attrs = &attr;
    config.numAttrs = 1;
    int clusters = 0;
    driver::check(api.cuOccupancyMaxActiveClusters(&clusters, entry->kernel->function, &config),
                  "cuOccupancyMaxActiveClusters");
    if (clusters < 1)
      throw CudaError(fmt::format("no cluster of {} CTAs with {} B of shared memory fits on device {}",
                                  entry->cluster_size, entry->smem_bytes, device));
    entry->max_resident_ctas = clusters * entry->cluster_size;
  }
  log(4, "prepared {}: {} threads, {} B smem, cluster {}, up to {} resident CTAs", key,
      entry->threads, entry->smem_bytes, entry->cluster_size, entry->max_resident_ctas);
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = prepared.emplace(key, std::move(entry));
  return remember(*it->second);
}

}  // namespace

double prepare_gemm_kernel(const GemmProblem& problem, const GemmConfig& config) {
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [kernel_problem, kernel_config] : gemm_kernels(problem, config))
    prepare(kernel_problem, kernel_config);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

namespace {

// A's block scales as the kernels read them: the caller's, or re-laid k-block-major for large
// problems (scale_layout.hpp), once per call even when two kernels read them.
struct AScales {
  const float* pointer = nullptr;
  AScaleStrides strides;
  float* transposed = nullptr;   // owned by the call; freed on the stream after the launches
};

AScales a_scales_for(const GemmProblem& p, const GemmConfig& c, const GemmOperands& o,
                     cudaStream_t stream) {
  AScales s{o.scale_a, natural_a_scale_strides(p), nullptr};
  if (transposes_a_scales(p, c))
    s.pointer = s.transposed = transpose_a_scales(p, o.scale_a, stream, s.strides);
  return s;
}

// One GEMM kernel (and its tail-split finish). `programmatic`: launched as a
// programmatic dependent of the kernel before it on the stream (the n-tail kernel).
LaunchShape launch_one(const GemmProblem& p, const GemmConfig& c, const GemmOperands& o,
                       const AScales& a_scales, bool programmatic, cudaStream_t stream) {
  const PreparedKernel& k = prepare(p, c);
  const GemmTensorMaps maps = make_gemm_tensor_maps(p, c, o);
  sm90::GemmParams params{static_cast<int>(p.m), o.alpha, o.beta, o.a, o.b, o.c, o.d,
                          p.lda_or_packed(), p.ldb_or_packed(), p.ldc_or_packed(),
                          p.ldd_or_packed(), a_scales.pointer, o.scale_b, a_scales.strides.row,
                          a_scales.strides.k_block, nullptr, nullptr, 0, 1, nullptr, 0, nullptr,
                          nullptr, nullptr};
  // Split-K: the splits meet in a workspace and the last one of each tile stores it
  // (kernels/sm90/split_k_reduce.cuh).
  if (c.split_k > 1) {
    const SplitKWorkspace w = split_k_workspace(p, c, stream);
    params.split_k_partials = w.partials;
    params.split_k_counters = w.counters;
    params.split_k_flags = w.flags;
  }

  const int64_t cluster_tiles = plan::cluster_work_items(p, c);
  // Clusters that run at once: the persistent grid, and the tail split's wave.
  int64_t slots = c.persistent ? k.max_resident_ctas : cluster_tiles * k.cluster_size;
  if (c.max_ctas > 0) slots = std::min<int64_t>(slots, c.max_ctas);
  slots = std::max<int64_t>(1, slots / k.cluster_size);
  const plan::TailSplit tail = plan::plan_tail_split(p, c, slots);
  const int64_t grid = std::min(tail.work_items(), slots) * k.cluster_size;
  TailWorkspace tail_workspace;
  if (tail.splits > 1) {
    tail_workspace = allocate_tail_workspace(c, tail.tail_tiles * k.cluster_size, tail.splits,
                                             stream);
    params.tail_workspace = tail_workspace.partials;
    params.tail_coords = tail_workspace.coords;
    params.tail_tiles = static_cast<int>(tail.tail_tiles);
    params.tail_splits = tail.splits;
  }
  TileTraceBuffer trace;
  if (!tile_trace_path().empty()) {
    trace = allocate_tile_trace(grid, grid / k.cluster_size, tail.work_items(), stream);
    params.tile_trace = trace.records;
    params.tile_trace_capacity = trace.capacity;
  }

  CUlaunchAttribute attrs[2]{};
  unsigned num_attrs = 0;
  if (k.cluster_size > 1) {
    attrs[num_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[num_attrs].value.clusterDim.x = k.cluster_size;
    attrs[num_attrs].value.clusterDim.y = attrs[num_attrs].value.clusterDim.z = 1;
    ++num_attrs;
  }
  if (programmatic) {
    // May start once every CTA of the kernel before it has executed griddepcontrol
    // .launch_dependents (CUDA driver API "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION").
    attrs[num_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[num_attrs].value.programmaticStreamSerializationAllowed = 1;
    ++num_attrs;
  }
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(grid);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = k.threads;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = k.smem_bytes;
  config.hStream = reinterpret_cast<CUstream>(stream);
  config.attrs = num_attrs > 0 ? attrs : nullptr;
  config.numAttrs = num_attrs;
  void* args[] = {const_cast<CUtensorMap*>(&maps.a), const_cast<CUtensorMap*>(&maps.b),
                  const_cast<CUtensorMap*>(&maps.c), const_cast<CUtensorMap*>(&maps.d), &params};
  driver::check(driver::api().cuLaunchKernelEx(&config, k.kernel->function, args, nullptr),
                "cuLaunchKernelEx(gemm)");
  if (trace.records != nullptr) write_tile_trace(trace, p, c, stream);
  if (tail.splits > 1) finish_tail_split(p, o, c, tail_workspace, stream);
  return {static_cast<int>(grid), k.threads, k.smem_bytes, k.cluster_size};
}

// The n-tail kernel's operands: the same A (and A scales), B, C and D from column
// `first_column` on (B's rows when B is K-major, else its columns; the B scale rows of
// 128-column blocks from first_column / 128, which n_tail_violation makes whole).
GemmOperands tail_operands(const GemmProblem& p, const GemmOperands& o, int64_t first_column) {
  GemmOperands t = o;
  const auto offset = [](const void* base, int64_t elements, DType type) {
    return static_cast<const void*>(static_cast<const char*>(base) + elements * dtype_bytes(type));
  };
  const int64_t b_offset = b_is_k_major(p.layout) ? first_column * p.ldb_or_packed() : first_column;
  t.b = offset(o.b, b_offset, p.b_type);
  if (o.c != nullptr) t.c = offset(o.c, first_column, p.d_type);
  t.d = const_cast<void*>(offset(o.d, first_column, p.d_type));
  if (p.scaling == Scaling::block_1x128_128x128)
    t.scale_b = o.scale_b + first_column / 128 * ((p.k + 127) / 128);
  return t;
}

}  // namespace

LaunchShape launch_gemm(const GemmProblem& p, const GemmConfig& c, const GemmOperands& o,
                        cudaStream_t stream) {
  const AScales a_scales = a_scales_for(p, c, o, stream);
  LaunchShape shape;
  if (c.n_tail_kernel) {
    // The main kernel on the whole tiles, then the narrow tail tiles on the SMs it frees
    // (plan/n_tail.hpp). Nothing may be enqueued between the two, or the tail kernel would
    // depend on that instead.
    const plan::NTailSplit split = plan::split_n_tail(p, c);
    shape = launch_one(split.main_problem, split.main_config, o, a_scales, false, stream);
    launch_one(split.tail_problem, split.tail_config, tail_operands(p, o, split.main_columns),
               a_scales, true, stream);
  } else {
    shape = launch_one(p, c, o, a_scales, false, stream);
  }
  if (a_scales.transposed != nullptr)
    cuda_check(cudaFreeAsync(a_scales.transposed, stream), "cudaFreeAsync(transposed A scales)");
  return shape;
}

}  // namespace autogemm::runtime
