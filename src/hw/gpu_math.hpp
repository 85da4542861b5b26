#pragma once
// Arithmetic shared by measured profiles and presets, so both derive numbers the same way.
namespace autogemm::hw {

// Theoretical DRAM bandwidth in GB/s (1e9 B/s). The driver reports the DDR clock (half the
// data rate) for HBM and GDDR alike, so bytes/s = 2 transfers x clock x bus width / 8.
constexpr double theoretical_bandwidth_gbps(int memory_clock_khz, int bus_width_bits) {
  return 2.0 * memory_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
}

// Peak dense matrix TFLOP/s = FLOP per clock per SM x SMs x SM clock.
constexpr double peak_tflops(int flops_per_clock_per_sm, int sm_count, int sm_clock_khz) {
  return static_cast<double>(flops_per_clock_per_sm) * sm_count * sm_clock_khz * 1e3 / 1e12;
}

}  // namespace autogemm::hw
