// cuTensorMapEncodeTiled's rules (CUDA 13.0 cuda.h, hopper-facts.md 3.1) and the swizzle
// recommender. Each rule is broken on its own, starting from a map the driver accepts.
#include <gtest/gtest.h>

#include "autogemm/errors.hpp"
#include "plan/tma_rules.hpp"

using namespace autogemm;
using namespace autogemm::plan;

namespace {

// A row-major bf16 M x K operand tile map, K-major: DeepGEMM's recipe (hopper-facts.md 3.2).
TmaDescription gemm_operand(uint64_t rows = 4096, uint64_t k = 4096) {
  TmaDescription d;
  d.rank = 2;
  d.global_address = 0x7f0000000000;
  d.elem_bytes = 2;
  d.global_dims = {k, rows};
  d.global_strides = {k * 2};
  d.box_dims = {64, 128};
  d.element_strides = {1, 1};
  d.swizzle = Swizzle::b128;
  return d;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST(TmaRules, GemmOperandMapsAreLegal) {
  EXPECT_EQ(tma_violation(gemm_operand()), "");
  TmaDescription fp8 = gemm_operand();
  fp8.elem_bytes = 1;
  fp8.global_strides = {4096};
  fp8.box_dims = {128, 128};
  EXPECT_EQ(tma_violation(fp8), "");
  TmaDescription unknown_address = gemm_operand();
  unknown_address.global_address = 0;  // not known yet: skip the alignment check
  unknown_address.element_strides.clear();
  EXPECT_EQ(tma_violation(unknown_address), "");
  // Rank 3 (batched), strides include the previous dimension.
  TmaDescription batched = gemm_operand(256, 512);
  batched.rank = 3;
  batched.global_dims = {512, 256, 8};
  batched.global_strides = {1024, 1024 * 256};
  batched.box_dims = {64, 128, 1};
  batched.element_strides = {1, 1, 1};
  EXPECT_EQ(tma_violation(batched), "");
}

TEST(TmaRules, Rank) {
  for (int rank : {0, 6, -1}) {
    TmaDescription d = gemm_operand();
    d.rank = rank;
    EXPECT_TRUE(starts_with(tma_violation(d), "rank = " + std::to_string(rank) + ": ")) << rank;
  }
  TmaDescription one = gemm_operand();
  one.rank = 1;
  one.global_dims = {4096};
  one.global_strides = {};
  one.box_dims = {64};
  one.element_strides = {1};
  EXPECT_EQ(tma_violation(one), "");
  TmaDescription interleaved = gemm_operand();
  interleaved.interleaved = true;
  EXPECT_EQ(tma_violation(interleaved), "rank = 2: interleaved tensor maps need rank >= 3");
}

TEST(TmaRules, ElementSizeAndArrayLengths) {
  for (int bytes : {0, 3, 16}) {
    TmaDescription d = gemm_operand();
    d.elem_bytes = bytes;
    EXPECT_TRUE(starts_with(tma_violation(d), "elem_bytes = " + std::to_string(bytes)));
  }
  TmaDescription d = gemm_operand();
  d.global_dims.push_back(2);
  EXPECT_EQ(tma_violation(d), "global_dims = 3 entries: rank 2 needs 2 entries");
  d = gemm_operand();
  d.global_strides.clear();
  EXPECT_TRUE(starts_with(tma_violation(d), "global_strides = 0 entries"));
  d = gemm_operand();
  d.box_dims = {64};
  EXPECT_TRUE(starts_with(tma_violation(d), "box_dims = 1 entries"));
  d = gemm_operand();
  d.element_strides = {1, 1, 1};
  EXPECT_TRUE(starts_with(tma_violation(d), "element_strides = 3 entries"));
}

TEST(TmaRules, GlobalAddressAlignment) {
  for (uint64_t offset : {2u, 8u, 24u}) {
    TmaDescription d = gemm_operand();
    d.global_address += offset;
    const std::string why = tma_violation(d);
    EXPECT_TRUE(starts_with(why, "global_address = 0x")) << why;
    EXPECT_NE(why.find("16-byte aligned"), std::string::npos) << why;
  }
  TmaDescription d = gemm_operand();
  d.global_address += 32;
  EXPECT_EQ(tma_violation(d), "");
}

// The wide L2 promotion only where base and row pitch are whole 256-byte units: rows of 2000
// bytes (K = 1000 bf16), of 33 x 128 bytes, or a base 16 bytes off take 128-byte fills.
TEST(TmaRules, L2PromotionIsWideOnlyOnWhole256ByteRows) {
  EXPECT_EQ(tma_l2_promotion_bytes(0x10000, 8192), 256);
  EXPECT_EQ(tma_l2_promotion_bytes(0x10000, 256), 256);
  EXPECT_EQ(tma_l2_promotion_bytes(0x10000, 2000), 128);
  EXPECT_EQ(tma_l2_promotion_bytes(0x10000, 33 * 128), 128);
  EXPECT_EQ(tma_l2_promotion_bytes(0x10010, 8192), 128);
  EXPECT_EQ(tma_l2_promotion_bytes(0x10080, 8192), 128);
}

TEST(TmaRules, GlobalDims) {
  TmaDescription d = gemm_operand();
  d.global_dims[1] = 0;
  EXPECT_EQ(tma_violation(d), "global_dims[1] = 0: must be in 1..2^32");
  d = gemm_operand();
  d.global_dims[1] = (uint64_t(1) << 32) + 1;
  EXPECT_EQ(tma_violation(d), "global_dims[1] = 4294967297: must be in 1..2^32");
  d.global_dims[1] = uint64_t(1) << 32;  // the limit itself is allowed
  EXPECT_EQ(tma_violation(d), "");
}

TEST(TmaRules, GlobalStrides) {
  // lda = 1001 bf16 elements: the example from problem.hpp.
  TmaDescription d = gemm_operand(4096, 1000);
  d.global_strides = {2002};
  EXPECT_EQ(tma_violation(d), "global_strides[0] = 2002 bytes: must be a multiple of 16");
  d.global_strides = {2016};  // padded to 1008 elements
  EXPECT_EQ(tma_violation(d), "");
  d.global_strides = {1984};  // rows would overlap: 1000 elements need 2000 bytes
  EXPECT_TRUE(starts_with(tma_violation(d), "global_strides[0] = 1984 bytes: must be at least the 2000 bytes"))
      << tma_violation(d);

  TmaDescription big = gemm_operand(1, 16);
  big.global_strides = {uint64_t(1) << 40};
  EXPECT_EQ(tma_violation(big), "global_strides[0] = 1099511627776 bytes: must be below 2^40 bytes");
  big.global_strides = {(uint64_t(1) << 40) - 16};
  EXPECT_EQ(tma_violation(big), "");

  TmaDescription batched = gemm_operand(256, 512);
  batched.rank = 3;
  batched.global_dims = {512, 256, 8};
  batched.global_strides = {1024, 1024 * 255};  // batch stride smaller than one matrix
  batched.box_dims = {64, 128, 1};
  batched.element_strides = {};
  EXPECT_TRUE(starts_with(tma_violation(batched), "global_strides[1] = 261120 bytes"))
      << tma_violation(batched);
}

TEST(TmaRules, BoxDims) {
  TmaDescription d = gemm_operand();
  d.box_dims[1] = 0;
  EXPECT_EQ(tma_violation(d), "box_dims[1] = 0: must be in 1..256");
  d.box_dims[1] = 257;
  EXPECT_EQ(tma_violation(d), "box_dims[1] = 257: must be in 1..256");
  d.box_dims[1] = 256;
  EXPECT_EQ(tma_violation(d), "");
  d.box_dims[0] = 4;
  EXPECT_EQ(tma_violation(d), "box_dims[0] = 4 (8 bytes): the inner box must be a multiple of 16 bytes");
}

TEST(TmaRules, InnerBoxWithinSwizzleSpan) {
  TmaDescription d = gemm_operand();
  d.box_dims[0] = 128;
  EXPECT_EQ(tma_violation(d), "box_dims[0] = 128 (256 bytes): inner box must be <= 128 bytes with 128B swizzle");
  d.swizzle = Swizzle::none;
  EXPECT_EQ(tma_violation(d), "");
  // Every inner box, element size and swizzle: legal iff <= 256 elements, a multiple of
  // 16 bytes and within the swizzle span (bf16 128B -> 64, fp8 -> 128, f32 -> 32 elements).
  for (int elem : {1, 2, 4, 8})
    for (Swizzle s : {Swizzle::none, Swizzle::b32, Swizzle::b64, Swizzle::b128})
      for (uint32_t box = 1; box <= 300; ++box) {
        TmaDescription t = gemm_operand();
        t.elem_bytes = elem;
        t.global_strides = {4096u * elem};
        t.box_dims[0] = box;
        t.swizzle = s;
        const uint32_t bytes = box * elem;
        const bool legal = box <= 256 && bytes % 16 == 0 &&
                           (s == Swizzle::none || bytes <= uint32_t(swizzle_bytes(s)));
        EXPECT_EQ(tma_violation(t).empty(), legal) << elem << " " << to_string(s) << " " << box;
      }
}

TEST(TmaRules, ElementStrides) {
  TmaDescription d = gemm_operand();
  d.element_strides = {1, 0};
  EXPECT_EQ(tma_violation(d), "element_strides[1] = 0: must be in 1..8");
  d.element_strides = {9, 1};
  EXPECT_EQ(tma_violation(d), "element_strides[0] = 9: must be in 1..8");
  d.element_strides = {1, 8};
  EXPECT_EQ(tma_violation(d), "");
}

TEST(TmaRules, SwizzleEnumIsTheReverseOfTheDescriptorCode) {
  EXPECT_EQ(tma_swizzle_code(Swizzle::none), 0);
  EXPECT_EQ(tma_swizzle_code(Swizzle::b32), 1);
  EXPECT_EQ(tma_swizzle_code(Swizzle::b64), 2);
  EXPECT_EQ(tma_swizzle_code(Swizzle::b128), 3);
  // TileLang encodes the descriptor's layout type as 4 - (TMA ordinal).
  for (Swizzle s : {Swizzle::b32, Swizzle::b64, Swizzle::b128})
    EXPECT_EQ(descriptor_layout_code(s), 4 - tma_swizzle_code(s)) << to_string(s);
}

TEST(TmaRules, RecommendedSwizzleExamples) {
  auto check = [](int elems, int bytes, Swizzle s, uint32_t inner) {
    const SwizzleChoice c = recommend_swizzle(elems, bytes);
    EXPECT_EQ(c.swizzle, s) << elems << " x " << bytes << " B";
    EXPECT_EQ(c.inner_box_elems, inner) << elems << " x " << bytes << " B";
  };
  check(64, 2, Swizzle::b128, 64);    // bf16 BLOCK_K = 64
  check(128, 1, Swizzle::b128, 128);  // fp8 BLOCK_K = 128
  check(256, 2, Swizzle::b128, 64);   // wider than the span: one box per 64 elements
  check(32, 2, Swizzle::b64, 32);
  check(16, 2, Swizzle::b32, 16);
  check(32, 4, Swizzle::b128, 32);    // f32 / tf32
  check(3, 2, Swizzle::none, 8);      // rounded up to one 16-byte unit
  check(1, 8, Swizzle::none, 2);
  EXPECT_THROW(recommend_swizzle(0, 2), InvalidArgument);
  EXPECT_THROW(recommend_swizzle(64, 3), InvalidArgument);
}

// Property: for every contiguous extent and element size the recommendation is a legal map,
// the widest swizzle the extent fills, and its inner box covers min(extent, span).
TEST(TmaRules, RecommendedSwizzleIsAlwaysLegal) {
  for (int elem : {1, 2, 4, 8})
    for (int elems = 1; elems <= 4096; ++elems) {
      const SwizzleChoice c = recommend_swizzle(elems, elem);
      const uint64_t contiguous_bytes = uint64_t(elems) * elem;
      TmaDescription d;
      d.rank = 2;
      d.global_address = 0x10000;
      d.elem_bytes = elem;
      d.global_dims = {uint64_t(elems), 64};
      d.global_strides = {(contiguous_bytes + 15) / 16 * 16};
      d.box_dims = {c.inner_box_elems, 64};
      d.swizzle = c.swizzle;
      ASSERT_EQ(tma_violation(d), "") << elems << " x " << elem << " B";
      const uint64_t box_bytes = uint64_t(c.inner_box_elems) * elem;
      if (c.swizzle == Swizzle::none) {
        ASSERT_LT(contiguous_bytes, 32u) << "a 32B swizzle would fit " << elems << " x " << elem;
        ASSERT_GE(c.inner_box_elems, uint32_t(elems));  // covers the row in one box
      } else {
        const int span = swizzle_bytes(c.swizzle);
        ASSERT_EQ(box_bytes, uint64_t(span));           // the box fills the span exactly
        ASSERT_GE(contiguous_bytes, uint64_t(span));
        if (c.swizzle != Swizzle::b128) ASSERT_LT(contiguous_bytes, 2u * span);  // no wider fits
      }
    }
}
