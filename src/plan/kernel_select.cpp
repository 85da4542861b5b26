// Which implementation runs each kernel class on a device, and why. Decisions read only the
// architecture capabilities (GpuInfo::caps, from the capability table) so an instruction the
// architecture lacks is never recommended: wgmma only on sm_90a (CC 9.0 exactly), tcgen05
// only where caps.tcgen05, TMA only where caps.tma, FP8 only where caps.fp8_tensor_cores.
#include <fmt/format.h>

#include <string>

#include "autogemm/plan.hpp"
#include "plan/gemm_search.hpp"
#include "plan/rules.hpp"

namespace autogemm {
namespace {

using plan::arch_label;  // "sm_90a" from the capability row, else from the CC

constexpr const char* kOurs = "autogemm sm90a";
constexpr const char* kVendor = "cuBLASLt";
constexpr const char* kNone = "none yet";

bool known_arch(const GpuInfo& d) { return !d.caps.arch_name.empty(); }

// Our JIT kernels are written for sm_90a: TMA loads and stores around wgmma. Both features must
// be present; CC 9.0 is checked as well because sm_90a code runs on CC 9.0 only.
bool runs_our_sm90a_kernels(const GpuInfo& d) {
  return d.cc.major == 9 && d.cc.minor == 0 && d.caps.wgmma && d.caps.tma;
}

// The matrix instruction family this architecture would use for a tensor-core kernel.
std::string matrix_path(const GpuInfo& d) {
  if (runs_our_sm90a_kernels(d)) return "TMA+wgmma";
  if (d.caps.tcgen05) return "tcgen05";
  if (d.caps.mma_sync_f16_bf16) return "mma.sync";
  return "standard";
}

// What the architecture offers to a memory-bound kernel, named only when it has it.
std::string memory_features(const GpuInfo& d) {
  return d.caps.tma ? "16-byte vector loads or TMA bulk copies" : "16-byte vector loads";
}

// What the architecture offers for tensor-core matrix products, named only when present.
std::string matrix_features(const GpuInfo& d) {
  if (runs_our_sm90a_kernels(d)) return "TMA + wgmma (warpgroup MMA)";
  if (d.caps.tcgen05)
    return d.caps.tma ? "tcgen05 MMA with tensor memory, fed by TMA" : "tcgen05 MMA with tensor memory";
  // cp.async (sm_80+) is the pre-TMA asynchronous copy; mma.sync implies sm_80+.
  if (d.caps.mma_sync_f16_bf16)
    return d.caps.tma ? "warp-level mma.sync, fed by TMA" : "warp-level mma.sync, fed by cp.async";
  return "CUDA cores only";
}

KernelChoice gemm_choice(const GpuInfo& d) {
  const std::string arch = arch_label(d);
  if (runs_our_sm90a_kernels(d))
    return {KernelClass::gemm, kOurs, "TMA+wgmma",
            fmt::format("{}: our JIT bf16/fp16 kernel, a TMA-fed, warp-specialized, persistent "
                        "wgmma pipeline planned for this device",
                        arch)};
  if (!known_arch(d))
    return {KernelClass::gemm, kVendor, "vendor",
            fmt::format("{}: architecture not in autogemm's capability table; cuBLASLt picks "
                        "its own kernel",
                        arch)};
  return {KernelClass::gemm, kVendor, "vendor",
          fmt::format("{}: autogemm's kernels target sm_90a only; cuBLASLt has kernels tuned "
                      "for this arch: {}",
                      arch, matrix_features(d))};
}

// A GEMV is a GEMM of one row (M = 1): plan_gemm's decode family where our kernels run
// (gemm_search.cpp, decode_configs), ranked with the tile kernels as for any GEMM.
KernelChoice gemv_choice(const GpuInfo& d) {
  const std::string arch = arch_label(d);
  if (runs_our_sm90a_kernels(d))
    return {KernelClass::gemv, kOurs, "mma.sync",
            fmt::format("{}: memory-bound (about 1 FLOP per matrix byte): the planner ranks its "
                        "decode family for M <= {} (the matrix streamed once from DRAM through "
                        "cp.async rings per warp into mma.sync) with the wgmma tiles on D or "
                        "D^T; `autogemm plan --m 1` shows the pick",
                        arch, plan::kDecodeMaxM)};
  return {KernelClass::gemv, kVendor, "vendor",
          fmt::format("{}: {}; cuBLASLt streams the matrix near DRAM bandwidth", arch,
                      known_arch(d) ? "autogemm's kernels target sm_90a only"
                                    : "architecture not in autogemm's capability table")};
}

KernelChoice quantized_gemm_choice(const GpuInfo& d) {
  const std::string arch = arch_label(d);
  if (runs_our_sm90a_kernels(d) && d.caps.fp8_tensor_cores)
    return {KernelClass::quantized_gemm, kOurs, "TMA+wgmma",
            fmt::format("{}: our JIT FP8 (e4m3) kernel, k32 wgmma with both operands K-major "
                        "and fp32 promotion for block scales",
                        arch)};
  if (!known_arch(d))
    return {KernelClass::quantized_gemm, kVendor, "vendor",
            fmt::format("{}: architecture not in autogemm's capability table; cuBLASLt decides "
                        "which quantized types it supports",
                        arch)};
  if (d.caps.fp8_tensor_cores)
    return {KernelClass::quantized_gemm, kVendor, "vendor",
            fmt::format("{}: FP8 matrix units present; cuBLASLt's scaled FP8 matmul on {}", arch,
                        matrix_features(d))};
  return {KernelClass::quantized_gemm, kVendor, "vendor",
          fmt::format("{}: no FP8 matrix unit; INT8 (s8 x s8 -> s32) through cuBLASLt on {}",
                      arch, matrix_features(d))};
}

KernelChoice quantized_dot_choice(const GpuInfo& d) {
  if (runs_our_sm90a_kernels(d))
    return {KernelClass::quantized_dot, kOurs, "mma.sync",
            fmt::format("{}: weight-only int4 (128-element groups, with or without zeros), "
                        "MXFP4 (e2m1, an e8m0 scale per 32) and int8 weights times bf16 "
                        "activations, dequantised in registers by the "
                        "decode family for M <= {} (`autogemm plan --weights int4-g128`)",
                        arch_label(d), plan::kWeightOnlyMaxM)};
  return {KernelClass::quantized_dot, kNone, "standard",
          fmt::format("{}: no kernel of ours yet; it is memory-bound: dp4a int8 dot products{}, "
                      "fed by {}",
                      arch_label(d), d.caps.fp8_tensor_cores ? " and FP8 conversions" : "",
                      memory_features(d))};
}

KernelChoice attention_choice(const GpuInfo& d) {
  return {KernelClass::attention, kNone, matrix_path(d),
          fmt::format("{}: no kernel of ours yet; a fused attention kernel here would build on "
                      "{}",
                      arch_label(d), matrix_features(d))};
}

KernelChoice memory_bound_choice(const GpuInfo& d, KernelClass c, std::string_view what) {
  return {c, kNone, "standard",
          fmt::format("{}: no kernel of ours yet; {} is memory-bound, so a CUDA-core kernel "
                      "with {} suffices",
                      arch_label(d), what, memory_features(d))};
}

// An activation or per-element pass that follows a GEMM is served by the GEMM's own epilogue
// (GemmProblem::epilogue, sm90/fused_epilogue.cuh): no pass over D at all. A standalone pass
// over any tensor still has no kernel of ours.
KernelChoice epilogue_choice(const GpuInfo& d, KernelClass c, std::string_view what) {
  if (!runs_our_sm90a_kernels(d)) return memory_bound_choice(d, c, what);
  return {c, kOurs, "TMA+wgmma",
          fmt::format("{}: after a GEMM, fused into its epilogue (bias, relu, gelu_tanh, "
                      "gelu_erf, silu, row and column scales in fp32 before D is stored: "
                      "`autogemm plan --activation silu`); {} over a tensor alone: no kernel of "
                      "ours yet",
                      arch_label(d), what)};
}

}  // namespace

std::string_view to_string(KernelClass c) {
  switch (c) {
    case KernelClass::gemm: return "gemm";
    case KernelClass::gemv: return "gemv";
    case KernelClass::quantized_gemm: return "quantized_gemm";
    case KernelClass::quantized_dot: return "quantized_dot";
    case KernelClass::attention: return "attention";
    case KernelClass::rmsnorm: return "rmsnorm";
    case KernelClass::softmax: return "softmax";
    case KernelClass::rope: return "rope";
    case KernelClass::silu: return "silu";
    case KernelClass::elementwise: return "elementwise";
  }
  return "?";
}

std::vector<KernelChoice> select_kernels(const GpuInfo& device) {
  return {
      gemm_choice(device),
      gemv_choice(device),
      quantized_gemm_choice(device),
      quantized_dot_choice(device),
      attention_choice(device),
      memory_bound_choice(device, KernelClass::rmsnorm, "a row reduction plus scale"),
      memory_bound_choice(device, KernelClass::softmax, "a row max/sum reduction"),
      memory_bound_choice(device, KernelClass::rope, "a per-element rotation"),
      epilogue_choice(device, KernelClass::silu, "a per-element activation"),
      epilogue_choice(device, KernelClass::elementwise, "one pass over the data"),
  };
}

}  // namespace autogemm
