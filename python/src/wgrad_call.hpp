#pragma once
// Grouped weight gradients (autogemm/wgrad.hpp grouped_weight_gradient) for autogemm.wgrad with
// group_ends: dW (groups, N, K) (+)= dY_g^T X_g over each group's run of tokens. wgrad_call.cpp.
#include "binding.hpp"

namespace autogemm::python {

// Adds grouped_wgrad(...) to the module.
void register_wgrad(nb::module_& m);

}  // namespace autogemm::python
