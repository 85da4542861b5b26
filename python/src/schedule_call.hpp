#pragma once
// Many independent GEMMs over the GPUs of this process (autogemm/multi_gpu.hpp:
// run_gemm_schedule) for autogemm.distributed.schedule. schedule_call.cpp.
#include "binding.hpp"

namespace autogemm::python {

// Adds schedule(calls, devices, strategy, migrate) to the module.
void register_schedule(nb::module_& m);

}  // namespace autogemm::python
