// A and B whose rows TMA cannot describe: the planner's copies into padded rows
// (plan/operand_copy.hpp), their price in the cost model against cuBLASLt's kernels for
// unaligned rows, and the spec the launcher runs from. No GPU needed.
#include <gtest/gtest.h>

#include <cstdint>

#include "autogemm/plan.hpp"
#include "plan/kernel_spec.hpp"
#include "plan/operand_copy.hpp"
#include "plan/rules.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;
using autogemm::testing::block_fp8_problem;
using autogemm::testing::hopper;
using autogemm::testing::problem;

namespace {

GpuInfo h200() { return device_preset("h200"); }

}  // namespace

// Only a stride that breaks TMA's rule (16 bytes) is padded, to the next multiple of 256 bytes
// (whole L2 lines for the TMA boxes' rows): K odd pads both K-major operands; with A stored K x
// M (tn) an odd M pads A alone; FP8 pads to 256 elements; grouped problems and strides no
// padding can fix are left alone.
TEST(OperandCopy, KernelProblemPadsOnlyTheStridesTmaCannotDescribe) {
  GemmProblem p = problem(2049, 2049, 2049);
  GemmProblem k = plan::kernel_problem(p);
  EXPECT_EQ(k.lda, 2176);   // 4352 bytes = 17 x 256
  EXPECT_EQ(k.ldb, 2176);
  EXPECT_EQ(k.ldd, 0);   // D is written by the threads instead (d_needs_thread_stores)
  EXPECT_TRUE(plan::copies_operands(p));
  EXPECT_EQ(tma_load_incompatibility(k), "");

  p = problem(1201, 1000, 1024, Layout::tn);   // A is K x M: rows of 1201
  k = plan::kernel_problem(p);
  EXPECT_EQ(k.lda_or_packed(), 1280);
  EXPECT_EQ(k.ldb_or_packed(), 1000);   // B is K x N too: rows of 1000 (2000 bytes)
  const OperandCopy a = plan::operand_copy_a(p);
  EXPECT_TRUE(a.active());
  EXPECT_EQ(a.rows, 1024);          // K rows of M elements
  EXPECT_EQ(a.row_elements, 1201);
  EXPECT_EQ(a.source_ld, 1201);
  EXPECT_EQ(a.padded_ld, 1280);
  EXPECT_EQ(a.element_bytes, 2);
  EXPECT_EQ(a.bytes(), 1024 * 1280 * 2);
  EXPECT_FALSE(plan::operand_copy_b(p).active());

  p = problem(777, 1203, 1024, Layout::nn);    // B is K x N: rows of 1203
  const OperandCopy b = plan::operand_copy_b(p);
  EXPECT_EQ(b.rows, 1024);
  EXPECT_EQ(b.row_elements, 1203);
  EXPECT_EQ(b.padded_ld, 1280);
  EXPECT_FALSE(plan::operand_copy_a(p).active());

  p = block_fp8_problem(1000, 1000, 1000);      // 1000 one-byte elements: 1024
  EXPECT_EQ(plan::kernel_problem(p).lda, 1024);
  EXPECT_EQ(plan::operand_copy_b(p).element_bytes, 1);

  p = problem(1024, 1024, 1024);                // aligned: nothing to copy
  EXPECT_FALSE(plan::copies_operands(p));
  p.lda = 1030;                                  // a caller's stride, padded like a packed one
  EXPECT_EQ(plan::kernel_problem(p).lda, 1152);

  p = problem(16, 16, (int64_t(1) << 31) - 1);   // the next multiple of 16 bytes is 2^31
  EXPECT_FALSE(plan::copies_operands(p));
  EXPECT_NE(plan_gemm(p, h200()).path_reason.find("padding cannot help"), std::string::npos);
}

// The spec holds the copies; its kernels' problem and tensor maps have the padded strides; the
// caller's A pointer is no longer held to TMA's address rule (the kernels read the copy).
TEST(OperandCopy, SpecCarriesTheCopiesAndTheKernelsReadPaddedRows) {
  const GemmProblem p = problem(2049, 2049, 2049);
  const KernelSpec spec = make_kernel_spec(p, GemmConfig::parse("128x128x64 s4 c2 p g8"), h200());
  ASSERT_TRUE(spec.copy_a.active());
  ASSERT_TRUE(spec.copy_b.active());
  EXPECT_EQ(spec.problem.lda_or_packed(), 2049);
  ASSERT_EQ(spec.kernels.size(), 1u);
  EXPECT_EQ(spec.kernels[0].problem.lda, 2176);
  EXPECT_EQ(spec.kernels[0].problem.ldb, 2176);
  int maps = 0;
  for (const TensorMapSpec& map : spec.kernels[0].tensor_maps)
    if (map.operand == 'A' || map.operand == 'B') {
      EXPECT_EQ(map.ld, 2176) << map.operand;
      ++maps;
    }
  EXPECT_EQ(maps, 2);
  EXPECT_NE(spec.reason.find("A copied into rows of 2176 elements first (lda = 2049 elements"),
            std::string::npos)
      << spec.reason;
  GemmOperands o;
  o.a = reinterpret_cast<const void*>(uintptr_t(0x10002));   // 2 bytes off TMA's 16
  o.b = reinterpret_cast<const void*>(uintptr_t(0x20002));
  o.d = reinterpret_cast<void*>(uintptr_t(0x30002));         // stored by the threads
  EXPECT_EQ(plan::operand_violation(spec, o), "");
  // The decode family reads a copied A from the copy too (its own 16-byte pointer rule).
  GemmProblem decode = problem(4, 4096, 4096);
  decode.lda = 4097;
  const KernelSpec decode_spec = make_kernel_spec(decode, GemmConfig::parse("mma 8x16x128"), h200());
  ASSERT_TRUE(decode_spec.copy_a.active());
  EXPECT_FALSE(decode_spec.copy_b.active());
  o.b = reinterpret_cast<const void*>(uintptr_t(0x20000));
  EXPECT_EQ(plan::operand_violation(decode_spec, o), "");   // a 2 bytes off: copied
  o.b = reinterpret_cast<const void*>(uintptr_t(0x20008));   // b read in place: refused
  EXPECT_NE(plan::operand_violation(decode_spec, o).find("b = 0x20008"), std::string::npos);
  // A forced configuration is judged on the rows the kernels read.
  EXPECT_EQ(legality_violation(p, GemmConfig::parse("128x128x64 s4 c2 p g8 sk2"), h200()), "");
}

// The cost model charges the copies (bytes read and written, a launch each) and prices
// cuBLASLt's unaligned kernels at their measured rates; the planner weighs the two.
TEST(OperandCopy, PlannerWeighsTheCopiesAgainstCuBLASLtsUnalignedKernels) {
  const GpuInfo gpu = h200();
  // Large enough that the copies are a small part: our kernel on padded rows.
  const Plan large = plan_gemm(problem(2049, 2049, 2049), gpu);
  ASSERT_EQ(large.best().config.instruction, Instruction::wgmma);
  EXPECT_TRUE(large.spec.copy_a.active() && large.spec.copy_b.active());
  const Prediction& pr = large.best().prediction;
  EXPECT_GT(pr.operand_copy_us, 6.0);   // two launches at least
  const GemmProblem padded = plan::kernel_problem(problem(2049, 2049, 2049));
  EXPECT_DOUBLE_EQ(pr.time_us,
                   predict(padded, large.best().config, gpu).time_us + pr.operand_copy_us);
  EXPECT_DOUBLE_EQ(predict(padded, large.best().config, gpu).operand_copy_us, 0.0);
  // cuBLASLt on unaligned rows is priced well below its aligned rate.
  const GemmConfig vendor = GemmConfig::parse("cuBLASLt");
  EXPECT_GT(predict(problem(2049, 2049, 2049), vendor, gpu).time_us,
            3 * predict(problem(2048, 2048, 2048), vendor, gpu).time_us);
  // One row: copying B (twice its bytes) costs more than cuBLASLt's unaligned GEMV.
  const Plan gemv = plan_gemm(problem(1, 4096, 4097), gpu);
  EXPECT_EQ(gemv.best().config.instruction, Instruction::vendor);
  EXPECT_TRUE(gemv.spec.vendor);
  EXPECT_NE(gemv.path_reason.find("loses to cuBLASLt"), std::string::npos) << gemv.path_reason;
  EXPECT_NE(gemv.path_reason.find("lda = 4097 elements"), std::string::npos) << gemv.path_reason;
  // Block-scaled FP8: cuBLASLt refuses such rows, so the copies are the only path.
  const Plan fp8 = plan_gemm(block_fp8_problem(1, 4096, 4100), gpu);
  EXPECT_EQ(fp8.best().config.instruction == Instruction::vendor, false);
  for (const Candidate& c : fp8.candidates) EXPECT_NE(c.config.instruction, Instruction::vendor);
  EXPECT_TRUE(fp8.spec.copy_b.active());
  // Grouped problems keep their rule: no copies, cuBLASLt's reason.
  GemmProblem grouped = problem(128, 4096, 4097);
  grouped.grouping = Grouping::contiguous;
  grouped.num_groups = 2;
  EXPECT_FALSE(plan::copies_operands(grouped));
}
