#pragma once
// The scheduler's decisions (multi_gpu.hpp: assign_gemms, run_gemm_schedule), as pure
// functions of predicted and measured times, so they are tested without a GPU.
#include <cstddef>
#include <optional>
#include <vector>

#include "autogemm/multi_gpu.hpp"

namespace autogemm::multi {

// What the dispatcher knows about one GPU while the schedule runs.
struct DeviceOutlook {
  std::vector<double> queued_us;  // predicted times of its GEMMs not yet launched, in run order
  double in_flight_us = 0;        // predicted times of its launched, unfinished GEMMs
  double speed = 1;               // measured / predicted over its finished GEMMs (1 before any)
};

// When it would be done if nothing moved: speed x (in flight + queued).
double projected_finish_us(const DeviceOutlook& outlook);

struct Migration {
  int from = -1;             // the GPU that gives it up
  std::size_t position = 0;  // its place in that GPU's queue (the last: what it would run last)
};

// GPU `idle` has run out of queued work: take the last queued GEMM of the GPU projected to
// finish last, if running it on `idle` (after what `idle` still has, at `idle`'s speed) ends
// before that GPU's projected finish. Otherwise nothing: moving it would not end sooner.
std::optional<Migration> choose_migration(const std::vector<DeviceOutlook>& outlooks, int idle);

}  // namespace autogemm::multi
