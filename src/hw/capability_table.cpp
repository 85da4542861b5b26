// The architecture capability table: what follows from a compute capability alone.
//
// Sources, cited per row as [tag]:
//  [CG]   CUDA C++ Programming Guide, "Compute Capabilities", table "Technical Specifications
//         per Compute Capability" (shared memory per SM and per block opt-in; thread block
//         clusters from 9.0) and "Feature Availability" (arch-specific 'a' targets).
//  [PTX]  PTX ISA, "Target ISA notes" of mma.sync (f16/bf16 sm_80, e4m3/e5m2 sm_89,
//         kind::f8f6f4/mxf4 block-scaled sm_100a/sm_120a), wgmma.mma_async (sm_90a only),
//         tcgen05.* (sm_100a, sm_101a = sm_110a since CUDA 13, sm_103a),
//         cp.async.bulk.tensor (sm_90), setmaxnreg (sm_90a).
//  [LLVM] llvm-project e225677 "[NVPTX] Update setmaxnreg intrinsic lowering" (#125846):
//         setmaxnreg is supported on every arch-conditional target from sm_90a on
//         (sm_90a, sm_100a, sm_101a/sm_110a, sm_120a as of CUDA 12.8).
//  [DT]   CUDA 13.0 driver_types.h, cudaFuncAttributes::nonPortableClusterSizeAllowed:
//         "The portable cluster size for sm_90 is 8 blocks per cluster."
//  [HTG]  Hopper tuning guide (quoted in /work/shared/docs/hopper-facts.md, section 9):
//         non-portable cluster size 16 on H100.
//  [BTG]  Blackwell tuning guide, "Thread Block Clusters": 8 portable, 16 with the
//         non-portable opt-in, as on Hopper.
//  [HF]   /work/shared/docs/hopper-facts.md section 7: 4096 dense BF16 FLOP/clk/SM
//         (989.4 TFLOP/s = 132 x 4096 x 1.83 GHz), FP8 twice that.
//  Datasheet rates are derived as peak dense TFLOP/s / (SMs x boost clock) and rounded to
//  the power of two they sit next to; each row shows its arithmetic. These are the
//  full-rate (data-centre / professional) FP32-accumulate figures; GeForce parts of the same
//  arch (RTX 3090, 4090, 5090) run FP32 accumulate at half this rate.
#include <fmt/format.h>

#include "autogemm/device.hpp"

namespace autogemm {
namespace {

constexpr int kKiB = 1024;

// Ampere GA100 (A100).
ArchCapabilities sm80() {
  return {
      .arch_name = "sm_80",
      .mma_sync_f16_bf16 = true,                 // [PTX] mma.sync .bf16 needs sm_80
      .smem_per_sm_bytes = 164 * kKiB,           // [CG] CC 8.0: 164 KB per SM
      .smem_per_block_optin_bytes = 163 * kKiB,  // [CG] CC 8.0: 163 KB per block
      // A100 datasheet: 312 TFLOP/s dense BF16 / (108 SMs x 1.41 GHz) = 2049 -> 2048.
      .dense_bf16_flops_per_clock_per_sm = 2048,
  };
}

// Ampere GA10x (A40, A10, RTX 30xx).
ArchCapabilities sm86() {
  return {
      .arch_name = "sm_86",
      .mma_sync_f16_bf16 = true,                 // [PTX] sm_80+
      .smem_per_sm_bytes = 100 * kKiB,           // [CG] CC 8.6: 100 KB per SM
      .smem_per_block_optin_bytes = 99 * kKiB,   // [CG] CC 8.6: 99 KB per block
      // A40 datasheet: 149.7 TFLOP/s dense BF16 / (84 SMs x 1.74 GHz) = 1024.
      .dense_bf16_flops_per_clock_per_sm = 1024,
  };
}

// Ampere GA10B (Jetson AGX Orin).
ArchCapabilities sm87() {
  return {
      .arch_name = "sm_87",
      .mma_sync_f16_bf16 = true,                 // [PTX] sm_80+
      .smem_per_sm_bytes = 164 * kKiB,           // [CG] CC 8.7: 164 KB per SM
      .smem_per_block_optin_bytes = 163 * kKiB,  // [CG] CC 8.7: 163 KB per block
      // Jetson AGX Orin 64GB datasheet: 170 sparse INT8 TOPS = 85 dense / (16 SMs x 1.3 GHz)
      // = 4087 INT8 op/clk/SM; BF16 runs at half the INT8 rate on Ampere -> 2048.
      .dense_bf16_flops_per_clock_per_sm = 2048,
  };
}

// Ada AD10x (L40S, L4, RTX 40xx).
ArchCapabilities sm89() {
  return {
      .arch_name = "sm_89",
      .mma_sync_f16_bf16 = true,                 // [PTX] sm_80+
      .fp8_tensor_cores = true,                  // [PTX] mma.sync .e4m3/.e5m2 needs sm_89
      .smem_per_sm_bytes = 100 * kKiB,           // [CG] CC 8.9: 100 KB per SM
      .smem_per_block_optin_bytes = 99 * kKiB,   // [CG] CC 8.9: 99 KB per block
      // L40S datasheet: 362.05 TFLOP/s dense BF16 / (142 SMs x 2.52 GHz) = 1012 -> 1024;
      // 733 TFLOP/s dense FP8 -> 2048.
      .dense_bf16_flops_per_clock_per_sm = 1024,
      .dense_fp8_flops_per_clock_per_sm = 2048,
  };
}

// Hopper GH100 (H100, H200). Compiled as sm_90a for wgmma and setmaxnreg.
ArchCapabilities sm90() {
  return {
      .arch_name = "sm_90a",
      .mma_sync_f16_bf16 = true,                 // [PTX] sm_80+
      .fp8_tensor_cores = true,                  // [PTX] wgmma .e4m3/.e5m2 on sm_90a
      .wgmma = true,                             // [PTX] wgmma.mma_async requires sm_90a
      .tma = true,                               // [PTX] cp.async.bulk.tensor requires sm_90
      .clusters = true,                          // [CG] thread block clusters from CC 9.0
      .setmaxnreg = true,                        // [PTX] setmaxnreg requires sm_90a
      .smem_per_sm_bytes = 228 * kKiB,           // [CG] CC 9.0: 228 KB; [HF] 233472 B verified
      .smem_per_block_optin_bytes = 227 * kKiB,  // [CG] CC 9.0: 227 KB; [HF] 232448 B verified
      .max_cluster_portable = 8,                 // [DT]
      .max_cluster_nonportable = 16,             // [HTG]
      .dense_bf16_flops_per_clock_per_sm = 4096,  // [HF]
      .dense_fp8_flops_per_clock_per_sm = 8192,   // [HF] 1978.9 TFLOP/s dense FP8
  };
}

// Data-centre Blackwell (B200 = sm_100, B300 = sm_103) and Jetson Thor (sm_110, called
// sm_101 before CUDA 13): tcgen05 + tensor memory instead of wgmma.
ArchCapabilities blackwell_datacenter(const char* arch_name, int nonportable_cluster) {
  return {
      .arch_name = arch_name,
      .mma_sync_f16_bf16 = true,                 // [PTX] sm_80+
      .fp8_tensor_cores = true,                  // [PTX] tcgen05.mma kind::f8f6f4
      .fp4_tensor_cores = true,                  // [PTX] tcgen05.mma kind::f8f6f4 / mxf4
      .wgmma = false,                            // [PTX] wgmma is sm_90a only
      .tcgen05 = true,                           // [PTX] tcgen05.* on sm_100a/101a/103a
      .tensor_memory = true,                     // [PTX] tcgen05.alloc (TMEM), same targets
      .tma = true,                               // [PTX] sm_90+
      .clusters = true,                          // [CG] CC 9.0+
      .setmaxnreg = true,                        // [LLVM] arch-conditional targets sm_90a+
      .smem_per_sm_bytes = 228 * kKiB,           // [CG] CC 10.0/10.3/11.0: 228 KB per SM
      .smem_per_block_optin_bytes = 227 * kKiB,  // [CG] 227 KB per block
      .max_cluster_portable = 8,                 // [DT] portable size is 8 on every arch
      .max_cluster_nonportable = nonportable_cluster,
      // HGX B200 datasheet: 2.25 PFLOP/s dense BF16 / (148 SMs x 1.86 GHz tensor clock)
      // = 8173 -> 8192; 4.5 PFLOP/s dense FP8 -> 16384. B300 (sm_103) raises only the FP4
      // rate; Jetson Thor (sm_110): 2070 sparse FP4 TFLOP/s / 2 / (20 SMs x 1.575 GHz)
      // = 32857 FP4 op/clk/SM, the same per-SM rate as B200 (9 PFLOP/s / 148 / 1.86 GHz).
      .dense_bf16_flops_per_clock_per_sm = 8192,
      .dense_fp8_flops_per_clock_per_sm = 16384,
  };
}

// GeForce / workstation Blackwell (RTX 50xx = sm_120, DGX Spark GB10 = sm_121): mma.sync
// tensor cores with FP8/FP4, TMA and clusters, but neither wgmma nor tcgen05/TMEM.
ArchCapabilities blackwell_consumer(const char* arch_name) {
  return {
      .arch_name = arch_name,
      .mma_sync_f16_bf16 = true,                 // [PTX] sm_80+
      .fp8_tensor_cores = true,                  // [PTX] mma.sync .e4m3 (sm_89+)
      .fp4_tensor_cores = true,                  // [PTX] mma.sync kind::mxf4 needs sm_120a
      .wgmma = false,                            // [PTX] sm_90a only
      .tcgen05 = false,                          // [PTX] sm_100a/101a/103a only
      .tensor_memory = false,
      .tma = true,                               // [PTX] sm_90+
      .clusters = true,                          // [CG] CC 9.0+
      .setmaxnreg = true,                        // [LLVM] sm_120a is arch-conditional
      .smem_per_sm_bytes = 100 * kKiB,           // [CG] CC 12.x: 100 KB per SM
      .smem_per_block_optin_bytes = 99 * kKiB,   // [CG] CC 12.x: 99 KB (101376 B) per block
      .max_cluster_portable = 8,                 // [DT]
      // No published non-portable size for CC 12.x: assume only the portable one; a
      // measured profile asks the occupancy query instead.
      .max_cluster_nonportable = 8,
      // RTX 5090 (Blackwell GeForce whitepaper): 419 dense FP16 TFLOP/s (FP16 accumulate)
      // / (170 SMs x 2.407 GHz) = 1024; FP8 838 -> 2048. GB10: 1 PFLOP/s sparse FP4
      // / 2 / (48 SMs x ~2.5 GHz) = 4166 FP4 op/clk/SM, the same 4:2:1 ladder -> 1024/2048.
      .dense_bf16_flops_per_clock_per_sm = 1024,
      .dense_fp8_flops_per_clock_per_sm = 2048,
  };
}

}  // namespace

std::optional<ArchCapabilities> arch_capabilities(ComputeCapability cc) {
  switch (cc.as_int()) {
    case 80: return sm80();
    case 86: return sm86();
    case 87: return sm87();
    case 89: return sm89();
    case 90: return sm90();
    case 100: return blackwell_datacenter("sm_100a", 16);  // [BTG] 16 non-portable
    case 103: return blackwell_datacenter("sm_103a", 16);  // same SM as sm_100
    case 110: return blackwell_datacenter("sm_110a", 8);   // Thor: none published -> portable
    case 120: return blackwell_consumer("sm_120a");
    case 121: return blackwell_consumer("sm_121a");
    default: return std::nullopt;
  }
}

}  // namespace autogemm
