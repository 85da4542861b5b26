// wgmma.mma_async shape/type rules and the shared-memory matrix descriptor (sm_90a).
// Sources: PTX ISA "Warpgroup MMA" shape table and "Matrix Descriptor Format"; the numbers and
// layouts are collected in hopper-facts.md sections 1 and 2.2.
#include "plan/wgmma_rules.hpp"

#include <fmt/format.h>

#include "autogemm/errors.hpp"

namespace autogemm::plan {
namespace {

// The families of wgmma inputs; A and B must come from the same family.
enum class InputFamily { none, f16, bf16, tf32, fp8, int8 };

InputFamily family_of(DType t) {
  switch (t) {
    case DType::fp16: return InputFamily::f16;
    case DType::bf16: return InputFamily::bf16;
    case DType::tf32: return InputFamily::tf32;
    case DType::e4m3: case DType::e5m2: return InputFamily::fp8;
    case DType::s8: case DType::u8: return InputFamily::int8;
    case DType::fp32: case DType::s32: return InputFamily::none;
  }
  return InputFamily::none;
}

// What B may be for a given A (PTX: f16/bf16/tf32 need equal types, e4m3/e5m2 mix freely,
// s8/u8 mix freely).
std::string_view allowed_b_types(InputFamily f) {
  switch (f) {
    case InputFamily::f16: return "fp16";
    case InputFamily::bf16: return "bf16";
    case InputFamily::tf32: return "tf32";
    case InputFamily::fp8: return "e4m3 or e5m2";
    case InputFamily::int8: return "s8 or u8";
    case InputFamily::none: break;
  }
  return "";
}

bool accumulator_allowed(InputFamily f, DType acc) {
  switch (f) {
    case InputFamily::f16: case InputFamily::fp8: return acc == DType::fp16 || acc == DType::fp32;
    case InputFamily::bf16: case InputFamily::tf32: return acc == DType::fp32;
    case InputFamily::int8: return acc == DType::s32;
    case InputFamily::none: break;
  }
  return false;
}

std::string_view allowed_accumulators(InputFamily f) {
  switch (f) {
    case InputFamily::f16: case InputFamily::fp8: return "accumulates in fp16 or fp32";
    case InputFamily::bf16: case InputFamily::tf32: return "accumulates only in fp32";
    case InputFamily::int8: return "accumulates only in s32";
    case InputFamily::none: break;
  }
  return "";
}

// PTX: 8..256 step 8 for every floating family; s8/u8 (and b1) skip 40 and odd multiples of
// 8 above 32: 8, 16, 24, 32, then 48..256 step 16.
bool n_allowed(InputFamily f, int n) {
  if (n < 8 || n > 256 || n % 8 != 0) return false;
  if (f == InputFamily::int8) return n <= 32 || n % 16 == 0;
  return true;
}

std::string n_rule(DType a_type) {
  if (family_of(a_type) == InputFamily::int8)
    return fmt::format("wgmma {} needs N in 8, 16, 24, 32 or a multiple of 16 in 48..256",
                       to_string(a_type));
  return fmt::format("wgmma {} needs N a multiple of 8 in 8..256", to_string(a_type));
}

std::string violation(std::string_view field, const std::string& value, const std::string& rule) {
  return fmt::format("{} = {}: {}", field, value, rule);
}

// The 14-bit descriptor fields hold bytes >> 4 (hopper-facts.md 1.1): 16-byte multiples below
// 2^18 (the 256 KiB shared window).
constexpr uint32_t kDescriptorFieldLimit = 1u << 18;

void check_descriptor_field(std::string_view field, uint32_t bytes) {
  if (bytes % 16 != 0)
    throw InvalidArgument(std::string(field), fmt::format("{} bytes", bytes),
                          "wgmma descriptor offsets are in 16-byte units");
  if (bytes >= kDescriptorFieldLimit)
    throw InvalidArgument(std::string(field), fmt::format("{} bytes", bytes),
                          "wgmma descriptor offsets must be below 2^18 bytes (14 bits of 16-byte units)");
}

}  // namespace

int wgmma_k(DType input) {
  switch (family_of(input)) {
    case InputFamily::f16: case InputFamily::bf16: return 16;
    case InputFamily::tf32: return 8;
    case InputFamily::fp8: case InputFamily::int8: return 32;
    case InputFamily::none: break;
  }
  return 0;
}

std::string wgmma_violation(const WgmmaShape& s, ComputeCapability cc) {
  // wgmma is an sm_90a-only feature: not in sm_90 generic PTX, and sm_100+ replaced it with
  // tcgen05 (PTX ISA target notes).
  if (cc.major != 9 || cc.minor != 0)
    return violation("cc", fmt::format("{}.{}", cc.major, cc.minor),
                     "wgmma exists only on sm_90a (compute capability 9.0)");
  if (s.m != 64)
    return violation("m", std::to_string(s.m), "wgmma has M = 64 only (one warpgroup, 64 rows)");
  const InputFamily family = family_of(s.a_type);
  if (family == InputFamily::none)
    return violation("a_type", std::string(to_string(s.a_type)),
                     "wgmma inputs are fp16, bf16, tf32, e4m3, e5m2, s8 or u8");
  if (family_of(s.b_type) != family)
    return violation("b_type", std::string(to_string(s.b_type)),
                     fmt::format("wgmma with A {} needs B {}", to_string(s.a_type),
                                 allowed_b_types(family)));
  if (s.k != wgmma_k(s.a_type))
    return violation("k", std::to_string(s.k),
                     fmt::format("wgmma {} has K = {}", to_string(s.a_type), wgmma_k(s.a_type)));
  if (!n_allowed(family, s.n)) return violation("n", std::to_string(s.n), n_rule(s.a_type));
  if (!accumulator_allowed(family, s.accumulator))
    return violation("accumulator", std::string(to_string(s.accumulator)),
                     fmt::format("wgmma {} {}", to_string(s.a_type), allowed_accumulators(family)));
  // imm-trans-a/b exist only for .f16/.bf16 (PTX); every other type is K-major only.
  const bool transposable = family == InputFamily::f16 || family == InputFamily::bf16;
  if (!transposable && !s.a_k_major)
    return violation("a_k_major", "false",
                     fmt::format("wgmma {} reads A only K-major (transpose exists only for fp16/bf16)",
                                 to_string(s.a_type)));
  if (!transposable && !s.b_k_major)
    return violation("b_k_major", "false",
                     fmt::format("wgmma {} reads B only K-major (transpose exists only for fp16/bf16)",
                                 to_string(s.b_type)));
  return {};
}

std::vector<int> wgmma_legal_n(DType input) {
  std::vector<int> result;
  const InputFamily family = family_of(input);
  if (family == InputFamily::none) return result;
  for (int n = 8; n <= 256; n += 8)
    if (n_allowed(family, n)) result.push_back(n);
  return result;
}

int select_wgmma_n(int block_n, DType input) {
  if (block_n <= 0) return 0;
  const std::vector<int> legal = wgmma_legal_n(input);
  for (auto it = legal.rbegin(); it != legal.rend(); ++it)
    if (block_n % *it == 0) return *it;
  return 0;
}

int swizzle_bytes(Swizzle s) {
  switch (s) {
    case Swizzle::none: return 16;  // one 16-byte core-matrix row, the unswizzled unit
    case Swizzle::b32: return 32;
    case Swizzle::b64: return 64;
    case Swizzle::b128: return 128;
  }
  return 0;
}

int descriptor_layout_code(Swizzle s) {
  // Descriptor bits 62-63; the order is the reverse of the TMA enum (hopper-facts.md 1.1).
  switch (s) {
    case Swizzle::none: return 0;
    case Swizzle::b128: return 1;
    case Swizzle::b64: return 2;
    case Swizzle::b32: return 3;
  }
  return 0;
}

int swizzle_alignment_bytes(Swizzle s) {
  // A swizzle atom is 8 rows x span; the XOR pattern repeats every atom (hopper-facts.md 1.2).
  // Unswizzled: one 8 x 16 B core matrix, which is also the TMA shared-memory alignment.
  return s == Swizzle::none ? 128 : 8 * swizzle_bytes(s);
}

std::string_view to_string(Swizzle s) {
  switch (s) {
    case Swizzle::none: return "none";
    case Swizzle::b32: return "32B";
    case Swizzle::b64: return "64B";
    case Swizzle::b128: return "128B";
  }
  return "?";
}

uint64_t MatrixDescriptor::encode() const {
  check_descriptor_field("start_address_bytes", start_address_bytes);
  check_descriptor_field("leading_byte_offset", leading_byte_offset);
  check_descriptor_field("stride_byte_offset", stride_byte_offset);
  if (base_offset > 7)
    throw InvalidArgument("base_offset", std::to_string(base_offset),
                          "the descriptor base offset is 3 bits (0..7)");
  if (layout_code < 0 || layout_code > 3)
    throw InvalidArgument("layout_code", std::to_string(layout_code),
                          "the descriptor layout type is 0 (none), 1 (128B), 2 (64B) or 3 (32B)");
  return uint64_t(start_address_bytes >> 4)              // bits 0-13
         | uint64_t(leading_byte_offset >> 4) << 16      // bits 16-29
         | uint64_t(stride_byte_offset >> 4) << 32       // bits 32-45
         | uint64_t(base_offset) << 49                   // bits 49-51
         | uint64_t(layout_code) << 62;                  // bits 62-63
}

uint32_t MatrixDescriptor::k_offset_bytes(int k_step) const {
  if (k_step < 0)
    throw InvalidArgument("k_step", std::to_string(k_step), "instruction steps count from 0");
  const int per_atom = k_steps_per_atom > 0 ? k_steps_per_atom : 1;
  return uint32_t(k_step % per_atom) * k_step_bytes + uint32_t(k_step / per_atom) * k_atom_stride_bytes;
}

MatrixDescriptor MatrixDescriptor::advanced(uint32_t bytes) const {
  MatrixDescriptor moved = *this;
  moved.start_address_bytes += bytes;
  return moved;
}

MatrixDescriptor make_descriptor(uint32_t addr, Swizzle s, bool k_major, int elem_bytes, int rows,
                                 int k_elems) {
  if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4)
    throw InvalidArgument("elem_bytes", std::to_string(elem_bytes),
                          "wgmma operands are 1 (e4m3/e5m2/s8/u8), 2 (fp16/bf16) or 4 (tf32) bytes");
  if (!k_major && elem_bytes != 2)
    throw InvalidArgument("k_major", "false",
                          fmt::format("MN-major (transposed) operands exist only for 16-bit types "
                                      "(fp16/bf16), not {}-byte elements", elem_bytes));
  if (rows <= 0)
    throw InvalidArgument("rows", std::to_string(rows), "a tile needs at least one 8-row group");
  if (k_elems <= 0)
    throw InvalidArgument("k_elems", std::to_string(k_elems), "a tile needs K >= 1");

  const int span = swizzle_bytes(s);  // 16 for none: the width of one core-matrix row
  const int alignment = swizzle_alignment_bytes(s);
  // Base offset is kept 0, which is only right when the swizzle pattern starts on its repeat
  // boundary (PTX "Matrix Descriptor Format"); otherwise TMA and wgmma disagree silently.
  if (addr % uint32_t(alignment) != 0)
    throw InvalidArgument("addr", std::to_string(addr),
                          fmt::format("a {} swizzled tile must start on a {}-byte boundary (the "
                                      "swizzle repeat), since base offset is kept 0",
                                      to_string(s), alignment));
  const uint64_t tile_bytes = uint64_t(rows) * uint64_t(k_elems) * uint64_t(elem_bytes);
  if (uint64_t(addr) + tile_bytes > kDescriptorFieldLimit)
    throw InvalidArgument("addr", std::to_string(addr),
                          fmt::format("the {}-byte tile must end within the 256 KiB shared window "
                                      "the 14-bit start field addresses", tile_bytes));

  MatrixDescriptor d;
  d.start_address_bytes = addr;
  d.layout_code = descriptor_layout_code(s);
  d.base_offset = 0;
  const int k_bytes = k_elems * elem_bytes;
  // One instruction reads 32 bytes of K for every K-major type (k16 x 2 B, k8 x 4 B, k32 x 1 B).
  constexpr int kInstructionKBytes = 32;

  if (k_major) {
    if (rows % 8 != 0)
      throw InvalidArgument("rows", std::to_string(rows),
                            "K-major tiles are built of 8-row core matrices: rows must be a multiple of 8");
    const int k_unit = s == Swizzle::none ? kInstructionKBytes : span;
    if (k_bytes % k_unit != 0)
      throw InvalidArgument(
          "k_elems", std::to_string(k_elems),
          s == Swizzle::none
              ? fmt::format("K must be a multiple of one instruction's 32 bytes ({} elements)",
                            kInstructionKBytes / elem_bytes)
              : fmt::format("a K-major {} swizzled tile must fill whole {}-byte rows (a multiple "
                            "of {} elements), as TMA writes it with the span as inner box",
                            to_string(s), span, span / elem_bytes));
    if (s == Swizzle::none) {
      // [K/8 chunks of 16 B][rows][16 B]: core matrices are 128 B; M/N-adjacent ones 128 B
      // apart (SBO), K-adjacent ones a whole column of rows apart (LBO).
      d.stride_byte_offset = 128;
      d.leading_byte_offset = uint32_t(rows) * 16;
      d.k_step_bytes = 2 * d.leading_byte_offset;
      d.k_steps_per_atom = 1;
      d.k_atom_stride_bytes = d.k_step_bytes;
    } else {
      // [K atoms][rows][span]: SBO = one 8-row group; LBO unused inside an atom ("assumed 1"),
      // written as 16 B (encoded 1) like TileLang; +32 B per instruction inside the atom.
      d.stride_byte_offset = uint32_t(8 * span);
      d.leading_byte_offset = 16;
      d.k_step_bytes = kInstructionKBytes;
      d.k_steps_per_atom = span / kInstructionKBytes;
      d.k_atom_stride_bytes = uint32_t(rows) * uint32_t(span);
    }
  } else {
    const int instruction_k = 16;  // 16-bit types only
    if (k_elems % instruction_k != 0)
      throw InvalidArgument("k_elems", std::to_string(k_elems),
                            "an MN-major fp16/bf16 tile needs K a multiple of 16 (one instruction)");
    if ((rows * elem_bytes) % span != 0)
      throw InvalidArgument("rows", std::to_string(rows),
                            fmt::format("an MN-major {} tile must fill whole {}-byte rows along M/N "
                                        "(a multiple of {} elements)",
                                        to_string(s), span, span / elem_bytes));
    if (s == Swizzle::none) {
      // [MN/8 chunks][K][16 B]: 8 K rows x 16 B core matrices; K-adjacent groups 128 B apart
      // (LBO), MN-adjacent chunks a whole K column apart (SBO) - roles swapped vs. swizzled.
      d.leading_byte_offset = 128;
      d.stride_byte_offset = uint32_t(k_elems) * 16;
    } else {
      // [MN atoms][K][span]: SBO = 8 K rows, LBO = next MN atom (DeepGEMM, TileLang).
      d.stride_byte_offset = uint32_t(8 * span);
      d.leading_byte_offset = uint32_t(k_elems) * uint32_t(span);
    }
    d.k_step_bytes = uint32_t(instruction_k * span);  // 16 K rows per instruction
    d.k_steps_per_atom = 1;
    d.k_atom_stride_bytes = d.k_step_bytes;
  }
  check_descriptor_field("leading_byte_offset", d.leading_byte_offset);
  check_descriptor_field("stride_byte_offset", d.stride_byte_offset);
  return d;
}

}  // namespace autogemm::plan
