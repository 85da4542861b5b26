#include "runtime/ladder.hpp"

namespace autogemm::runtime {

std::vector<LadderStep> ladder_steps() {
  std::vector<LadderStep> steps;
  // Step 1: the simplest correct kernel of the family.
  GemmConfig c;
  c.block_m = 64;
  c.block_n = 128;
  c.block_k = 64;
  c.num_stages = 1;
  c.num_consumers = 1;
  c.warp_specialized = false;
  c.persistent = true;
  c.max_ctas = 1;
  c.raster_group = 1;
  c.load_path = LoadPath::threads;
  c.store_path = StorePath::threads;
  steps.push_back({1, "single tile", "one CTA computes one m64 x 128 tile at a time with plain loads", c});

  c.block_m = 128;
  steps.push_back({2, "K loop, 128x128 tile",
                   "each k-block feeds two m64 slabs from one B tile (2x the reuse)", c});

  c.max_ctas = 0;
  c.persistent = false;
  steps.push_back({3, "many CTAs", "one CTA per output tile across all SMs", c});

  c.load_path = LoadPath::tma;
  c.store_path = StorePath::tma;
  steps.push_back({4, "TMA load and store",
                   "tiles move by the copy engine into 128B-swizzled smem; D leaves by TMA", c});

  c.num_stages = 4;
  steps.push_back({5, "software pipeline", "4 smem stages: loads run ahead of the wgmmas", c});

  c.persistent = true;
  c.raster_group = 8;
  steps.push_back({6, "persistent + tile scheduler",
                   "one CTA per SM walks tiles in grouped (L2-friendly) order", c});

  c.warp_specialized = true;
  steps.push_back({7, "warp specialisation",
                   "a producer warpgroup issues TMA; setmaxnreg moves registers to the consumer", c});

  c.num_stages = 6;
  steps.push_back({8, "deeper pipeline", "6 stages: as many as shared memory allows", c});

  c.cluster_m = 2;
  c.multicast = Multicast::b;
  steps.push_back({9, "cluster + multicast",
                   "2 CTAs along M share each B tile through TMA multicast", c});

  c.block_n = 256;
  c.num_consumers = 2;
  c.num_stages = 3;
  steps.push_back({10, "two consumers",
                   "128 x 256 tile, two consumer warpgroups share every B stage", c});
  return steps;
}

}  // namespace autogemm::runtime
