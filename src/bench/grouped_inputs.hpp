#pragma once
// The device data of one row of `autogemm bench --grouped` (grouped_bench.hpp): A and B as
// grouped_gemm() reads them, our D and the baselines' D poisoned, and the groups' sizes as the
// kernel reads them (group_index or masked_m).
//
// Random everywhere, padding and rows past masked_m included: never zeros (the matrix units run
// faster on them, baselines.md), and an A row read in place of another changes D rather than
// adding zeros that hide it. A from the row's input_seed, B from input_seed + 1 (fill_random).
//
// Block-scaled FP8 rows are made the way a user makes them: that same random data in BF16 (the
// `sources`, make_fp8_sources), quantised to e4m3 by the library (quantize.hpp): A as one matrix
// of every stored row with 1x128 scales ([stored rows, ceil(K/128)]), each group's B with 128x128
// scales ([groups, ceil(N/128), ceil(K/128)]): the layouts GroupedOperands takes. The float64
// reference multiplies the sources, so an FP8 row's diff includes the quantisation, as DeepGEMM
// judges FP8 (< 1e-3).
#include <cstddef>
#include <vector>

#include "autogemm/grouped.hpp"
#include "bench/grouped_bench.hpp"
#include "bench/tensors.hpp"

namespace autogemm::bench {

struct GroupedInputs {
  GemmProblem problem;                 // the row's
  DeviceBuffer a, b;                   // as the kernel reads them: bf16/fp16, or e4m3
  DeviceBuffer scale_a, scale_b;       // FP8 only
  Fp8Sources sources;                  // FP8 only, until release_sources(): the BF16 data
  DeviceBuffer d_ours, d_base;         // poisoned; d_base only with baselines
  DeviceBuffer group_index, masked_m;  // contiguous / masked
  std::vector<unsigned char> poison;   // one element of D as fill_poison leaves it

  // Ready on the device when this returns. `baseline`: the baselines will run (d_base).
  GroupedInputs(const GroupedItem& item, bool baseline);

  // Our call's operands (into d_ours) and the baselines' (the same inputs, into d_base).
  GroupedOperands operands() const;
  GroupedOperands baseline_operands() const;

  // What the float64 reference multiplies, both of reference_type(): the BF16 sources for FP8,
  // else a and b. Null for FP8 after release_sources().
  const void* reference_a() const;
  const void* reference_b() const;
  DType reference_type() const;
  // FP8: frees the sources once the reference has checked the row (the timed calls do not need
  // them; the largest rows' sources take 0.8 GB).
  void release_sources();

  void repoison_base();   // d_base back to the poison, before the next baseline's first call
};

// `bytes` bytes of device memory, copied back to the host.
std::vector<unsigned char> download_bytes(const void* device, std::size_t bytes);

}  // namespace autogemm::bench
