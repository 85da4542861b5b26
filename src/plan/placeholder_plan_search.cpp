// TEMPORARY: lets the tree link while src/plan is written. Delete each function as it is implemented.
#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "plan/tma_rules.hpp"
#include "plan/wgmma_rules.hpp"
namespace autogemm {
Plan plan_gemm(const GemmProblem&, const GpuInfo&) { throw Error("not yet"); }
Prediction predict(const GemmProblem&, const GemmConfig&, const GpuInfo&) { throw Error("not yet"); }
std::string legality_violation(const GemmProblem&, const GemmConfig&, const GpuInfo&) { throw Error("not yet"); }
int gemm_smem_bytes(const GemmProblem&, const GemmConfig&) { throw Error("not yet"); }
}  // namespace autogemm
