#pragma once
// cuTensorMapEncodeTiled's rules (CUDA 13.0 cuda.h) as a pure validator, and a swizzle
// recommender. The planner never proposes an illegal box, the spec carries the boxes the
// launcher encodes, and the call's entry point checks its pointers with the address rule.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plan/wgmma_rules.hpp"

namespace autogemm::plan {

struct TmaDescription {
  int rank = 2;                          // 1..5
  uint64_t global_address = 0;           // device address (alignment checked; 0 = unknown, skip)
  int elem_bytes = 2;                    // 1, 2, 4 or 8
  std::vector<uint64_t> global_dims;     // elements, innermost first; each 1..2^32
  std::vector<uint64_t> global_strides;  // bytes, dims 1..rank-1 (rank-1 entries)
  std::vector<uint32_t> box_dims;        // elements, each 1..256
  std::vector<uint32_t> element_strides; // each 1..8 (empty = all 1)
  Swizzle swizzle = Swizzle::b128;
  // only INTERLEAVE_NONE is used by autogemm; true is checked as INTERLEAVE_16B (rank >= 3,
  // and the INTERLEAVE_NONE-only inner-box rules do not apply)
  bool interleaved = false;
};

// CUtensorMapSwizzle value for a swizzle mode (NONE 0, 32B 1, 64B 2, 128B 3; the reverse of
// the wgmma descriptor's order).
int tma_swizzle_code(Swizzle s);

// Empty when cuTensorMapEncodeTiled would accept it, else the first broken rule naming the
// field, value and rule, checked in the order of the cuda.h documentation (rank, element
// size, array lengths, address, dims, strides, box, element strides, swizzle span):
// "box_dims[0] = 128 (256 bytes): inner box must be <= 128 bytes with 128B swizzle".
std::string tma_violation(const TmaDescription& d);

// The global address rule alone (a call's operand pointer, known only at the call): empty
// when `address` is 16-byte aligned, else "a = 0x...: TMA needs a 16-byte aligned ...".
std::string tma_address_violation(std::string_view name, uint64_t address);

// The L2 promotion a tensor map asks for (CUtensorMapL2promotion: each TMA request's L2 fill
// rounded up to 64, 128 or 256 bytes). 256 where the operand's base address and row pitch are
// whole 256-byte units, so a 128-byte box row is half of a 256-byte line of the same row and
// the promoted half is the next k-block's; 128 otherwise. Measured on an H200 (128x192x64 s4
// c2 cl2x1/b, same call): 5000 x 3000 x 1000 bf16 (rows of 2000 bytes) 60.5 us with 256,
// 53.3 with 128, 49.6 at K = 1024; 4688 x 27152 x 2440 1228 against 1031 us; 1000^3 12.1
// against 11.5; 64 or none no better than 128; 4096^3 (rows of 8192 bytes) 174.5 with 256,
// 175.3 with 128.
inline constexpr int kTmaWidePromotionBytes = 256;
int tma_l2_promotion_bytes(uint64_t address, uint64_t row_pitch_bytes);

struct SwizzleChoice {
  Swizzle swizzle = Swizzle::b128;
  uint32_t inner_box_elems = 0;   // box_dims[0]
};

// The widest swizzle whose span the tile's contiguous extent fills (128B, else 64B, 32B,
// none), with the inner box it implies: min(contiguous_elems, swizzle_bytes / elem_bytes).
// Always returns a pair tma_violation accepts for that inner box. Without swizzle the inner box
// is rounded up to whole 16-byte units (TMA zero-fills past the tensor end) and capped at 256
// elements. Throws InvalidArgument for contiguous_elems < 1 or elem_bytes not 1, 2, 4 or 8.
SwizzleChoice recommend_swizzle(int contiguous_elems, int elem_bytes);

}  // namespace autogemm::plan
