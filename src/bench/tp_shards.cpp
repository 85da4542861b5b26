// Shards of a tensor-parallel GEMM cut from whole operands (tp_shards.hpp).
#include "bench/tp_shards.hpp"

#include <algorithm>

#include "cuda/cuda_check.hpp"
#include "multi/tp_plan.hpp"

namespace autogemm::bench {

namespace {

// A block of a row-major matrix on GPU 0: rows [row0, row0 + rows), bytes [col0, col0 +
// row_bytes) of each, with `ld` bytes between rows.
struct Block {
  const void* base = nullptr;
  int64_t ld = 0, row0 = 0, col0 = 0, rows = 0, row_bytes = 0;
};

// The block, packed, in a new buffer on `device` (packed on GPU 0 first, then one peer copy).
DeviceBuffer shard_of(const Block& b, int device) {
  const std::size_t bytes = std::size_t(std::max<int64_t>(1, b.rows * b.row_bytes));
  cuda_check(cudaSetDevice(0), "cudaSetDevice(bench tp)");
  DeviceBuffer packed(bytes);
  cuda_check(cudaMemcpy2D(packed.get(), std::size_t(b.row_bytes),
                          static_cast<const char*>(b.base) + b.row0 * b.ld + b.col0,
                          std::size_t(b.ld), std::size_t(b.row_bytes), std::size_t(b.rows),
                          cudaMemcpyDeviceToDevice),
             "cudaMemcpy2D(bench tp shard)");
  if (device == 0) return packed;
  cuda_check(cudaSetDevice(device), "cudaSetDevice(bench tp)");
  DeviceBuffer out(bytes);
  cuda_check(cudaMemcpyPeer(out.get(), device, packed.get(), 0, bytes), "cudaMemcpyPeer(bench tp shard)");
  return out;
}

}  // namespace

TpShards TpRankBuffers::shards() const {
  TpShards s;
  s.a = a.get(), s.b = b.get(), s.d = d.get();
  s.scale_a = static_cast<const float*>(scale_a.get());
  s.scale_b = static_cast<const float*>(scale_b.get());
  return s;
}

TpRankBuffers cut_tp_rank(const TpProblem& p, const GemmInputs& whole, int rank) {
  const bool fp8 = p.scaling == Scaling::block_1x128_128x128;
  const int in = dtype_bytes(p.a_type);
  const TpShardShapes s = tp_shard_shapes(p, rank);
  const int64_t kb = multi::tp_scale_blocks(p.k);  // scale columns of the whole A and B
  TpRankBuffers r;
  if (p.pattern == TpPattern::gather) {  // the rank's rows of A, the whole B
    const int64_t row0 = rank * s.a_rows;
    r.a = shard_of({whole.a.get(), p.k * in, row0, 0, s.a_rows, p.k * in}, rank);
    r.b = shard_of({whole.b.get(), p.k * in, 0, 0, p.n, p.k * in}, rank);
    if (fp8) {
      r.scale_a = shard_of({whole.scales.a.get(), kb * 4, row0, 0, s.a_rows, kb * 4}, rank);
      r.scale_b = shard_of({whole.scales.b.get(), kb * 4, 0, 0, multi::tp_scale_blocks(p.n), kb * 4}, rank);
    }
  } else if (p.pattern == TpPattern::all_gather) {
    const int64_t row0 = rank * s.a_rows, col0 = rank * s.b_rows;
    r.a = shard_of({whole.a.get(), p.k * in, row0, 0, s.a_rows, p.k * in}, rank);
    r.b = shard_of({whole.b.get(), p.k * in, col0, 0, s.b_rows, p.k * in}, rank);
    if (fp8) {
      r.scale_a = shard_of({whole.scales.a.get(), kb * 4, row0, 0, s.a_rows, kb * 4}, rank);
      r.scale_b = shard_of({whole.scales.b.get(), kb * 4, col0 / 128, 0, multi::tp_scale_blocks(s.b_rows), kb * 4}, rank);
    }
  } else {
    const int64_t k0 = rank * s.a_cols;
    r.a = shard_of({whole.a.get(), p.k * in, 0, k0 * in, p.m, s.a_cols * in}, rank);
    r.b = shard_of({whole.b.get(), p.k * in, 0, k0 * in, p.n, s.b_cols * in}, rank);
    if (fp8) {
      const int64_t kb0 = k0 / 128, kbs = multi::tp_scale_blocks(s.a_cols);
      r.scale_a = shard_of({whole.scales.a.get(), kb * 4, 0, kb0 * 4, p.m, kbs * 4}, rank);
      r.scale_b = shard_of({whole.scales.b.get(), kb * 4, 0, kb0 * 4, multi::tp_scale_blocks(p.n), kbs * 4}, rank);
    }
  }
  cuda_check(cudaSetDevice(rank), "cudaSetDevice(bench tp)");
  r.d = DeviceBuffer(std::size_t(s.d_rows * s.d_cols * dtype_bytes(p.d_type)));
  return r;
}

// The bytes of rank `rank`'s block of the one-GPU D (M x N, packed) as that rank stores it.
std::vector<unsigned char> expected_tp_block(const TpProblem& p, const std::vector<unsigned char>& whole,
                                          int rank) {
  const TpShardShapes s = tp_shard_shapes(p, rank);
  const std::size_t e = std::size_t(dtype_bytes(p.d_type));
  const std::size_t row_bytes = std::size_t(s.d_cols) * e;
  const int64_t col0 = p.pattern == TpPattern::all_gather ? rank * s.d_cols : 0;
  std::vector<unsigned char> out(std::size_t(s.d_rows) * row_bytes);
  for (int64_t i = 0; i < s.d_rows; ++i)
    std::copy_n(whole.data() + (std::size_t(s.d_row_offset + i) * std::size_t(p.n) + std::size_t(col0)) * e,
                row_bytes, out.data() + std::size_t(i) * row_bytes);
  return out;
}

}  // namespace autogemm::bench
