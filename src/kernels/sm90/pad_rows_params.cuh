#pragma once
// Parameters of the operand copy into padded rows, shared by the host
// (src/runtime/operand_copy.cpp, g++) and the device (pad_rows.cuh, NVRTC): plain C types only.

// src: `rows` rows of `row_elements` elements, `src_ld` elements apart (any alignment of the
// element size); dst: the same rows `dst_ld` elements apart, dst_ld a multiple of 16 bytes and
// dst 16-byte aligned. Elements of 1 or 2 bytes.
struct PadRowsParams {
  const void* src;
  void* dst;
  long long rows, row_elements, src_ld, dst_ld;
  int element_bytes;
};
