#pragma once
// The cost model of the decode family (config.instruction = mma, kernels/sm90/decode_kernel.cuh);
// predict() (plan.hpp) hands its configurations here.
#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::plan {

// Registers one lane of the decode kernel needs: a step's loaded vectors, the accumulators
// (twice for block-scaled FP8: the scale block's sums), and addresses and loop state.
int decode_registers(const GemmProblem& problem, const GemmConfig& config);
// The decode kernel's CTAs one SM holds at once (registers and the 16-CTA / 2048-thread limits).
int decode_ctas_per_sm(const GemmProblem& problem, const GemmConfig& config);

Prediction predict_decode(const GemmProblem& problem, const GemmConfig& config,
                          const GpuInfo& device);

}  // namespace autogemm::plan
