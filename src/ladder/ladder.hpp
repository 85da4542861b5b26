#pragma once
// The technique ladder: ten configurations of the one sm90 kernel family, from one CTA with
// plain loads to the two-consumer clustered persistent kernel. `autogemm ladder` runs each.
// Its first steps switch off what every planned configuration has (the producer warpgroup,
// TMA, a grid over all SMs): those LadderSwitches are the ladder's alone.
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/kernel_spec.hpp"

namespace autogemm::ladder {

struct LadderStep {
  int number;
  std::string name;        // "TMA load and store"
  std::string technique;   // what this step adds, one line
  GemmConfig config;
  LadderSwitches switches;
};

std::vector<LadderStep> ladder_steps();

// The step's spec for `problem` on `device`, made by the planner's own function
// (plan::make_spec), so its rules apply to the ladder too.
KernelSpec step_spec(const GemmProblem& problem, const LadderStep& step, const GpuInfo& device);

// The step's configuration text: its kernel's, and the CTA cap ("... threads-store ctas1").
std::string describe(const LadderStep& step, const KernelSpec& spec);

}  // namespace autogemm::ladder
