#pragma once
// Tensor-parallel GEMMs (autogemm/tensor_parallel.hpp) for autogemm.distributed: tp_plan (no
// GPU), nccl_unique_id, TpComm (one rank of a communicator made from a unique id) and TpGemm
// (one plan, and the workspace it runs on, for that communicator). tp_call.cpp.
#include "binding.hpp"

namespace autogemm::python {

// Adds tp_plan, nccl_unique_id, nccl_version, TpComm and TpGemm to the module.
void register_tensor_parallel(nb::module_& m);

}  // namespace autogemm::python
