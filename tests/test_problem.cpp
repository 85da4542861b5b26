// GemmProblem validation and the TMA-compatibility rule: errors name argument, value, rule.
#include <gtest/gtest.h>

#include "autogemm/errors.hpp"
#include "autogemm/config.hpp"
#include "autogemm/problem.hpp"

using namespace autogemm;

static GemmProblem square(int64_t s) {
  GemmProblem p;
  p.m = p.n = p.k = s;
  return p;
}

TEST(Problem, ValidAcceptsOddShapes) {
  GemmProblem p = square(1);
  EXPECT_NO_THROW(validate(p));
  p.m = 4093; p.n = 7; p.k = 3001;
  EXPECT_NO_THROW(validate(p));
}

TEST(Problem, ZeroAndNegativeSizesNameTheArgument) {
  for (const char* which : {"m", "n", "k"}) {
    for (int64_t bad : {int64_t(0), int64_t(-5)}) {
      GemmProblem p = square(64);
      (which[0] == 'm' ? p.m : which[0] == 'n' ? p.n : p.k) = bad;
      try {
        validate(p);
        FAIL() << "no error for " << which << " = " << bad;
      } catch (const InvalidArgument& e) {
        EXPECT_EQ(e.argument(), which);
        EXPECT_EQ(e.value(), std::to_string(bad));
        EXPECT_NE(std::string(e.what()).find(">= 1"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(Problem, LeadingDimensionBelowRowLengthIsAnError) {
  GemmProblem p = square(128);
  p.lda = 100;
  EXPECT_THROW(validate(p), InvalidArgument);
  p.lda = 0;
  p.layout = Layout::tn;  // A stored K x M: lda >= M
  p.m = 256;
  p.lda = 200;
  try {
    validate(p);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "lda");
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
}

TEST(Problem, MixedOrUnsupportedTypesAreErrors) {
  GemmProblem p = square(64);
  p.b_type = DType::fp16;
  EXPECT_THROW(validate(p), InvalidArgument);
  p = square(64);
  p.a_type = p.b_type = DType::e4m3;
  EXPECT_THROW(validate(p), InvalidArgument);  // FP8 needs scales
  p.scaling = Scaling::block_1x128_128x128;
  EXPECT_NO_THROW(validate(p));
  p.layout = Layout::nn;
  EXPECT_THROW(validate(p), InvalidArgument);  // FP8 must be K-major
  p = square(64);
  p.d_type = DType::e5m2;
  EXPECT_THROW(validate(p), InvalidArgument);
  p.d_type = DType::e4m3;   // FP8 output with 1x128 scales
  EXPECT_NO_THROW(validate(p));
}

TEST(Problem, TmaIncompatibilityNamesStrideRule) {
  GemmProblem p = square(1024);
  EXPECT_EQ(tma_incompatibility(p), "");
  p.lda = 1001;  // 2002 bytes
  const std::string why = tma_incompatibility(p);
  EXPECT_NE(why.find("lda = 1001"), std::string::npos) << why;
  EXPECT_NE(why.find("2002 bytes"), std::string::npos) << why;
  EXPECT_NE(why.find("16 bytes"), std::string::npos) << why;
  EXPECT_NE(why.find("1008"), std::string::npos) << why;
  p.lda = 0;
  p.k = 1001;  // packed rows of 1001 elements break the rule too
  EXPECT_NE(tma_incompatibility(p), "");
}

// The padding the message suggests keeps the size rule (< 2^31 elements): where the next
// 16-byte multiple is past it, the message says so instead of suggesting it.
TEST(Problem, PaddingSuggestionKeepsTheSizeRule) {
  GemmProblem p = square(16);
  p.k = (int64_t(1) << 31) - 1;  // rows of 2^31 - 1 bf16: the next multiple is 2^31
  const std::string why = tma_incompatibility(p);
  EXPECT_NE(why.find("lda = 2147483647"), std::string::npos) << why;
  EXPECT_EQ(why.find("pad rows to 2147483648"), std::string::npos) << why;
  EXPECT_NE(why.find("2^31"), std::string::npos) << why;
  p.k = (int64_t(1) << 31) - 9;  // 2^31 - 8 is a multiple of 8 elements and below 2^31
  EXPECT_NE(tma_incompatibility(p).find("pad rows to 2147483640 elements"), std::string::npos)
      << tma_incompatibility(p);
}

// An output type validate refuses is named with the spellings users write ("int8" is s8).
TEST(Problem, RefusedOutputTypeNamesTheUsersSpelling) {
  GemmProblem p = square(64);
  p.d_type = *parse_dtype("int8");
  try {
    validate(p);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "d_type");
    EXPECT_NE(e.value().find("int8"), std::string::npos) << e.what();
    EXPECT_NE(e.rule().find("bfloat16"), std::string::npos) << e.what();
  }
}

TEST(Problem, ParseNames) {
  EXPECT_EQ(parse_dtype("BF16"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp8"), DType::e4m3);
  EXPECT_FALSE(parse_dtype("int4").has_value());
  EXPECT_EQ(parse_layout("TN"), Layout::tn);
  EXPECT_FALSE(parse_layout("xx").has_value());
  EXPECT_TRUE(a_is_k_major(Layout::nt));
  EXPECT_TRUE(b_is_k_major(Layout::nt));
  EXPECT_FALSE(b_is_k_major(Layout::nn));
  EXPECT_FALSE(a_is_k_major(Layout::tt));
}

TEST(Config, ParseIsTheInverseOfDescribe) {
  GemmConfig c;
  c.block_m = 128; c.block_n = 240; c.num_stages = 3; c.num_consumers = 2;
  c.cluster_m = 2; c.multicast = Multicast::b; c.raster_group = 16;
  c.raster_order = RasterOrder::along_n;
  c.split_k = 4;
  c.promotion_buffers = 2;
  EXPECT_EQ(GemmConfig::parse(c.describe()), c) << c.describe();
  c.ordered_issue = true;
  EXPECT_EQ(c.describe(), "128x240x64 s3 c2 p g16n cl2x1/b sk4 pb2 oi");
  EXPECT_EQ(GemmConfig::parse(c.describe()), c) << c.describe();
  GemmConfig chunked = c;
  chunked.ordered_issue = false;
  chunked.split_k = 1;
  chunked.block_n = 256;
  chunked.d_chunk_boxes = 2;
  EXPECT_EQ(chunked.describe(), "128x256x64 s3 c2 p g16n cl2x1/b pb2 dc2");
  EXPECT_EQ(GemmConfig::parse(chunked.describe()), chunked) << chunked.describe();
  GemmConfig t;
  t.persistent = false; t.raster_group = 1; t.num_stages = 1; t.n_tail_kernel = true;
  EXPECT_EQ(t.describe(), "128x128x64 s1 c1 ntk");
  EXPECT_EQ(GemmConfig::parse(t.describe()), t) << t.describe();
  // Warp specialisation and TMA loads and stores are no fields: every configuration has them,
  // and the ladder's steps without them are the ladder's own.
  for (const char* old : {"128x128x64 s4 c1 ws p g8", "128x128x64 s4 c1 p g8 tma/tma",
                          "128x128x64 s1 c1 threads/threads", "128x128x64 s4 c1 p ck4",
                          "128x128x64 s4 c1 p ts8", "128x128x64 s4 c1 p ctas1",
                          "128x128x64 s4 c1 p pdlw"})
    EXPECT_THROW(GemmConfig::parse(old), InvalidArgument) << old;
  EXPECT_THROW(GemmConfig::parse("128x128 s3"), InvalidArgument);
  EXPECT_THROW(GemmConfig::parse("128x128x64 q7"), InvalidArgument);
  EXPECT_THROW(GemmConfig::parse("128x128x64 cl2x1/c"), InvalidArgument);
}
