// The launcher: a KernelSpec's kernels, compiled once, launched with cuLaunchKernelEx.
#include "runtime/launch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "autogemm/errors.hpp"
#include "autogemm/quantize.hpp"
#include "codegen/kernel_source.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/driver.hpp"
#include "jit/jit.hpp"
#include "jit/log.hpp"
#include "jit/module.hpp"
#include "kernels/sm90/gemm_params.cuh"
#include "runtime/operand_copy.hpp"
#include "runtime/scale_layout.hpp"
#include "runtime/split_k.hpp"
#include "runtime/tensor_maps.hpp"
#include "trace/tile_trace.hpp"

namespace autogemm::runtime {

namespace {

struct PreparedKernel {
  std::shared_ptr<jit::LoadedKernel> kernel;
  int64_t max_resident_clusters = 0;   // clusters of this kernel that fit on the device at once
};

int current_device() {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

// How many clusters of the kernel the device holds at once: not every GPC can host every
// cluster shape, so the driver's occupancy query decides (hopper-facts.md 6).
int64_t resident_clusters(const KernelLaunch& k, CUfunction function, int device) {
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = k.cluster_size;
  attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.gridDimX = k.cluster_size;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = k.threads_per_cta;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = k.smem_bytes;
  config.attrs = &attr;
  config.numAttrs = 1;
  int clusters = 0;
  driver::check(driver::api().cuOccupancyMaxActiveClusters(&clusters, function, &config),
                "cuOccupancyMaxActiveClusters");
  if (clusters < 1)
    throw CudaError(fmt::format("no cluster of {} CTAs with {} B of shared memory fits on device {}",
                                k.cluster_size, k.smem_bytes, device));
  return clusters;
}

// Split-K's workspace and transposed A scales come from the device's stream-ordered pool; by
// default the pool gives its memory back at every synchronisation, making the next
// cudaMallocAsync a real allocation. Keep it (what frameworks' caching allocators do).
void keep_stream_ordered_pool(int device) {
  cudaMemPool_t pool = nullptr;
  cuda_check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  uint64_t keep = UINT64_MAX;
  cuda_check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
             "cudaMemPoolSetAttribute(ReleaseThreshold)");
}

std::unique_ptr<PreparedKernel> load(const KernelLaunch& k, int device) {
  auto entry = std::make_unique<PreparedKernel>();
  const auto compiled =
      jit::get_or_compile(codegen::gemm_kernel_source(k, !trace::tile_trace_path().empty()));
  entry->kernel = jit::load_kernel(*compiled);
  driver::check(driver::api().cuFuncSetAttribute(entry->kernel->function,
                                                 CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                 k.smem_bytes),
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  // Without clusters a persistent grid of one CTA per SM (the spec's) always fits.
  entry->max_resident_clusters = k.cluster_size > 1
                                     ? resident_clusters(k, entry->kernel->function, device)
                                     : std::numeric_limits<int64_t>::max();
  log(4, "prepared {}: {} threads, {} B smem, cluster {}, up to {} resident clusters", k.identity,
      k.threads_per_cta, k.smem_bytes, k.cluster_size, entry->max_resident_clusters);
  return entry;
}

const PreparedKernel& prepared(const KernelLaunch& k) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<PreparedKernel>> kernels;
  const int device = current_device();
  // Back-to-back calls of one GEMM (a decode loop) skip building the key and the locked map
  // lookup: about a microsecond of the ~10 us a call cost the host. Entries of `kernels` are
  // never removed, so the remembered pointer stays valid.
  thread_local struct {
    int device = -1;
    std::string identity;
    const PreparedKernel* kernel = nullptr;
  } last;
  if (last.kernel != nullptr && last.device == device && last.identity == k.identity)
    return *last.kernel;
  const std::string key = fmt::format("{}|{}", device, k.identity);
  const PreparedKernel* found = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = kernels.find(key); it != kernels.end()) found = it->second.get();
  }
  if (found == nullptr) {
    auto entry = load(k, device);
    std::lock_guard<std::mutex> lock(mutex);
    found = kernels.emplace(key, std::move(entry)).first->second.get();
  }
  last = {device, k.identity, found};
  return *found;
}

// A's block scales as the kernels read them: the caller's, or re-laid k-block-major when the
// spec says so, once per call even when two kernels read them.
struct AScales {
  const float* pointer = nullptr;
  AScaleStrides strides;
  float* transposed = nullptr;   // owned by the call; freed on the stream after the launches
};

AScales a_scales_for(const KernelSpec& spec, const GemmOperands& o, cudaStream_t stream) {
  AScales s{o.scale_a, natural_a_scale_strides(spec.problem), nullptr};
  if (spec.a_scales_k_block_major)
    s.pointer = s.transposed = transpose_a_scales(spec.problem, o.scale_a, stream, s.strides);
  return s;
}

// The operands of a kernel that computes the columns from `first_column` on: the same A (and
// A scales), and B, C and D from that column (B's rows when B is K-major, else its columns;
// the B scale rows of 128-column blocks from first_column / 128, which the n-tail rule makes
// whole).
GemmOperands column_operands(const GemmProblem& p, const GemmOperands& o, int64_t first_column) {
  if (first_column == 0) return o;
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

// One kernel of the spec, resolved: the prepared kernel, its grid and attributes, the
// parameters and (tile family) the tensor maps of the call's operands. A kernel that waits for
// a primary is launched as a programmatic dependent of the kernel before it on the stream.
ResolvedKernel resolve_one(const KernelLaunch& k, const SplitKWorkspaceLayout& split_k,
                           const GemmOperands& call_operands, const AScales& a_scales,
                           const GroupArrays& groups) {
  const PreparedKernel& prep = prepared(k);
  GemmOperands o = column_operands(k.problem, call_operands, k.first_column);
  // Swapped operands (plan/swap_ab.hpp): the kernel's problem is D^T = B^T A^T, its A the
  // call's B and its B the call's A; C and D keep their pointers (the kernel writes them
  // transposed).
  if (k.fields.config.swap_ab) std::swap(o.a, o.b);
  const GemmProblem& p = k.problem;
  ResolvedKernel r;
  r.function = prep.kernel->function;
  r.threads_per_cta = static_cast<unsigned>(k.threads_per_cta);
  r.smem_bytes = static_cast<unsigned>(k.smem_bytes);
  sm90::GemmParams& params = r.params;
  // Grouped: the scheduler's rows are all stored rows (masked: groups x max_m, group_rows
  // apart); the kernel reads the group arrays.
  params.m = static_cast<int>(p.stored_rows());
  params.group_index = groups.group_index;
  params.masked_m = groups.masked_m;
  params.group_ends = groups.group_ends;
  // Masked: each group's rows of A and D; k_contiguous: each group's rows of D.
  params.group_rows = p.grouping == Grouping::masked || p.grouping == Grouping::k_contiguous
                          ? static_cast<int>(p.m)
                          : 0;
  params.alpha = o.alpha;
  params.beta = o.beta;
  params.a = o.a;
  params.b = o.b;
  params.c = o.c;
  params.d = o.d;
  params.lda = p.lda_or_packed();
  params.ldb = p.ldb_or_packed();
  params.ldc = p.ldc_or_packed();
  params.ldd = p.ldd_or_packed();
  params.scale_a = a_scales.pointer;
  params.scale_b = o.scale_b;
  params.scale_a_row_stride = a_scales.strides.row;
  params.scale_a_k_stride = a_scales.strides.k_block;
  // The fused epilogue's vectors, in the caller's terms (the kernel indexes them by its
  // orientation, sm90/fused_epilogue.cuh); the n-tail kernel's columns start at first_column,
  // which are the caller's rows when swapped.
  const int64_t column0 = k.fields.config.swap_ab ? 0 : k.first_column;
  const int64_t row0 = k.fields.config.swap_ab ? k.first_column : 0;
  params.bias = call_operands.bias == nullptr || !p.epilogue.bias
                    ? call_operands.bias
                    : static_cast<const char*>(call_operands.bias) +
                          column0 * dtype_bytes(*p.epilogue.bias);
  // Rowwise FP8: the row and column scales are A's and B's (kernel_epilogue).
  const bool rowwise = p.scaling == Scaling::rowwise;
  const float* row_scale = rowwise ? call_operands.scale_a : call_operands.row_scale;
  const float* col_scale = rowwise ? call_operands.scale_b : call_operands.col_scale;
  params.row_scale = row_scale ? row_scale + row0 : nullptr;
  params.col_scale = col_scale ? col_scale + column0 : nullptr;
  // FP8 output's scales, one per row per 128 columns of D (no n-tail kernel: the rules).
  params.d_scale = call_operands.d_scale;
  params.d_scale_ld = fp8_scale_count_1x128(1, p.d_cols());
  params.b_scales = call_operands.b_scales;
  params.b_zeros = call_operands.b_zeros;
  // Row-band signals (checked by gemm(): check_band_signals).
  params.band_count = p.signal_bands;
  params.band_counters = call_operands.band_counters;
  params.band_flags = call_operands.band_flags;
  params.c_band_flags = call_operands.c_band_flags;
  for (int b = 0; b < p.signal_bands; ++b) params.band_end[b] = int(call_operands.band_ends[b]);
  // Split-K: the splits meet in a workspace and the last one of each tile stores it
  // (kernels/sm90/split_k_reduce.cuh, decode_kernel.cuh); the stream's, found when enqueued.
  // Stream-K's too, where tiles are shared (split_k_layout sized it for this kernel's grid).
  if (split_k.counters > 0) {
    r.split_k = true;
    r.split_k_layout = split_k;
  }
  if (k.fields.config.instruction == Instruction::mma) {
    // The decode family: one CTA per work item, no tensor maps, no clusters; its warp rings in
    // dynamic shared memory (none with num_stages = 1).
    r.grid_ctas = static_cast<unsigned>(k.grid_ctas);
    return r;
  }
  r.tensor_maps = true;
  r.maps = make_gemm_tensor_maps(k, o);
  int64_t grid = k.grid_ctas;
  if (k.fields.config.persistent && k.cluster_size > 1)
    grid = std::min(grid, prep.max_resident_clusters * k.cluster_size);
  r.grid_ctas = static_cast<unsigned>(grid);
  r.cluster_size = static_cast<unsigned>(k.cluster_size);
  r.programmatic = k.fields.waits_for_primary;
  return r;
}

void enqueue_one(const ResolvedKernel& r, cudaStream_t stream) {
  const sm90::GemmParams* params = &r.params;
  sm90::GemmParams with_workspace{};
  if (r.split_k) {
    const SplitKWorkspace w = split_k_workspace(r.split_k_layout, stream);
    with_workspace = r.params;
    with_workspace.split_k_partials = w.partials;
    with_workspace.split_k_counters = w.counters;
    with_workspace.split_k_flags = w.flags;
    params = &with_workspace;
  }
  CUlaunchAttribute attrs[2]{};
  unsigned num_attrs = 0;
  if (r.cluster_size > 1) {
    attrs[num_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[num_attrs].value.clusterDim.x = r.cluster_size;
    attrs[num_attrs].value.clusterDim.y = attrs[num_attrs].value.clusterDim.z = 1;
    ++num_attrs;
  }
  if (r.programmatic) {
    // May start once every CTA of the kernel before it has executed griddepcontrol
    // .launch_dependents (CUDA driver API "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION").
    attrs[num_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[num_attrs].value.programmaticStreamSerializationAllowed = 1;
    ++num_attrs;
  }
  CUlaunchConfig config{};
  config.gridDimX = r.grid_ctas;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = r.threads_per_cta;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = r.smem_bytes;
  config.hStream = reinterpret_cast<CUstream>(stream);
  config.attrs = num_attrs > 0 ? attrs : nullptr;
  config.numAttrs = num_attrs;
  // The driver copies the arguments at the launch; none is written through these pointers.
  void* param_arg = const_cast<sm90::GemmParams*>(params);
  if (!r.tensor_maps) {
    void* args[] = {param_arg};
    driver::check(driver::api().cuLaunchKernelEx(&config, r.function, args, nullptr),
                  "cuLaunchKernelEx(decode)");
    return;
  }
  auto map = [](const CUtensorMap& m) { return static_cast<void*>(const_cast<CUtensorMap*>(&m)); };
  void* args[] = {map(r.maps.a), map(r.maps.b), map(r.maps.c), map(r.maps.d),
                  map(r.maps.c_tail), map(r.maps.d_tail), param_arg};
  driver::check(driver::api().cuLaunchKernelEx(&config, r.function, args, nullptr),
                "cuLaunchKernelEx(gemm)");
}

}  // namespace

double prepare(const KernelSpec& spec) {
  const auto start = std::chrono::steady_clock::now();
  if (spec.split_k.counters > 0 || spec.a_scales_k_block_major || spec.copy_a.active() ||
      spec.copy_b.active())
    keep_stream_ordered_pool(current_device());
  for (const KernelLaunch& k : spec.kernels) prepared(k);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void launch(const KernelSpec& spec, const GemmOperands& operands, cudaStream_t stream,
            const GroupArrays& groups) {
  const AScales a_scales = a_scales_for(spec, operands, stream);
  // A and B in rows TMA can describe, copied first where the caller's are not.
  const OperandCopies copies = copy_operands(spec, operands, stream);
  // With the n-tail kernel the main kernel runs on the whole tiles, then the narrow tail tiles
  // on the SMs it frees (plan/n_tail.hpp). Nothing may be enqueued between the two, or the tail
  // kernel would depend on that instead.
  const bool tracing = !trace::tile_trace_path().empty();
  for (const KernelLaunch& k : spec.kernels) {
    ResolvedKernel r = resolve_one(k, spec.split_k, copies.operands, a_scales, groups);
    trace::TileTraceBuffer traced;
    if (tracing && r.tensor_maps) {
      // Stream-K's runs hold unequal item counts: up to two more than the mean.
      const int64_t clusters = r.grid_ctas / r.cluster_size;
      traced = trace::allocate_tile_trace(
          r.grid_ctas, clusters,
          k.work_items + (k.fields.config.stream_k ? 2 * clusters : 0), stream);
      r.params.tile_trace = traced.records;
      r.params.tile_trace_capacity = traced.capacity;
    }
    enqueue_one(r, stream);
    if (traced.records != nullptr) trace::write_tile_trace(traced, k.problem, k.text, stream);
  }
  release_copies(copies, stream);
  if (a_scales.transposed != nullptr)
    cuda_check(cudaFreeAsync(a_scales.transposed, stream), "cudaFreeAsync(transposed A scales)");
}

std::string resolve_ahead_violation(const KernelSpec& spec) {
  if (spec.vendor) return "cuBLASLt runs it (a vendor spec)";
  if (spec.a_scales_k_block_major)
    return "A's block scales are re-laid k-block-major per call (stream-ordered memory)";
  if (spec.copy_a.active() || spec.copy_b.active())
    return fmt::format("{} copied into padded rows per call (stream-ordered memory)",
                       spec.copy_a.active() && spec.copy_b.active() ? "A and B"
                       : spec.copy_a.active()                       ? "A"
                                                                    : "B");
  if (!trace::tile_trace_path().empty())
    return "the tile trace is on (AUTOGEMM_TRACE_TILES): each call allocates and synchronises";
  return {};
}

ResolvedLaunch resolve_launch(const KernelSpec& spec, const GemmOperands& operands,
                              cudaStream_t reserve_on) {
  if (const std::string why = resolve_ahead_violation(spec); !why.empty())
    throw Error(fmt::format("{}: cannot be resolved ahead: {}", spec.text, why));
  if (spec.split_k.counters > 0) keep_stream_ordered_pool(current_device());
  // No copies and no re-laid scales (above): the caller's operands and A scales as given.
  const AScales a_scales{operands.scale_a, natural_a_scale_strides(spec.problem), nullptr};
  ResolvedLaunch out;
  for (const KernelLaunch& k : spec.kernels)
    out.kernels.push_back(resolve_one(k, spec.split_k, operands, a_scales, {}));
  if (reserve_on != nullptr && spec.split_k.counters > 0) (void)split_k_workspace(spec.split_k, reserve_on);
  return out;
}

void enqueue(const ResolvedLaunch& launch, cudaStream_t stream) {
  for (const ResolvedKernel& k : launch.kernels) enqueue_one(k, stream);
}

}  // namespace autogemm::runtime
