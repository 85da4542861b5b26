#pragma once
// Bit-exact conversion between double and the storage formats the bench writes and reads
// (fp32, bf16, fp16, e4m3, e5m2), on the host, without CUDA headers. Rounding is to nearest,
// ties to even (IEEE 754 roundTiesToEven), straight from double so there is no double rounding.
#include <cstdint>

#include "autogemm/problem.hpp"

namespace autogemm::bench {

// Encodes v in type t; the result's low dtype_bytes(t) bytes are the stored bits. Overflow gives
// infinity for the IEEE-like formats (fp32, bf16, fp16, e5m2) and saturates to +-448 for e4m3,
// which has no infinity (OCP FP8 spec: E4M3 encodes NaN as S.1111.111 and nothing else above 448).
uint32_t encode_from_double(double v, DType t);

// Decodes stored bits of type t (low dtype_bytes(t) bytes of `bits`) exactly.
double decode_to_double(uint32_t bits, DType t);

// True for the types encode/decode support: fp32, bf16, fp16, e4m3, e5m2.
bool has_number_format(DType t);

}  // namespace autogemm::bench
