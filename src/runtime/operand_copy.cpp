#include "runtime/operand_copy.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "autogemm/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "kernels/sm90/pad_rows_params.cuh"
#include "runtime/simple_launch.hpp"

namespace autogemm::runtime {

namespace {

constexpr unsigned kThreads = 256;
// Enough CTAs to keep every SM's loads in flight (16 of 256 threads on 132 SMs), few enough
// that each thread loops over several chunks.
constexpr long long kMaxCtas = 132 * 16;

void* make_copy(const OperandCopy& copy, const void* source, const char* name,
                cudaStream_t stream) {
  if (copy.element_bytes != 1 && copy.element_bytes != 2)
    throw InvalidArgument(fmt::format("spec.copy_{}.element_bytes", name),
                          std::to_string(copy.element_bytes), "must be 1 or 2");
  void* dst = nullptr;
  cuda_check(cudaMallocAsync(&dst, size_t(copy.bytes()), stream),
             fmt::format("cudaMallocAsync({} copied into padded rows)", name).c_str());
  PadRowsParams params{};
  params.src = source;
  params.dst = dst;
  params.rows = copy.rows;
  params.row_elements = copy.row_elements;
  params.src_ld = copy.source_ld;
  params.dst_ld = copy.padded_ld;
  params.element_bytes = copy.element_bytes;
  // One thread a 16-byte chunk of a padded row (pad_rows.cuh).
  const long long chunks = copy.rows * ((copy.row_elements * copy.element_bytes + 15) / 16);
  SimpleGrid grid;
  grid.block_x = kThreads;
  grid.grid_x = static_cast<unsigned>(std::min<long long>(kMaxCtas, (chunks + kThreads - 1) / kThreads));
  launch_simple_kernel("sm90/pad_rows.cuh", "autogemm_pad_rows", grid, &params, stream,
                       fmt::format("{} copied into padded rows, {} x {} (ld {} -> {})", name,
                                   copy.rows, copy.row_elements, copy.source_ld, copy.padded_ld));
  return dst;
}

}  // namespace

OperandCopies copy_operands(const KernelSpec& spec, const GemmOperands& operands,
                            cudaStream_t stream) {
  OperandCopies copies;
  copies.operands = operands;
  try {
    if (spec.copy_a.active())
      copies.operands.a = copies.a = make_copy(spec.copy_a, operands.a, "A", stream);
    if (spec.copy_b.active())
      copies.operands.b = copies.b = make_copy(spec.copy_b, operands.b, "B", stream);
  } catch (...) {
    release_copies(copies, stream);
    throw;
  }
  return copies;
}

void release_copies(const OperandCopies& copies, cudaStream_t stream) {
  for (void* p : {copies.a, copies.b})
    if (p != nullptr) cuda_check(cudaFreeAsync(p, stream), "cudaFreeAsync(operand copy)");
}

}  // namespace autogemm::runtime
