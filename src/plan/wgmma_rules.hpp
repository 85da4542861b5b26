#pragma once
// wgmma.mma_async rules (PTX ISA "Warpgroup MMA", sm_90a) as pure functions.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::plan {

struct WgmmaShape {
  int m = 64;
  int n = 0;
  int k = 0;
  DType a_type = DType::bf16;
  DType b_type = DType::bf16;
  DType accumulator = DType::fp32;
  bool a_k_major = true;   // false = transposed (imm-trans-a = 1)
  bool b_k_major = true;
};

// The K of one instruction for an input type (16 for f16/bf16, 8 for tf32, 32 for 8-bit).
// 0 when the type has no wgmma form.
int wgmma_k(DType input);

// Empty when legal on `cc`, else the first violated rule, naming the field and value:
// "n = 12: wgmma bf16 needs N a multiple of 8 in 8..256". Checked in this order: cc, m,
// a_type/b_type pairing, k, n, accumulator, majorness.
std::string wgmma_violation(const WgmmaShape& s, ComputeCapability cc);

// Every legal N for an input type, ascending.
std::vector<int> wgmma_legal_n(DType input);

// The instruction N for a CTA tile of block_n columns: the largest legal N that divides
// block_n and is <= 256 (0 when none).
int select_wgmma_n(int block_n, DType input);

// Swizzle modes shared by TMA and the wgmma descriptor.
enum class Swizzle { none, b32, b64, b128 };
int swizzle_bytes(Swizzle s);             // 16 (none: one core-matrix row), 32, 64, 128
int descriptor_layout_code(Swizzle s);    // wgmma descriptor bits 62-63: 0 none, 1 128B, 2 64B, 3 32B
// Alignment a tile's shared-memory start needs so that the swizzle phase starts at 0 and the
// descriptor's base offset can stay 0: the swizzle repeat, 8 rows x span = 1024/512/256 B;
// none: 128 B (one core matrix; also the TMA destination alignment).
int swizzle_alignment_bytes(Swizzle s);
std::string_view to_string(Swizzle s);    // "none", "32B", "64B", "128B"

struct MatrixDescriptor {
  uint32_t start_address_bytes = 0;   // shared-window address of the tile
  uint32_t leading_byte_offset = 0;   // LBO in bytes
  uint32_t stride_byte_offset = 0;    // SBO in bytes
  uint32_t base_offset = 0;           // bits 49-51
  int layout_code = 0;                // bits 62-63
  uint64_t encode() const;            // the 64-bit descriptor value
  // Bytes to add to the start address for the k-th instruction step along K inside the tile.
  uint32_t k_step_bytes = 0;
  // K-major swizzled tiles wider than one swizzle span are stored as [K atom][rows][span]
  // (one TMA box per atom): k_step_bytes applies inside an atom, and every
  // k_steps_per_atom steps the start jumps by k_atom_stride_bytes (rows x span) instead.
  int k_steps_per_atom = 1;
  uint32_t k_atom_stride_bytes = 0;
  // Offset from the tile start of the descriptor for instruction step `k_step` (0-based),
  // crossing atoms as above: (k_step % k_steps_per_atom) * k_step_bytes
  //                         + (k_step / k_steps_per_atom) * k_atom_stride_bytes.
  uint32_t k_offset_bytes(int k_step) const;
  // This descriptor moved by `bytes` along its start address (what the kernel does per k-step
  // and per stage); base offset stays 0 (hopper-facts.md 1.5, verified on H100).
  MatrixDescriptor advanced(uint32_t bytes) const;
};

// Descriptor for a tile stored as TMA writes it: `rows` (M or N) x `k_elems`, element size
// `elem_bytes`, `k_major` or MN-major, swizzle `s`, at smem address `addr` (must be aligned to
// the swizzle repeat: 1024/512/256 B for 128B/64B/32B). Follows hopper-facts.md 1.3-1.5.
// Storage assumed (one TMA box per span-wide slab, box inner extent = the span):
//   K-major, swizzled:  [k_elems*elem/span][rows][span]        SBO = 8 x span, LBO 16 (unused)
//   K-major, none:      [k_elems*elem/16][rows][16 B]          SBO = 128, LBO = rows x 16
//   MN-major, swizzled: [rows*elem/span][k_elems][span]        SBO = 8 x span, LBO = k_elems x span
//   MN-major, none:     [rows*elem/16][k_elems][16 B]          SBO = k_elems x 16, LBO = 128
// Throws InvalidArgument naming the argument when the tile cannot be described that way
// (misaligned start, MN-major for non-16-bit types, partial spans, offsets over 14 bits).
MatrixDescriptor make_descriptor(uint32_t addr, Swizzle s, bool k_major, int elem_bytes, int rows,
                                 int k_elems);

}  // namespace autogemm::plan
