#pragma once
// The spec's copies of A and B into rows TMA can describe (KernelSpec::copy_a, copy_b;
// plan/operand_copy.hpp says when and why): stream-ordered memory filled by
// kernels/sm90/pad_rows.cuh before the GEMM's kernels, freed on the stream after them.
#include <cuda_runtime_api.h>

#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"

namespace autogemm::runtime {

struct OperandCopies {
  GemmOperands operands;   // the caller's, with a and b pointing at the copies where made
  void* a = nullptr;       // owned by the call
  void* b = nullptr;
};

// Makes the spec's copies on `stream` (nothing when neither is active).
OperandCopies copy_operands(const KernelSpec& spec, const GemmOperands& operands,
                            cudaStream_t stream);

// Frees the copies on `stream`, after the kernels that read them were enqueued.
void release_copies(const OperandCopies& copies, cudaStream_t stream);

}  // namespace autogemm::runtime
