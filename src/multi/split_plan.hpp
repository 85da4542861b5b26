#pragma once
// The splitter's pieces and rules (plan_split in multi_gpu.hpp), shared with the executor
// (nccl_exec.cpp) so that both cut a problem the same way.
#include <string>
#include <vector>

#include "autogemm/multi_gpu.hpp"
#include "multi/partition.hpp"

namespace autogemm::multi {

// Parts are whole granules: rows in 64s (wgmma's m64, and 16-byte aligned slices of a
// transposed A in any type); columns in 64s, 128s for block-scaled FP8 (a part must start on a
// 128 x 128 block of B's scales); K in 128s (FP8's scale groups; two 64-element k-blocks of
// 16-bit inputs). Chunks of a part are cut in row granules.
inline constexpr int64_t kRowGranule = 64;
inline constexpr int64_t kDepthGranule = 128;
int64_t column_granule(const GemmProblem& problem);

// While NCCL runs beside a GEMM it holds some SMs; the GEMM loses them for that time. NCCL's
// ring and point-to-point kernels on an NVSwitch system run one CTA per channel, 16 to 32
// channels by default: 16 is assumed (measure: the GPU run's predicted against measured).
inline constexpr double kNcclSmsWhileOverlapped = 16;

// The chunk counts the planner tries (SplitOptions::max_chunks is one of them).
inline constexpr int kChunkCounts[] = {1, 2, 4, 8};

// The sub-problem one piece computes: the problem's types, layout and leading dimensions with
// the piece's M, N, K and D of type `d_type` (split K's partial type). ldd: as given (the
// executor sets where D goes).
GemmProblem piece_problem(const GemmProblem& problem, const SplitPiece& piece, DType d_type);

// The type split K's partial sums travel in: the output's own for one GPU (the one partial is
// the result, bit for bit), fp32 for several (bf16 partials would be rounded once per partial
// and again at every step of the reduction).
DType partial_type_for(const GemmProblem& problem, int gpus);

// Rows of D each rank owns when split K's output is sharded (an M split of the reduced D).
std::vector<Range> row_shards(const GemmProblem& problem, int gpus);

// [rank][chunk] pieces of `kind` on `gpus` GPUs, each rank's work cut into `chunks` pieces
// along M; empty with *why_not set when the problem cannot be cut so (a part or a chunk would
// be empty, or split K of block-scaled FP8). SplitKind::none: rank 0 has the whole problem in
// `chunks` pieces, the others none.
std::vector<std::vector<SplitPiece>> cut_pieces(const GemmProblem& problem, SplitKind kind,
                                                int gpus, int chunks, std::string* why_not);

}  // namespace autogemm::multi
