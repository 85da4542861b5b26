// GpuInfo's derived peaks: the arch's matrix-unit rate times this GPU's SMs and SM clock.
#include "autogemm/device.hpp"
#include "hw/gpu_math.hpp"

namespace autogemm {

double GpuInfo::peak_bf16_tflops() const {
  return hw::peak_tflops(caps.dense_bf16_flops_per_clock_per_sm, sm_count, sm_clock_khz);
}

double GpuInfo::peak_fp8_tflops() const {
  return hw::peak_tflops(caps.dense_fp8_flops_per_clock_per_sm, sm_count, sm_clock_khz);
}

}  // namespace autogemm
