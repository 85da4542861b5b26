#pragma once
// Compiles (through the JIT caches), loads and launches the kernels of a KernelSpec. The spec
// says everything; this file only turns it into driver calls. What depends only on the kernel
// (the loaded function, its shared-memory attribute, how many of its clusters fit at once) is
// prepared once per (device, kernel) and kept.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"

namespace autogemm::runtime {

// Compiles and loads the spec's kernels if needed (no launch). Returns the time it took in ms
// (0 when cached). Used by `autogemm warmup` and to keep compile time out of measurements.
double prepare(const KernelSpec& spec);

// Grouped GEMM's device arrays (include/autogemm/grouped.hpp); null for other problems.
struct GroupArrays {
  const int32_t* group_index = nullptr;   // contiguous layout
  const int32_t* masked_m = nullptr;      // masked layout
};

// Launches the spec's kernels on `stream`; the caller checked the operands. A vendor spec is
// not launched here (runtime/cublaslt.hpp).
void launch(const KernelSpec& spec, const GemmOperands& operands, cudaStream_t stream,
            const GroupArrays& groups = {});

}  // namespace autogemm::runtime
