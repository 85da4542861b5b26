// wgmma shape/type rules and the shared-memory matrix descriptor, checked exhaustively against
// the PTX ISA shape table and canonical layouts (hopper-facts.md 1.1-1.5, 2.2).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "autogemm/errors.hpp"
#include "plan/wgmma_rules.hpp"

using namespace autogemm;
using namespace autogemm::plan;

namespace {

constexpr ComputeCapability kHopper{9, 0};
const DType kAllTypes[] = {DType::bf16, DType::fp16, DType::fp32, DType::tf32, DType::e4m3,
                           DType::e5m2, DType::s8,   DType::u8,   DType::s32};

// The PTX ISA wgmma table (hopper-facts.md 2.2), written as data: one row per input family.
struct PtxRow {
  std::set<DType> a_types, b_types;
  int k;
  bool restricted_n;  // s8/u8: 8, 16, 24, 32, then 48..256 step 16
  std::set<DType> accumulators;
  bool transposable;
};
const PtxRow kPtxTable[] = {
    {{DType::fp16}, {DType::fp16}, 16, false, {DType::fp16, DType::fp32}, true},
    {{DType::bf16}, {DType::bf16}, 16, false, {DType::fp32}, true},
    {{DType::tf32}, {DType::tf32}, 8, false, {DType::fp32}, false},
    {{DType::e4m3, DType::e5m2}, {DType::e4m3, DType::e5m2}, 32, false, {DType::fp16, DType::fp32}, false},
    {{DType::s8, DType::u8}, {DType::s8, DType::u8}, 32, true, {DType::s32}, false},
};

bool ptx_legal(const WgmmaShape& s) {
  if (s.m != 64) return false;
  for (const PtxRow& row : kPtxTable) {
    if (!row.a_types.count(s.a_type) || !row.b_types.count(s.b_type)) continue;
    const bool n_ok = row.restricted_n
                          ? (s.n == 8 || s.n == 16 || s.n == 24 || s.n == 32 ||
                             (s.n >= 48 && s.n <= 256 && s.n % 16 == 0))
                          : (s.n >= 8 && s.n <= 256 && s.n % 8 == 0);
    return s.k == row.k && n_ok && row.accumulators.count(s.accumulator) &&
           (row.transposable || (s.a_k_major && s.b_k_major));
  }
  return false;
}

DType default_accumulator(DType input) {
  if (input == DType::s8 || input == DType::u8) return DType::s32;
  return DType::fp32;
}

WgmmaShape shape(DType t, int n) {
  WgmmaShape s;
  s.n = n;
  s.k = wgmma_k(t);
  s.a_type = s.b_type = t;
  s.accumulator = default_accumulator(t);
  return s;
}

}  // namespace

TEST(WgmmaRules, InstructionKPerInputType) {
  EXPECT_EQ(wgmma_k(DType::bf16), 16);
  EXPECT_EQ(wgmma_k(DType::fp16), 16);
  EXPECT_EQ(wgmma_k(DType::tf32), 8);
  for (DType t : {DType::e4m3, DType::e5m2, DType::s8, DType::u8}) EXPECT_EQ(wgmma_k(t), 32);
  EXPECT_EQ(wgmma_k(DType::fp32), 0);
  EXPECT_EQ(wgmma_k(DType::s32), 0);
  // One instruction always reads 32 bytes of K (hopper-facts.md 1.4).
  for (DType t : kAllTypes)
    if (wgmma_k(t) != 0) EXPECT_EQ(wgmma_k(t) * dtype_bytes(t), 32) << to_string(t);
}

// Every (A, B, N, K, accumulator, majorness) combination agrees with the PTX table.
TEST(WgmmaRules, ValidatorMatchesPtxTableExhaustively) {
  int legal_count = 0;
  for (DType a : kAllTypes)
    for (DType b : kAllTypes)
      for (DType acc : kAllTypes)
        for (int k : {0, 8, 16, 32})
          for (int n = 0; n <= 264; ++n)
            for (int major = 0; major < 4; ++major) {
              WgmmaShape s;
              s.a_type = a;
              s.b_type = b;
              s.accumulator = acc;
              s.k = k;
              s.n = n;
              s.a_k_major = (major & 1) == 0;
              s.b_k_major = (major & 2) == 0;
              const std::string why = wgmma_violation(s, kHopper);
              const bool expected = ptx_legal(s);
              ASSERT_EQ(why.empty(), expected)
                  << to_string(a) << "x" << to_string(b) << " -> " << to_string(acc) << " n" << n
                  << " k" << k << " major" << major << ": " << why;
              legal_count += expected;
            }
  // fp16 32 N x 2 acc x 4 majorness + bf16 32 x 1 x 4 + tf32 32 + fp8 4 pairs x 32 x 2
  // + int8 4 pairs x 18 N.
  EXPECT_EQ(legal_count, 256 + 128 + 32 + 256 + 72);
}

TEST(WgmmaRules, MIsAlways64) {
  for (int m : {16, 32, 63, 65, 128, 256}) {
    WgmmaShape s = shape(DType::bf16, 128);
    s.m = m;
    const std::string why = wgmma_violation(s, kHopper);
    EXPECT_EQ(why.rfind("m = " + std::to_string(m) + ":", 0), 0u) << why;
  }
  EXPECT_EQ(wgmma_violation(shape(DType::bf16, 128), kHopper), "");
}

TEST(WgmmaRules, OnlySm90aHasWgmma) {
  const WgmmaShape s = shape(DType::bf16, 256);
  for (ComputeCapability cc : {ComputeCapability{8, 0}, ComputeCapability{8, 9},
                               ComputeCapability{9, 1}, ComputeCapability{10, 0},
                               ComputeCapability{10, 3}, ComputeCapability{12, 0}}) {
    const std::string why = wgmma_violation(s, cc);
    EXPECT_EQ(why.rfind("cc = ", 0), 0u) << why;
    EXPECT_NE(why.find("9.0"), std::string::npos) << why;
  }
}

TEST(WgmmaRules, ErrorsNameFieldValueAndRule) {
  EXPECT_EQ(wgmma_violation(shape(DType::bf16, 12), kHopper),
            "n = 12: wgmma bf16 needs N a multiple of 8 in 8..256");
  EXPECT_EQ(wgmma_violation(shape(DType::bf16, 264), kHopper),
            "n = 264: wgmma bf16 needs N a multiple of 8 in 8..256");
  EXPECT_EQ(wgmma_violation(shape(DType::s8, 40), kHopper),
            "n = 40: wgmma s8 needs N in 8, 16, 24, 32 or a multiple of 16 in 48..256");

  WgmmaShape bf16_f16acc = shape(DType::bf16, 64);
  bf16_f16acc.accumulator = DType::fp16;
  EXPECT_EQ(wgmma_violation(bf16_f16acc, kHopper),
            "accumulator = fp16: wgmma bf16 accumulates only in fp32");

  WgmmaShape mixed = shape(DType::bf16, 64);
  mixed.b_type = DType::fp16;
  EXPECT_EQ(wgmma_violation(mixed, kHopper), "b_type = fp16: wgmma with A bf16 needs B bf16");

  WgmmaShape wrong_k = shape(DType::e4m3, 64);
  wrong_k.k = 16;
  EXPECT_EQ(wgmma_violation(wrong_k, kHopper), "k = 16: wgmma e4m3 has K = 32");

  WgmmaShape fp32_in = shape(DType::bf16, 64);
  fp32_in.a_type = fp32_in.b_type = DType::fp32;
  EXPECT_EQ(wgmma_violation(fp32_in, kHopper).rfind("a_type = fp32:", 0), 0u);

  WgmmaShape fp8_transposed = shape(DType::e4m3, 128);
  fp8_transposed.b_k_major = false;
  const std::string why = wgmma_violation(fp8_transposed, kHopper);
  EXPECT_EQ(why.rfind("b_k_major = false:", 0), 0u) << why;
  EXPECT_NE(why.find("K-major"), std::string::npos) << why;
}

TEST(WgmmaRules, Fp8TypesMixAndIntTypesMix) {
  WgmmaShape s = shape(DType::e4m3, 256);
  s.b_type = DType::e5m2;
  EXPECT_EQ(wgmma_violation(s, kHopper), "");
  s.accumulator = DType::fp16;
  EXPECT_EQ(wgmma_violation(s, kHopper), "");
  WgmmaShape i = shape(DType::u8, 256);
  i.b_type = DType::s8;
  EXPECT_EQ(wgmma_violation(i, kHopper), "");
  i.b_type = DType::e4m3;
  EXPECT_EQ(wgmma_violation(i, kHopper).rfind("b_type = e4m3:", 0), 0u);
}

TEST(WgmmaRules, LegalNLists) {
  for (DType t : kAllTypes) {
    const std::vector<int> ns = wgmma_legal_n(t);
    EXPECT_TRUE(std::is_sorted(ns.begin(), ns.end()));
    for (int n = 0; n <= 264; ++n) {
      const bool listed = std::find(ns.begin(), ns.end(), n) != ns.end();
      const bool valid = wgmma_k(t) != 0 && wgmma_violation(shape(t, n), kHopper).empty();
      EXPECT_EQ(listed, valid) << to_string(t) << " n = " << n;
    }
  }
  EXPECT_EQ(wgmma_legal_n(DType::bf16).size(), 32u);
  EXPECT_EQ(wgmma_legal_n(DType::s8).size(), 18u);
  EXPECT_TRUE(wgmma_legal_n(DType::fp32).empty());
}

// select_wgmma_n returns only validator-accepted shapes, and the largest legal divisor.
TEST(WgmmaRules, SelectNIsLegalAndMaximal) {
  for (DType t : kAllTypes) {
    const std::vector<int> legal = wgmma_legal_n(t);
    for (int block_n = -8; block_n <= 1024; ++block_n) {
      const int n = select_wgmma_n(block_n, t);
      int best = 0;
      for (int candidate : legal)
        if (block_n > 0 && block_n % candidate == 0) best = std::max(best, candidate);
      ASSERT_EQ(n, best) << to_string(t) << " block_n " << block_n;
      if (n != 0) ASSERT_EQ(wgmma_violation(shape(t, n), kHopper), "") << n;
    }
  }
  EXPECT_EQ(select_wgmma_n(256, DType::bf16), 256);
  EXPECT_EQ(select_wgmma_n(384, DType::bf16), 192);
  EXPECT_EQ(select_wgmma_n(40, DType::s8), 8);    // n40 does not exist for s8
  EXPECT_EQ(select_wgmma_n(40, DType::bf16), 40);
  EXPECT_EQ(select_wgmma_n(4, DType::bf16), 0);
}

TEST(WgmmaRules, SwizzleCodes) {
  EXPECT_EQ(swizzle_bytes(Swizzle::none), 16);
  EXPECT_EQ(swizzle_bytes(Swizzle::b32), 32);
  EXPECT_EQ(swizzle_bytes(Swizzle::b64), 64);
  EXPECT_EQ(swizzle_bytes(Swizzle::b128), 128);
  EXPECT_EQ(descriptor_layout_code(Swizzle::none), 0);
  EXPECT_EQ(descriptor_layout_code(Swizzle::b128), 1);
  EXPECT_EQ(descriptor_layout_code(Swizzle::b64), 2);
  EXPECT_EQ(descriptor_layout_code(Swizzle::b32), 3);
  EXPECT_EQ(swizzle_alignment_bytes(Swizzle::b128), 1024);
  EXPECT_EQ(swizzle_alignment_bytes(Swizzle::b64), 512);
  EXPECT_EQ(swizzle_alignment_bytes(Swizzle::b32), 256);
}

// The descriptor verified on an H100 (hopper-facts.md 0.2): start>>4 | 1<<16 | 64<<32 | 1<<62.
TEST(WgmmaDescriptor, Bf16KMajor128BMatchesVerifiedH100Value) {
  for (uint32_t addr : {0u, 1024u, 4096u, 65536u, 200704u}) {
    const MatrixDescriptor d = make_descriptor(addr, Swizzle::b128, true, 2, 64, 64);
    EXPECT_EQ(d.stride_byte_offset, 1024u);
    EXPECT_EQ(d.leading_byte_offset, 16u);
    EXPECT_EQ(d.base_offset, 0u);
    EXPECT_EQ(d.k_step_bytes, 32u);
    EXPECT_EQ(d.k_steps_per_atom, 4);
    const uint64_t verified = (uint64_t(addr) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
    EXPECT_EQ(d.encode(), verified) << addr;
    // Advancing by one k16 step adds 2 to the low word (hopper-facts.md 1.5).
    EXPECT_EQ(d.advanced(d.k_step_bytes).encode(), verified + 2);
  }
}

TEST(WgmmaDescriptor, Fp8KMajor128BIsTheSameDescriptor) {
  const MatrixDescriptor bf16 = make_descriptor(8192, Swizzle::b128, true, 2, 128, 64);
  const MatrixDescriptor fp8 = make_descriptor(8192, Swizzle::b128, true, 1, 128, 128);
  EXPECT_EQ(bf16.encode(), fp8.encode());
  EXPECT_EQ(fp8.k_step_bytes, 32u);  // K = 32 fp8 elements per instruction
  EXPECT_EQ(fp8.k_steps_per_atom, 4);
  const MatrixDescriptor tf32 = make_descriptor(8192, Swizzle::b128, true, 4, 128, 32);
  EXPECT_EQ(tf32.encode(), bf16.encode());
}

TEST(WgmmaDescriptor, NarrowerSwizzles) {
  const MatrixDescriptor d64 = make_descriptor(512, Swizzle::b64, true, 2, 64, 32);
  EXPECT_EQ(d64.stride_byte_offset, 512u);
  EXPECT_EQ(d64.layout_code, 2);
  EXPECT_EQ(d64.k_steps_per_atom, 2);
  EXPECT_EQ(d64.encode() >> 62, 2u);
  EXPECT_EQ((d64.encode() >> 32) & 0x3FFF, 32u);
  const MatrixDescriptor d32 = make_descriptor(256, Swizzle::b32, true, 2, 64, 16);
  EXPECT_EQ(d32.stride_byte_offset, 256u);
  EXPECT_EQ(d32.layout_code, 3);
  EXPECT_EQ(d32.k_steps_per_atom, 1);
  const MatrixDescriptor e4m3_64 = make_descriptor(0, Swizzle::b64, true, 1, 64, 64);
  EXPECT_EQ(e4m3_64.stride_byte_offset, 512u);
  EXPECT_EQ(e4m3_64.k_steps_per_atom, 2);
}

TEST(WgmmaDescriptor, MnMajor128B) {
  // 16-bit tile stored [MN/64][K][64]: SBO 1024, LBO = K_tile x 128 B, k-step 16 rows x 128 B.
  const MatrixDescriptor d = make_descriptor(0, Swizzle::b128, false, 2, 128, 64);
  EXPECT_EQ(d.stride_byte_offset, 1024u);
  EXPECT_EQ(d.leading_byte_offset, 64u * 128u);
  EXPECT_EQ(d.k_step_bytes, 2048u);
  EXPECT_EQ(d.k_offset_bytes(3), 3u * 2048u);
  EXPECT_EQ(d.layout_code, 1);
}

TEST(WgmmaDescriptor, KOffsetCrossesAtoms) {
  // bf16 BLOCK_K = 128 = two 64-element atoms of 128 rows: TileLang's element offset
  // (ki % 4) * 16 + (ki / 4) * rows * 64, in bytes.
  const int rows = 128;
  const MatrixDescriptor d = make_descriptor(0, Swizzle::b128, true, 2, rows, 128);
  for (int ki = 0; ki < 8; ++ki)
    EXPECT_EQ(d.k_offset_bytes(ki), uint32_t(((ki % 4) * 16 + (ki / 4) * rows * 64) * 2)) << ki;
  EXPECT_EQ(d.k_atom_stride_bytes, 16384u);  // +1024 encoded (hopper-facts.md 1.5)
  EXPECT_THROW(d.k_offset_bytes(-1), InvalidArgument);
}

TEST(WgmmaDescriptor, MisalignedStartIsRejected) {
  for (Swizzle s : {Swizzle::b128, Swizzle::b64, Swizzle::b32}) {
    const int align = swizzle_alignment_bytes(s);
    const int span = swizzle_bytes(s);
    const int k_elems = span / 2;
    EXPECT_NO_THROW(make_descriptor(uint32_t(3 * align), s, true, 2, 64, k_elems));
    for (uint32_t bad : {16u, uint32_t(align / 2), uint32_t(align + 128)}) {
      try {
        make_descriptor(bad, s, true, 2, 64, k_elems);
        FAIL() << "accepted addr " << bad << " for " << to_string(s);
      } catch (const InvalidArgument& e) {
        EXPECT_EQ(e.argument(), "addr");
        EXPECT_EQ(e.value(), std::to_string(bad));
        EXPECT_NE(e.rule().find(std::to_string(align)), std::string::npos) << e.what();
      }
    }
  }
}

TEST(WgmmaDescriptor, IllegalTilesAreRejected) {
  // Transpose exists only for 16-bit types.
  EXPECT_THROW(make_descriptor(0, Swizzle::b128, false, 1, 128, 128), InvalidArgument);
  EXPECT_THROW(make_descriptor(0, Swizzle::b128, false, 4, 128, 32), InvalidArgument);
  // A 128B tile must fill whole 128-byte rows of K.
  try {
    make_descriptor(0, Swizzle::b128, true, 2, 64, 32);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "k_elems");
  }
  EXPECT_THROW(make_descriptor(0, Swizzle::b128, true, 2, 60, 64), InvalidArgument);  // rows % 8
  EXPECT_THROW(make_descriptor(0, Swizzle::b128, true, 3, 64, 64), InvalidArgument);
  EXPECT_THROW(make_descriptor(0, Swizzle::b128, true, 2, 0, 64), InvalidArgument);
  EXPECT_THROW(make_descriptor(0, Swizzle::b128, false, 2, 32, 64), InvalidArgument);  // MN < atom
  // The tile must end inside the 256 KiB window the 14-bit start field addresses.
  EXPECT_THROW(make_descriptor(255 * 1024, Swizzle::b128, true, 2, 64, 64), InvalidArgument);
}

TEST(WgmmaDescriptor, EncodePlacesEveryField) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000; ++i) {
    MatrixDescriptor d;
    d.start_address_bytes = (rng() % (1u << 14)) << 4;
    d.leading_byte_offset = (rng() % (1u << 14)) << 4;
    d.stride_byte_offset = (rng() % (1u << 14)) << 4;
    d.base_offset = rng() % 8;
    d.layout_code = int(rng() % 4);
    const uint64_t v = d.encode();
    EXPECT_EQ(v & 0x3FFF, d.start_address_bytes >> 4);
    EXPECT_EQ((v >> 16) & 0x3FFF, d.leading_byte_offset >> 4);
    EXPECT_EQ((v >> 32) & 0x3FFF, d.stride_byte_offset >> 4);
    EXPECT_EQ((v >> 49) & 0x7, d.base_offset);
    EXPECT_EQ(v >> 62, uint64_t(d.layout_code));
    // Reserved bits 14-15, 30-31, 46-48, 52-61 stay zero.
    const uint64_t reserved = (0x3ull << 14) | (0x3ull << 30) | (0x7ull << 46) | (0x3FFull << 52);
    EXPECT_EQ(v & reserved, 0u);
  }
  MatrixDescriptor unaligned;
  unaligned.start_address_bytes = 8;
  EXPECT_THROW(unaligned.encode(), InvalidArgument);
  MatrixDescriptor too_far;
  too_far.stride_byte_offset = 1u << 18;
  EXPECT_THROW(too_far.encode(), InvalidArgument);
}

// The descriptor's fields, read through the PTX canonical layouts (hopper-facts.md 1.3), must
// address exactly the bytes where the assumed TMA storage puts each element. Checked for every
// element of every tile shape, swizzle, majorness and element size (addresses before the XOR,
// which TMA and wgmma apply identically from the same 1024-B-aligned base).
TEST(WgmmaDescriptor, CanonicalLayoutMatchesTmaStorage) {
  int tiles_checked = 0;
  for (Swizzle s : {Swizzle::none, Swizzle::b32, Swizzle::b64, Swizzle::b128})
    for (bool k_major : {true, false})
      for (int elem : {1, 2, 4})
        for (int rows : {8, 16, 64, 128, 192, 256})
          for (int k_elems : {8, 16, 32, 64, 96, 128, 256}) {
            MatrixDescriptor d;
            try {
              d = make_descriptor(0, s, k_major, elem, rows, k_elems);
            } catch (const InvalidArgument&) {
              continue;
            }
            ++tiles_checked;
            const int span = swizzle_bytes(s);
            const int instr_k = 32 / elem;  // elements of K per instruction
            ASSERT_EQ(k_elems % instr_k, 0);
            for (int r = 0; r < rows; ++r)
              for (int k = 0; k < k_elems; ++k) {
                const int step = k / instr_k, kk = k % instr_k;
                uint64_t storage = 0, canonical = d.k_offset_bytes(step);
                if (k_major) {
                  const int kb = k * elem, kkb = kk * elem;
                  if (s == Swizzle::none) {
                    storage = uint64_t(kb / 16) * rows * 16 + r * 16 + kb % 16;
                    // ((8,n),2) : ((1,SBO),LBO) in 16-B units
                    canonical += (r % 8) * 16 + (r / 8) * d.stride_byte_offset +
                                 (kkb / 16) * d.leading_byte_offset + kkb % 16;
                  } else {
                    storage = uint64_t(kb / span) * rows * span + r * span + kb % span;
                    // ((8,n),2) : ((W,SBO),1)
                    canonical += (r % 8) * span + (r / 8) * d.stride_byte_offset + kkb;
                  }
                } else {
                  const int mb = r * elem;  // MN is contiguous
                  if (s == Swizzle::none) {
                    storage = uint64_t(mb / 16) * k_elems * 16 + k * 16 + mb % 16;
                    // ((1,n),(8,k)) : ((X,SBO),(1,LBO))
                    canonical += (mb / 16) * d.stride_byte_offset + (kk % 8) * 16 +
                                 (kk / 8) * d.leading_byte_offset + mb % 16;
                  } else {
                    storage = uint64_t(mb / span) * k_elems * span + k * span + mb % span;
                    // ((W,n),(8,k)) : ((1,LBO),(W,SBO))
                    canonical += mb % span + (mb / span) * d.leading_byte_offset +
                                 (kk % 8) * span + (kk / 8) * d.stride_byte_offset;
                  }
                }
                ASSERT_EQ(canonical, storage)
                    << to_string(s) << (k_major ? " K-major" : " MN-major") << " elem " << elem
                    << " tile " << rows << "x" << k_elems << " at (" << r << ", " << k << ")";
              }
          }
  EXPECT_GT(tiles_checked, 100);
}
