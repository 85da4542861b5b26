#pragma once
// The four TMA descriptors of one GEMM kernel (A, B, C, D), encoded with cuTensorMapEncodeTiled
// from the spec's TensorMapSpecs: the rules checked their shapes when the spec was made and the
// call's entry point its pointers (plan::operand_violation).
#include <cuda.h>

#include <string>

#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

struct GemmTensorMaps {
  CUtensorMap a{}, b{}, c{}, d{};
  CUtensorMap c_tail{}, d_tail{};   // the tile's tail slab of C and D (TensorMapSpec::tail)
};

// The maps of one kernel of a spec over the call's operands (KernelLaunch::tensor_maps, which
// match the shared-memory layouts of src/kernels/sm90: loads.cuh, epilogue.cuh). Maps the
// kernel does not use stay zeroed; without C (beta == 0) the C map repeats D's. Each calling
// thread keeps the maps it encoded (keyed by every argument that decides their bytes), so a
// repeated call copies them instead.
GemmTensorMaps make_gemm_tensor_maps(const KernelLaunch& kernel, const GemmOperands& operands);

}  // namespace autogemm::runtime
