#pragma once
// A or B whose rows TMA cannot describe (row stride not a multiple of 16 bytes) copied into
// rows that it can (plan/operand_copy.hpp). Each thread writes one 16-byte chunk of a padded
// row with one vector store. Its 16 source bytes start at any element, so it loads the two
// aligned 16-byte words that cover them and shifts the bytes into place (a misaligned wide
// load would fault, PTX ISA "Addresses"); adjacent threads load overlapping words, which L1
// serves once. Where those words would reach outside the operand's bytes (its first chunk
// when the pointer is not 16-byte aligned, its last ones) the thread loads element by element
// instead, so nothing outside the caller's buffer is read. Elements past a row's end are
// written as zeros (TMA never reads them: its box stops at the row length).
#include "sm90/pad_rows_params.cuh"

namespace autogemm::pad_rows {

// Bytes [offset, offset + 16) of the 32 bytes lo:hi (little-endian), offset 0..15. A switch
// on the word offset keeps the eight words in registers.
__device__ __forceinline__ uint4 bytes_at(const uint4& lo, const uint4& hi, unsigned offset) {
  const unsigned shift = 8 * (offset % 4);
  auto f = [shift](unsigned a, unsigned b) { return __funnelshift_r(a, b, shift); };
  switch (offset / 4) {
    case 0: return make_uint4(f(lo.x, lo.y), f(lo.y, lo.z), f(lo.z, lo.w), f(lo.w, hi.x));
    case 1: return make_uint4(f(lo.y, lo.z), f(lo.z, lo.w), f(lo.w, hi.x), f(hi.x, hi.y));
    case 2: return make_uint4(f(lo.z, lo.w), f(lo.w, hi.x), f(hi.x, hi.y), f(hi.y, hi.z));
    default: return make_uint4(f(lo.w, hi.x), f(hi.x, hi.y), f(hi.y, hi.z), f(hi.z, hi.w));
  }
}

// Keeps the first `bytes` bytes of a word whose first byte is byte `first` of the chunk.
__device__ __forceinline__ unsigned keep(unsigned word, int first, int bytes) {
  if (bytes >= first + 4) return word;
  if (bytes <= first) return 0u;
  return word & ((1u << (8 * (bytes - first))) - 1u);
}

template <class Element>
__device__ __forceinline__ void copy_chunks(const PadRowsParams& p) {
  constexpr int kPerChunk = 16 / sizeof(Element);
  static_assert(kPerChunk * sizeof(Element) == 16, "one 16-byte store per chunk");
  const long long chunks_per_row = (p.row_elements + kPerChunk - 1) / kPerChunk;
  const long long total_chunks = p.rows * chunks_per_row;
  const unsigned long long first_byte = reinterpret_cast<unsigned long long>(p.src);
  const unsigned long long end_byte =
      first_byte + ((p.rows - 1) * p.src_ld + p.row_elements) * sizeof(Element);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < total_chunks; idx += stride) {
    const long long row = idx / chunks_per_row;
    const long long col0 = (idx - row * chunks_per_row) * kPerChunk;
    const Element* src = static_cast<const Element*>(p.src) + row * p.src_ld + col0;
    const long long valid = p.row_elements - col0;   // this chunk's elements inside the row
    const unsigned long long at = reinterpret_cast<unsigned long long>(src);
    const unsigned long long aligned = at & ~15ull;   // (2 x 16 B) from here cover the chunk
    uint4 chunk;
    if (aligned < first_byte || aligned + 32 > end_byte) {
      union {
        Element elements[kPerChunk];
        uint4 vector;
      } by_element;
#pragma unroll
      for (int e = 0; e < kPerChunk; ++e)
        by_element.elements[e] = e < valid ? src[e] : Element(0);
      chunk = by_element.vector;
    } else {
      const uint4* words = reinterpret_cast<const uint4*>(aligned);
      chunk = bytes_at(words[0], words[1], static_cast<unsigned>(at - aligned));
      if (valid < kPerChunk) {
        const int bytes = static_cast<int>(valid) * static_cast<int>(sizeof(Element));
        chunk = make_uint4(keep(chunk.x, 0, bytes), keep(chunk.y, 4, bytes),
                           keep(chunk.z, 8, bytes), keep(chunk.w, 12, bytes));
      }
    }
    *reinterpret_cast<uint4*>(static_cast<Element*>(p.dst) + row * p.dst_ld + col0) = chunk;
  }
}

}  // namespace autogemm::pad_rows

extern "C" __global__ void autogemm_pad_rows(const PadRowsParams p) {
  if (p.element_bytes == 1) autogemm::pad_rows::copy_chunks<unsigned char>(p);
  else autogemm::pad_rows::copy_chunks<unsigned short>(p);
}
