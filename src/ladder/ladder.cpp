#include "ladder/ladder.hpp"

#include <fmt/format.h>

#include "plan/kernel_spec.hpp"

namespace autogemm::ladder {

std::vector<LadderStep> ladder_steps() {
  std::vector<LadderStep> steps;
  // Step 1: the simplest correct kernel of the family.
  GemmConfig c;
  c.block_m = 64;
  c.block_n = 128;
  c.block_k = 64;
  c.num_stages = 1;
  c.num_consumers = 1;
  c.persistent = true;
  c.raster_group = 1;
  LadderSwitches s;
  s.warp_specialized = false;
  s.max_ctas = 1;
  s.load_path = LoadPath::threads;
  s.store_path = StorePath::threads;
  steps.push_back({1, "single tile", "one CTA computes one m64 x 128 tile at a time with plain loads",
                   c, s});

  c.block_m = 128;
  steps.push_back({2, "K loop, 128x128 tile",
                   "each k-block feeds two m64 slabs from one B tile (2x the reuse)", c, s});

  s.max_ctas = 0;
  c.persistent = false;
  steps.push_back({3, "many CTAs", "one CTA per output tile across all SMs", c, s});

  s.load_path = LoadPath::tma;
  s.store_path = StorePath::tma;
  steps.push_back({4, "TMA load and store",
                   "tiles move by the copy engine into 128B-swizzled smem; D leaves by TMA", c, s});

  c.num_stages = 4;
  steps.push_back({5, "software pipeline", "4 smem stages: loads run ahead of the wgmmas", c, s});

  c.persistent = true;
  c.raster_group = 8;
  steps.push_back({6, "persistent + tile scheduler",
                   "one CTA per SM walks tiles in grouped (L2-friendly) order", c, s});

  s.warp_specialized = true;
  steps.push_back({7, "warp specialisation",
                   "a producer warpgroup issues TMA; setmaxnreg moves registers to the consumer",
                   c, s});

  c.num_stages = 6;
  steps.push_back({8, "deeper pipeline", "6 stages: as many as shared memory allows", c, s});

  c.cluster_m = 2;
  c.multicast = Multicast::b;
  steps.push_back({9, "cluster + multicast",
                   "2 CTAs along M share each B tile through TMA multicast", c, s});

  c.block_n = 256;
  c.num_consumers = 2;
  c.num_stages = 3;
  steps.push_back({10, "two consumers",
                   "128 x 256 tile, two consumer warpgroups share every B stage", c, s});
  return steps;
}

KernelSpec step_spec(const GemmProblem& problem, const LadderStep& step, const GpuInfo& device) {
  return plan::make_spec(problem, step.config, device,
                         fmt::format("ladder step {}: {}", step.number, step.name), step.switches);
}

std::string describe(const LadderStep& step, const KernelSpec& spec) {
  std::string text = spec.kernels.front().text;
  if (step.switches.max_ctas > 0) text += fmt::format(" ctas{}", step.switches.max_ctas);
  return text;
}

}  // namespace autogemm::ladder
