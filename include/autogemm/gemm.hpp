#pragma once
// The call: D = alpha * op(A) * op(B) + beta * C on a CUDA stream (with problem.epilogue:
// D = act(alpha * acc * row_scale[m] * col_scale[n] + bias[n]) + beta * C).
#include <cuda_runtime_api.h>

#include <optional>
#include <string>

#include "autogemm/config.hpp"
#include "autogemm/problem.hpp"

namespace autogemm {

struct GemmOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;     // read when beta != 0 (same type and shape as D)
  void* d = nullptr;
  float alpha = 1.0f;
  float beta = 0.0f;
  // FP8 scales (Scaling::per_tensor: one float each; block_1x128_128x128: see fp8 docs).
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  // The fused epilogue's vectors (problem.epilogue says which are read; each must be null when
  // it is not): bias[N] of problem.epilogue.bias's type, fp32 row_scale[M] and col_scale[N].
  // Adjacent elements are loaded in pairs, so bias needs 4-byte (bf16) or 8-byte (fp32)
  // alignment and the scales 8-byte alignment.
  const void* bias = nullptr;
  const float* row_scale = nullptr;
  const float* col_scale = nullptr;
  // FP8 output (problem.d_type e4m3): fp32 [M, ceil(D columns / 128)] row-major, written by
  // the epilogue: each the amax / 448 of its 128 columns of the row, never below 2^-126 (the
  // rule of quantize_fp8), D = e4m3(value / scale). The block-scaled A scales of the next GEMM.
  float* d_scale = nullptr;
  // Weight-only B (problem.weight_format): b is the packed values, b_scales its scales (bf16
  // [N, K/128] for int4, fp32 [N] for int8) and b_zeros the int4-g128-zp zeros (bytes
  // [N, K/128]); the layouts of autogemm/weights.hpp. Null otherwise.
  const void* b_scales = nullptr;
  const void* b_zeros = nullptr;
  // Row-band signals (problem.signal_bands = S > 0; null otherwise). band_ends: S host values,
  // the bands' ends in D's rows, ascending, the last M, each a multiple of the kernel's rows per
  // cluster tile (block_m x cluster_m; the launcher refuses others). band_counters: S device
  // words, 0 before the call, and the kernel leaves them 0. band_flags: S device words the kernel
  // sets to 1 when the band's rows of D are written and visible to the whole system (the last of
  // its tiles' stores, then a release at system scope); whoever waits for a flag sets it back to
  // 0 (e.g. cuStreamWaitValue32 EQ 1, then cuStreamWriteValue32 0 on the waiting stream).
  const int64_t* band_ends = nullptr;
  uint32_t* band_counters = nullptr;
  uint32_t* band_flags = nullptr;
  // Band-gated C (signal_bands > 0 and reads_c; optional): S device words, one per band, that
  // someone else (a stream memory operation, another GPU) sets to 1 once the band's rows of C
  // are in place. The kernel starts at once and waits for each band's flag before it loads
  // that band's C, so C may still be arriving while the first bands compute. The kernel leaves
  // the flags as they are; the caller resets them after the call (every flag was 1 by its end).
  const uint32_t* c_band_flags = nullptr;
};

struct GemmOptions {
  // Force a configuration (ladder, autotuning, tests); GemmConfig::parse("cuBLASLt") forces
  // the vendor path (needs allow_vendor_fallback).
  std::optional<GemmConfig> config;
  // Run through cuBLASLt where our kernel cannot serve, or where the planner predicts its
  // kernels for rows TMA cannot describe faster than copying them for ours; false: those copies
  // (and an error where no kernel of ours serves the call).
  bool allow_vendor_fallback = true;
  int device = -1;                    // -1: the current device
  // Autotuning: on the first call for a problem, time this many of the planner's best distinct
  // configurations on the call's own buffers (D is overwritten, then written for real) and
  // keep the fastest for every later call in the process. The winner is also written to the
  // tuning record on disk (beside the kernel cache; not with AUTOGEMM_TUNING_RECORD=0 or with the
  // disk cache off: docs/env-vars.md), keyed by device, problem and this build's kernels, where
  // later processes find it: their calls of the problem run it without timing, autotuning or
  // not, unless they ask to time more candidates than it was tuned over. The same holds in this
  // process for a problem the record already has: its entry runs and nothing is timed.
  // -1: $AUTOGEMM_AUTOTUNE (default 0: the planner's choice, or the record's entry). Skipped when
  // C and D are the same buffer. Besides our configurations, cuBLASLt's heuristic's first
  // algorithms for the call are timed (up to 8): where one wins, the problem runs cuBLASLt with
  // that algorithm, so a tuned problem does not run slower than cuBLASLt. A tuning file
  // (autogemm/tuning.hpp, AUTOGEMM_TUNING_FILE) holding the problem decides instead, untimed.
  int autotune = -1;
  // Autotuning times each candidate as a CUDA graph replay of its launches (for callers who
  // replay graphs: no host launch cost between kernels) instead of plain launches. -1:
  // $AUTOGEMM_AUTOTUNE_GRAPH (1 on, default 0).
  int autotune_graph = -1;
};

struct GemmReport {
  bool used_vendor = false;           // true when cuBLASLt ran
  GemmConfig config;                  // the configuration that ran (ours)
  std::string reason;                 // why this path
};

// Checks every argument before anything runs (InvalidArgument names it, its value and the
// rule). Asynchronous on `stream`; errors from the launch throw CudaError.
// Split-K configurations use a workspace kept per (device, stream) for the life of the process
// (a few MB at decode sizes; calls on one stream share it, other streams get their own). It is
// allocated, on the stream, by the first split-K call that needs it; during stream capture it
// cannot grow (InvalidArgument), so make one such call on the stream before capturing a graph.
GemmReport gemm(const GemmProblem& problem, const GemmOperands& operands, cudaStream_t stream,
                const GemmOptions& options = {});

}  // namespace autogemm
