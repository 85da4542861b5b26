#pragma once
// A or B whose rows TMA cannot describe (row stride not a multiple of 16 bytes) copied into
// rows that it can (plan/operand_copy.hpp). Each thread writes one 16-byte chunk of a padded
// row with one vector store; it reads the chunk's elements one by one, because the source
// rows start at any element (a wider load could be misaligned, PTX ISA "Addresses"). Adjacent
// threads read adjacent chunks, so a warp's loads of one element slot fall in 512 contiguous
// bytes that L1 keeps for the following slots. Elements past the row's end are written as
// zeros (never read by TMA, whose box stops at the row length, but defined).
#include "sm90/pad_rows_params.cuh"

namespace autogemm::pad_rows {

template <class Element>
__device__ __forceinline__ void copy_chunks(const PadRowsParams& p) {
  constexpr int kPerChunk = 16 / sizeof(Element);
  static_assert(kPerChunk * sizeof(Element) == 16, "one 16-byte store per chunk");
  const long long chunks_per_row = (p.row_elements + kPerChunk - 1) / kPerChunk;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < p.total_chunks; idx += stride) {
    const long long row = idx / chunks_per_row;
    const long long col0 = (idx - row * chunks_per_row) * kPerChunk;
    const Element* src = static_cast<const Element*>(p.src) + row * p.src_ld + col0;
    union {
      Element elements[kPerChunk];
      uint4 vector;
    } chunk;
#pragma unroll
    for (int e = 0; e < kPerChunk; ++e)
      chunk.elements[e] = col0 + e < p.row_elements ? src[e] : Element(0);
    *reinterpret_cast<uint4*>(static_cast<Element*>(p.dst) + row * p.dst_ld + col0) = chunk.vector;
  }
}

}  // namespace autogemm::pad_rows

extern "C" __global__ void autogemm_pad_rows(const PadRowsParams p) {
  if (p.element_bytes == 1) autogemm::pad_rows::copy_chunks<unsigned char>(p);
  else autogemm::pad_rows::copy_chunks<unsigned short>(p);
}
