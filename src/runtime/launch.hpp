#pragma once
// Compiles (through the JIT caches), loads and launches the kernels of a KernelSpec. The spec
// says everything; this file only turns it into driver calls. What depends only on the kernel
// (the loaded function, its shared-memory attribute, how many of its clusters fit at once) is
// prepared once per (device, kernel) and kept.
//
// A launch is made in two steps: resolve (the prepared kernel, the grid, the launch attributes,
// every parameter and tensor map of the call's operands) and enqueue (cuLaunchKernelEx). launch()
// does both at once; resolve_launch() does the first ahead of time for a caller that enqueues
// the same call later, so enqueueing costs only the driver's launch (run_gemm_schedule).
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"
#include "kernels/sm90/gemm_params.cuh"
#include "runtime/tensor_maps.hpp"

namespace autogemm::runtime {

// Compiles and loads the spec's kernels if needed (no launch). Returns the time it took in ms
// (0 when cached). Used by `autogemm warmup` and to keep compile time out of measurements.
double prepare(const KernelSpec& spec);

// Grouped GEMM's device arrays (include/autogemm/grouped.hpp); null for other problems.
struct GroupArrays {
  const int32_t* group_index = nullptr;   // contiguous layout
  const int32_t* masked_m = nullptr;      // masked layout
  const int32_t* group_ends = nullptr;    // k_contiguous: each group's last token + 1
};

// Launches the spec's kernels on `stream`; the caller checked the operands. A vendor spec is
// not launched here (runtime/cublaslt.hpp).
void launch(const KernelSpec& spec, const GemmOperands& operands, cudaStream_t stream,
            const GroupArrays& groups = {});

// One kernel of a call with every argument of its cuLaunchKernelEx worked out, for the device
// that was current when it was resolved.
struct ResolvedKernel {
  CUfunction function = nullptr;
  unsigned grid_ctas = 0, threads_per_cta = 0, smem_bytes = 0, cluster_size = 1;
  bool tensor_maps = false;    // the tile family: the six maps precede the parameters
  bool programmatic = false;   // a programmatic dependent of the kernel before it (n-tail)
  // Split-K: the stream's workspace (runtime/split_k.hpp) is filled in when it is enqueued,
  // so the resolved kernel serves any stream of its device.
  bool split_k = false;
  SplitKWorkspaceLayout split_k_layout;
  GemmTensorMaps maps;
  sm90::GemmParams params{};
};

// A whole call resolved ahead: its kernels in launch order.
struct ResolvedLaunch {
  std::vector<ResolvedKernel> kernels;
};

// Why the call of `spec` cannot be resolved ahead (empty: it can). Calls that allocate or copy
// per call are not: cuBLASLt (a vendor spec), A's scales re-laid k-block-major, A or B copied
// into padded rows, and every call while the tile trace is on (AUTOGEMM_TRACE_TILES).
std::string resolve_ahead_violation(const KernelSpec& spec);

// Resolves the call of `spec` on `operands` for the current device: loads its kernels (as
// prepare() does) and encodes its tensor maps. When `reserve_on` is given, that stream's split-K
// workspace is grown now to what the spec needs, so enqueueing on it later allocates nothing.
// The caller checked the operands as gemm() does (plan::operand_violation empty). Throws
// Error naming the reason when resolve_ahead_violation(spec) is not empty.
ResolvedLaunch resolve_launch(const KernelSpec& spec, const GemmOperands& operands,
                              cudaStream_t reserve_on = nullptr);

// Enqueues a resolved call on `stream` (of the device it was resolved for): one
// cuLaunchKernelEx per kernel, plus the split-K workspace lookup for split-K kernels.
void enqueue(const ResolvedLaunch& launch, cudaStream_t stream);

}  // namespace autogemm::runtime
