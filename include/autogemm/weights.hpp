#pragma once
// Weight-only quantised formats (issue 51): how a weight W [N, K] (the GEMM's B in layout nt: a
// torch.nn.Linear weight) is packed for the weight-only kernels, from float values or from the
// layouts checkpoints ship. Host functions, for offline conversion: the packed bytes, scales and
// zeros are then copied to the GPU as they are.
//
// Every layout keeps row n of W K-contiguous, as the decode family streams B:
//   int4_g128      q: N x K/2 bytes; each run of 8 elements of a row is one little-endian
//                  32-bit word with element 2i in bits 4i and 2i + 1 in bits 16 + 4i (so the
//                  kernel makes a bf16 pair from a shift and a mask); unsigned 0..15 with
//                  w = (q - 8) * scale; scales bf16 [N, K/128].
//   int4_g128_zp   as int4_g128 with zeros, one 0..15 byte per scale, [N, K/128]:
//                  w = (q - zero) * scale (GPTQ, AWQ).
//   mxfp4          e2m1 values (OCP MX: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}, bit 3 the sign) packed as
//                  int4; scales e8m0 bytes [N, K/32]: w = e2m1(q) * 2^(scale - 127).
//   int8_channel   q: int8 [N, K]; scales fp32 [N]: w = q * scale.
// Dequantised values are exact floats: (q - zero) x a bf16 scale and e2m1 x a power of two are
// representable; int8 x an fp32 scale is one float rounding.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace autogemm {

enum class WeightFormat { int4_g128, int4_g128_zp, mxfp4, int8_channel };
std::string_view to_string(WeightFormat f);   // "int4-g128", "int4-g128-zp", "mxfp4", "int8"
std::optional<WeightFormat> parse_weight_format(std::string_view s);

struct PackedWeight {
  WeightFormat format = WeightFormat::int4_g128;
  int64_t n = 0, k = 0;
  std::vector<uint8_t> q;        // the packed values
  std::vector<uint8_t> scales;   // bf16, e8m0 or fp32 scales, as bytes (little-endian)
  std::vector<uint8_t> zeros;    // int4_g128_zp only
  // Elements of K per scale: 128 (int4), 32 (mxfp4), K (int8).
  int64_t group_size() const;
  // What a GEMM reads of it: values, scales and zeros.
  int64_t bytes() const { return int64_t(q.size() + scales.size() + zeros.size()); }
};

// Elements of K per scale of a format (int8: 0, one scale per row).
int64_t weight_group_size(WeightFormat f);
// The multiple of K a weight-only GEMM of the format needs (validate(GemmProblem)): the group
// (int4, mxfp4), or 16 for int8 (the kernel loads rows in 16-byte vectors).
int64_t weight_gemm_k_multiple(WeightFormat f);

// The bytes of a packed [n, k] weight: values, scales and zeros (K a multiple of the group).
struct WeightBytes {
  int64_t q = 0, scales = 0, zeros = 0;
  int64_t total() const { return q + scales + zeros; }
};
WeightBytes weight_bytes(WeightFormat f, int64_t n, int64_t k);

// Checks the sizes of q, scales and zeros against n, k and the format: InvalidArgument naming
// the field, its size and the size the shape needs (K not a multiple of the group size too).
void validate(const PackedWeight& w);

// Quantises W (n x k floats, row-major, packed) into `format`:
//   int4_g128: scale = bf16(amax / 7) per group, q = clamp(round(w / scale), -8, 7) + 8;
//   int4_g128_zp: scale = bf16((max - min) / 15), zero = clamp(round(-min / scale), 0, 15),
//     q = clamp(round(w / scale) + zero, 0, 15);
//   mxfp4: the group's exponent floor(log2(amax)) - 2 (e2m1's largest is 1.5 x 2^2), each
//     value rounded to the nearest e2m1 (ties to even) of w / 2^exponent, saturated to 6, the
//     sign bit the value's own (-0 stays -0);
//   int8_channel: scale = amax / 127 per row, q = clamp(round(w / scale), -127, 127).
// An all-zero group gets scale 0 (int8, int4) or exponent -127 (mxfp4) and zero values.
PackedWeight quantize_weight(const float* w, int64_t n, int64_t k, WeightFormat format);

// The values a packed weight stands for, n x k floats (the formats' formulas above).
std::vector<float> dequantize_weight(const PackedWeight& w);

// Importers from checkpoint layouts of a layer with N out features and K in features:
//  GPTQ (AutoGPTQ format v1, desc_act off): qweight int32 [K/8, N], element k = 8i + j of
//    column n in bits 4j of qweight[i][n]; qzeros int32 [K/G, N/8], zero - 1 of column 8c + j in
//    bits 4j; scales fp16 [K/G, N]. w = scale * (q - (qzero + 1)).
//  AWQ (AutoAWQ GEMM): qweight int32 [K, N/8], columns 8c + order[j] in bits 4j with order
//    0, 2, 4, 6, 1, 3, 5, 7; qzeros int32 [K/G, N/8] the same order; scales fp16 [K/G, N].
//    w = scale * (q - qzero).
//  MXFP4 (gpt-oss): blocks uint8 [N, K/32, 16] (two e2m1 a byte, the low nibble first), scales
//    uint8 [N, K/32] (e8m0).
// GPTQ and AWQ scales become bf16 (rounded to nearest even: the one inexact step; fp16 scales
// with 11 significant bits lose their last 3). group_size must be 128.
PackedWeight import_gptq(const int32_t* qweight, const int32_t* qzeros, const uint16_t* scales,
                         int64_t n, int64_t k, int64_t group_size = 128);
PackedWeight import_awq(const int32_t* qweight, const int32_t* qzeros, const uint16_t* scales,
                        int64_t n, int64_t k, int64_t group_size = 128);
PackedWeight import_mxfp4(const uint8_t* blocks, const uint8_t* scales, int64_t n, int64_t k);

}  // namespace autogemm
