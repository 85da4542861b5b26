#pragma once
// The calls that take arrays: gemm / fp8_gemm (checked into a GemmProblem and GemmOperands
// first), the host-cost timing over the same prepared call, and FP8 (de)quantisation.
#include <cstdint>
#include <optional>
#include <string>

#include "autogemm/gemm.hpp"
#include "binding.hpp"

namespace autogemm::python {

// What Python passed (autogemm/__init__.py has resolved the stream and picked the allocator).
struct GemmRequest {
  const char* a_name = "a";
  const char* b_name = "b";
  nb::handle a, b, out, c, a_scales, b_scales;   // None where absent
  std::string layout = "nt";                     // nt, nn, tn, tt or auto
  std::optional<std::string> a_bytes, b_bytes;   // FP8: how uint8 arrays are read (e4m3/e5m2)
  std::optional<std::string> out_dtype;
  float alpha = 1.0f, beta = 0.0f;
  std::string scaling;                           // "" for 16-bit; "block" or "per_tensor"
  std::optional<std::string> config;
  int autotune = -1;
  bool vendor_fallback = true;
  nb::handle alloc;                              // callable(rows, cols, dtype) or None
  // The fused epilogue (autogemm/epilogue.hpp): 1-D vectors or None, and the activation's name
  // ("none", "relu", "gelu_tanh", "gelu_erf", "silu").
  nb::handle bias, row_scale, col_scale;
  std::string activation = "none";
  bool gated = false;       // D = act(gate) * up, N / 2 columns (autogemm/epilogue.hpp)
  // FP8 output (out_dtype fp8): where its scales go, float32 (M, ceil(D columns / 128)), or
  // None to allocate them.
  nb::handle out_scales = nb::none();
  // Weight-only B (autogemm/weights.hpp): b is the packed values (uint8 or int8), and these the
  // format's name, its scales and (int4-g128-zp) zeros. None / nullopt otherwise.
  std::optional<std::string> weight_format;
  nb::handle weight_scales = nb::none(), weight_zeros = nb::none();
};

// The checked call: exactly the problem, operands and options a C++ caller would pass.
struct PreparedGemm {
  std::optional<ArrayView> a, b, out, c, a_scales, b_scales, bias, row_scale, col_scale,
      out_scales, weight_scales, weight_zeros;
  GemmProblem problem;
  GemmOperands operands;
  GemmOptions options;
  int device = 0;
};

void prepare_gemm(const GemmRequest& request, PreparedGemm& prepared);
GemmReport run_gemm(const PreparedGemm& prepared, uintptr_t stream);
// Host microseconds per autogemm::gemm() call, as GemmGpu.HostCostPerCall measures them: one
// call first (plan, compile or load), then `calls` enqueues timed back to back.
double time_enqueues(const PreparedGemm& prepared, uintptr_t stream, int calls);

// transpose: x^T's 1x128 copy (quantize_fp8_1x128_transposed), the FP8 weight gradient's operand.
void quantize(nb::handle x, nb::handle values, nb::handle scales, int block_rows, uintptr_t stream,
              nb::handle alloc, bool transpose);
// Weight-only formats on the host (autogemm/weights.hpp): a float32 (N, K) NumPy weight packed
// into (values, scales, zeros) bytes, and back to float32 (N, K).
nb::tuple quantize_weight(nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> w,
                          const std::string& format);
nb::bytes dequantize_weight(nb::bytes q, nb::bytes scales, nb::bytes zeros,
                            const std::string& format, int64_t n, int64_t k);
// A checkpoint's packed layer into autogemm's layout (autogemm/weights.hpp importers): "gptq"
// and "awq" (int32 qweight and qzeros, fp16 scales as uint16 bits) or "mxfp4" (gpt-oss uint8
// blocks [N, K/32, 16] and e8m0 scales [N, K/32]); returns (format, n, k, q, scales, zeros).
nb::tuple import_weight(const std::string& kind, nb::handle qweight, nb::handle qzeros,
                        nb::handle scales, int64_t group_size);

void dequantize(nb::handle values, nb::handle scales, int block_rows, nb::handle out,
                const std::string& out_dtype, uintptr_t stream, nb::handle alloc);

}  // namespace autogemm::python
