// The launcher's copy of A or B into padded rows (runtime/operand_copy.cpp,
// kernels/sm90/pad_rows.cuh), byte for byte against the host: one- and two-byte elements,
// rows shorter than a chunk and rows ending mid chunk, gaps between rows, source pointers at
// every offset within 16 bytes, and one row. Skipped without a GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "autogemm/kernel_spec.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "gpu_test_util.hpp"
#include "runtime/operand_copy.hpp"

using namespace autogemm;

namespace {

struct CopyCase {
  int64_t rows, row_elements, source_ld;
  int element_bytes;
  int64_t offset_elements;   // of the source pointer into its buffer
};

// Copies the case's rows with the launcher and returns the bytes of the padded copy.
std::vector<uint8_t> run_copy(const CopyCase& c, const std::vector<uint8_t>& source,
                              OperandCopy& copy) {
  copy.rows = c.rows;
  copy.row_elements = c.row_elements;
  copy.source_ld = c.source_ld;
  copy.element_bytes = c.element_bytes;
  const int64_t per_chunk = 16 / c.element_bytes;
  copy.padded_ld = (c.source_ld + per_chunk - 1) / per_chunk * per_chunk;
  if (copy.padded_ld == c.source_ld) copy.padded_ld += per_chunk;   // always a copy here
  // The source buffer holds exactly the operand's bytes after the offset: a read past its
  // last row's end is outside the allocation (memcheck reports it).
  bench::DeviceBuffer src(source.size());
  cuda_check(cudaMemcpy(src.get(), source.data(), source.size(), cudaMemcpyHostToDevice),
             "cudaMemcpy(source)");
  KernelSpec spec;
  spec.copy_a = copy;
  GemmOperands operands;
  operands.a = static_cast<const uint8_t*>(src.get()) + c.offset_elements * c.element_bytes;
  const runtime::OperandCopies copies = runtime::copy_operands(spec, operands, nullptr);
  std::vector<uint8_t> out(size_t(copy.bytes()));
  cuda_check(cudaMemcpy(out.data(), copies.a, out.size(), cudaMemcpyDeviceToHost),
             "cudaMemcpy(copy)");
  runtime::release_copies(copies, nullptr);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the copy");
  return out;
}

}  // namespace

TEST(OperandCopyGpu, EveryRowByteForByte) {
  AUTOGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(4097);
  std::vector<CopyCase> cases;
  for (int element_bytes : {1, 2})
    for (int64_t row_elements : {1, 5, 8, 13, 16, 100, 1001})
      for (int64_t gap : {0, 1, 3})
        for (int64_t rows : {1, 3, 17})
          cases.push_back({rows, row_elements, row_elements + gap, element_bytes,
                           int64_t(rng() % (16 / element_bytes))});
  for (const CopyCase& c : cases) {
    const std::string label =
        fmt::format("{} rows of {} x {} B, ld {}, pointer + {} elements", c.rows, c.row_elements,
                    c.element_bytes, c.source_ld, c.offset_elements);
    const size_t source_bytes =
        size_t(c.offset_elements + (c.rows - 1) * c.source_ld + c.row_elements) * c.element_bytes;
    std::vector<uint8_t> source(source_bytes);
    for (uint8_t& b : source) b = uint8_t(rng());
    OperandCopy copy;
    const std::vector<uint8_t> out = run_copy(c, source, copy);
    const int64_t per_chunk = 16 / c.element_bytes;
    const int64_t written = (c.row_elements + per_chunk - 1) / per_chunk * per_chunk;
    int64_t wrong = 0;
    for (int64_t r = 0; r < c.rows; ++r)
      for (int64_t e = 0; e < written; ++e)
        for (int b = 0; b < c.element_bytes; ++b) {
          const uint8_t got = out[size_t((r * copy.padded_ld + e) * c.element_bytes + b)];
          const uint8_t want =
              e < c.row_elements
                  ? source[size_t((c.offset_elements + r * c.source_ld + e) * c.element_bytes + b)]
                  : 0;   // past the row: zeros
          wrong += got != want;
        }
    EXPECT_EQ(wrong, 0) << label;
  }
}

// The copy's rate on a large operand (4096 rows of 4097 bf16), timed with events: printed for
// the log; the cost model's figure is 0.6 of the DRAM bandwidth (cost_model.cpp).
TEST(OperandCopyGpu, RateOnALargeOperand) {
  AUTOGEMM_REQUIRE_GPU();
  const int64_t rows = 4096, row_elements = 4097;
  bench::DeviceBuffer src(size_t(rows * row_elements * 2));
  cuda_check(cudaMemset(src.get(), 0x3c, src.bytes()), "cudaMemset(source)");
  KernelSpec spec;
  spec.copy_a = {rows, row_elements, row_elements, 4104, 2};
  GemmOperands operands;
  operands.a = src.get();
  runtime::release_copies(runtime::copy_operands(spec, operands, nullptr), nullptr);   // warm-up
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  constexpr int kCalls = 20;
  cuda_check(cudaEventRecord(start), "cudaEventRecord");
  for (int i = 0; i < kCalls; ++i)
    runtime::release_copies(runtime::copy_operands(spec, operands, nullptr), nullptr);
  cuda_check(cudaEventRecord(stop), "cudaEventRecord");
  cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  const double us = 1e3 * ms / kCalls;
  const double bytes = double(rows) * (row_elements + 4104) * 2;
  std::printf("[ copy ] 4096 rows of 4097 bf16 into rows of 4104: %.1f us a copy, %.0f GB/s of "
              "bytes read and written (back to back, L2 not flushed)\n",
              us, bytes / us / 1e3);
  EXPECT_GT(us, 0.0);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}
