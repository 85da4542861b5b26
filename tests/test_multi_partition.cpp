// Cutting a GEMM's dimension into parts of whole granules (src/multi/partition.hpp) and the
// pointer math of a split GEMM's pieces (src/multi/operand_views.hpp).
#include <gtest/gtest.h>

#include "multi/operand_views.hpp"
#include "multi/partition.hpp"
#include "multi_test_util.hpp"

using namespace autogemm;
using multi::Range;

TEST(MultiPartition, EvenSplitInWholeGranules) {
  const auto parts = multi::split_range({0, 16384}, 4, 64);
  ASSERT_EQ(parts.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(parts[i], (Range{4096 * i, 4096 * (i + 1)}));
}

TEST(MultiPartition, EarlierPartsTakeTheExtraGranulesAndTheLastEndsAtTheEnd) {
  // 1000 rows = 15 full granules of 64 and one of 40: 16 granules over 3 parts = 6, 5, 5.
  const auto parts = multi::split_range({0, 1000}, 3, 64);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0], (Range{0, 384}));
  EXPECT_EQ(parts[1], (Range{384, 704}));
  EXPECT_EQ(parts[2], (Range{704, 1000}));
}

TEST(MultiPartition, FewerGranulesThanPartsLeavesEmptyParts) {
  const auto parts = multi::split_range({0, 64}, 4, 64);
  EXPECT_EQ(parts[0], (Range{0, 64}));
  for (int i = 1; i < 4; ++i) EXPECT_EQ(parts[i].size(), 0);
}

TEST(MultiPartition, OffsetRangesStayInside) {
  const auto parts = multi::split_range({128, 448}, 2, 64);
  EXPECT_EQ(parts[0], (Range{128, 320}));
  EXPECT_EQ(parts[1], (Range{320, 448}));
}

TEST(MultiPartition, BadArgumentsNameTheArgument) {
  autogemm::testing::expect_invalid([] { multi::split_range({0, 10}, 0, 64); }, "parts");
  autogemm::testing::expect_invalid([] { multi::split_range({0, 10}, 2, 0); }, "granule");
  autogemm::testing::expect_invalid([] { multi::split_range({10, 0}, 2, 64); }, "range");
}

TEST(MultiOperandViews, KMajorAndTransposedAddressing) {
  const char* base = reinterpret_cast<const char*>(0x10000);
  // A k-major view of rows 64.. and depths 128.., ld 1000 elements of 2 bytes.
  const multi::OperandView k_major{base, 1000, 64, 128, true, 2};
  EXPECT_EQ(k_major.at(64, 128), base);
  EXPECT_EQ(k_major.at(65, 130), base + (1000 + 2) * 2);
  // Transposed: stored rows are depths.
  const multi::OperandView transposed{base, 1000, 64, 128, false, 2};
  EXPECT_EQ(transposed.at(65, 130), base + (2 * 1000 + 1) * 2);
}

TEST(MultiOperandViews, StoredBlocksAndWhetherTheyAreContiguous) {
  // Rows 64..128 of a k-major A with K = 512: whole stored rows, one contiguous run.
  const multi::StoredBlock rows = multi::stored_block(true, 64, 128, 0, 512);
  EXPECT_TRUE(multi::block_is_contiguous(rows, 512));
  EXPECT_EQ(multi::contiguous_bytes(rows, 520, 2), (63 * 520 + 512) * 2);
  // A K slice of the same A is strided: packed before sending.
  const multi::StoredBlock slice = multi::stored_block(true, 0, 256, 128, 256);
  EXPECT_FALSE(multi::block_is_contiguous(slice, 512));
  EXPECT_EQ(slice.rows(), 256);
  EXPECT_EQ(slice.cols(), 128);
  // Transposed operand: the K slice is whole stored rows.
  const multi::StoredBlock t_slice = multi::stored_block(false, 0, 256, 128, 256);
  EXPECT_EQ(t_slice.row_begin, 128);
  EXPECT_TRUE(multi::block_is_contiguous(t_slice, 256));
}

TEST(MultiOperandViews, PackedRowsAreWholeSixteenByteChunks) {
  EXPECT_EQ(multi::packed_ld(100, 2), 104);   // bf16: 8 per 16 bytes
  EXPECT_EQ(multi::packed_ld(100, 1), 112);   // e4m3: 16 per 16 bytes
  EXPECT_EQ(multi::packed_ld(100, 4), 100);   // fp32: 4 per 16 bytes
  EXPECT_EQ(multi::packed_ld(128, 2), 128);
}

TEST(MultiOperandViews, Fp8ScalesOfARowOrAColumnBlock) {
  const float* base = reinterpret_cast<const float*>(0x20000);
  // K = 300: 3 scales per row of A and per 128-column block of B.
  EXPECT_EQ(multi::a_scales_at(base, 0, 5, 300), base + 15);
  EXPECT_EQ(multi::a_scales_at(base, 4, 5, 300), base + 3);
  EXPECT_EQ(multi::b_scales_at(base, 0, 256, 300), base + 6);
  EXPECT_EQ(multi::b_scales_at(base, 128, 256, 300), base + 3);
}
