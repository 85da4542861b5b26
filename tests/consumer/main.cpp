// Builds against an installed autogemm through find_package and plans one problem.
#include <autogemm/autogemm.hpp>
#include <cstdio>

int main() {
  autogemm::GemmProblem p;
  p.m = 4096; p.n = 4096; p.k = 4096;
  auto plan = autogemm::plan_gemm(p, autogemm::device_preset("h100-sxm"));
  std::printf("autogemm %s: %s\n", autogemm::version().c_str(),
              plan.best().config.describe().c_str());
  return plan.candidates.empty() ? 1 : 0;
}
