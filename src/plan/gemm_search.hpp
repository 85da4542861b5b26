#pragma once
// The configuration search behind plan_gemm: which implementation a problem gets on a device,
// and the configurations considered for our own kernel.
#include <string>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::plan {

// Why the problem goes to the vendor library (cuBLASLt) on this device, naming the rule:
// "a100-80g is sm_80: no wgmma/TMA (sm_90a); cuBLASLt". Empty when our sm_90a kernel applies.
std::string vendor_reason(const GemmProblem& problem, const GpuInfo& device);

// The single configuration of the vendor path (instruction = vendor, tile fields zero: the
// library picks its own).
GemmConfig vendor_config();

}  // namespace autogemm::plan
