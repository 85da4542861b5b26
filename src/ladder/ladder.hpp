#pragma once
// The technique ladder: ten configurations of the one sm90 kernel family, from one CTA with
// plain loads to the two-consumer clustered persistent kernel. `autogemm ladder` runs each.
#include <string>
#include <vector>

#include "autogemm/config.hpp"

namespace autogemm::runtime {

struct LadderStep {
  int number;
  std::string name;        // "TMA load and store"
  std::string technique;   // what this step adds, one line
  GemmConfig config;
};

std::vector<LadderStep> ladder_steps();

}  // namespace autogemm::runtime
