#pragma once
// split_gemm's execution (multi_gpu.hpp): each rank this process drives runs its pieces of a
// SplitPlan through gemm() on its own stream, and NCCL moves what the plan says between them.
//
// Per call, in stream order on every local rank:
//   1. scratch buffers, stream-ordered (cudaMallocAsync): received slices, a non-root rank's
//      output pieces, the root's staging for columns, split K's partial sums;
//   2. inputs on the root only: whole operands broadcast, slices sent (strided slices packed on
//      the root first with cudaMemcpy2DAsync);
//   3. per chunk: the rank's GEMM piece; then, in one NCCL group over the local ranks, the
//      chunk's output communication (gather by send/recv, or split K's reduce); then the copies
//      and the split-K finish kernel that put the chunk in D. With several chunks the
//      communication runs on a high-priority stream after an event, beside the next GEMM;
//   4. the caller's stream waits for the communication stream; scratch is freed on it.
// With more than one local rank every NCCL call of a step is issued inside ncclGroupStart/End
// (one thread driving several GPUs must, or the first call would wait for the others).
#include "autogemm/problem.hpp"

namespace autogemm::multi {

// The NCCL data type code (ncclDataType_t as an int, so this header needs no nccl.h) of a
// reduction in `type`: fp32, bf16 or fp16. InvalidArgument for another type.
int nccl_reduce_type(DType type);

}  // namespace autogemm::multi
