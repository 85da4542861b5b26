#pragma once
// The scheduler's decisions (multi_gpu.hpp: assign_gemms, run_gemm_schedule), as pure
// functions of predicted and measured times, bytes and links, so they are tested without a GPU.
#include <cstddef>
#include <optional>
#include <vector>

#include "autogemm/kernel_spec.hpp"
#include "autogemm/multi_gpu.hpp"

namespace autogemm::multi {

// A GEMM's bytes as the scheduler places them: its inputs (A, B, C when read, scales), D, and
// what a call of `spec` allocates on its GPU (split-K's workspace, copies of unaligned rows, A's
// scales re-laid; cuBLASLt's workspace for a vendor spec).
struct GemmBytes {
  int64_t input = 0, output = 0, workspace = 0;
};
GemmBytes gemm_bytes(const GemmProblem& problem, const KernelSpec& spec);

// Time to copy a GEMM's operands from where they live to GPU `gpu` and its D back (0 when
// they live there): bytes over the link's bandwidth plus its latency, each way.
double copy_time_us(const GemmDemand& gemm, int gpu, const Topology& topology);
// The bytes that copy moves (0 when they live there).
int64_t copy_bytes(const GemmDemand& gemm, int gpu);

// The GEMMs held back for the end, longest first: the shortest replicated GEMMs of the lowest
// priority present, taken shortest first while their sum stays within `share` of the total
// time. Any GPU can take them without a copy, and short ones even out the ends: the last one
// a GPU takes overshoots the others by at most its own time.
std::vector<int> pool_members(const std::vector<GemmDemand>& gemms, double share);

// What the dispatcher knows about one GPU while the schedule runs.
struct DeviceOutlook {
  std::vector<double> queued_us;  // times of its pooled GEMMs not yet taken, in run order
  double in_flight_us = 0;        // times of its enqueued, unfinished GEMMs
  double speed = 1;               // measured / predicted over its finished GEMMs (1 before any)
};

// When it would be done if nothing moved: speed x (in flight + queued).
double projected_finish_us(const DeviceOutlook& outlook);

struct Migration {
  int from = -1;             // the GPU that gives it up
  std::size_t position = 0;  // its place in that GPU's queue (the last: what it would run last)
};

// GPU `idle` has run out of its own work: take the last queued GEMM of the GPU projected to
// finish last, if running it on `idle` (after what `idle` still has, at `idle`'s speed) ends
// before that GPU's projected finish. Otherwise nothing: moving it would not end sooner.
std::optional<Migration> choose_migration(const std::vector<DeviceOutlook>& outlooks, int idle);

// How far ahead of its GPU a feeding thread keeps the stream before it takes more from the
// pool: the host's cost of a take and a launch (5-10 us) plus waking on an event (a few us),
// with room to spare. Taking later keeps the choice open longer (the pool evens out the ends).
inline constexpr double kRefillLeadUs = 40.0;

// At most this many of a GPU's GEMMs enqueued and unfinished: past it the feeding thread waits
// for the oldest to end before enqueuing the next. A launch and two event records are three
// entries of a stream's queue (about a thousand deep): an unbounded share (the 512-GEMM list
// on one H200 enqueued ~500) blocked the thread inside the driver until the GPU drained, which
// the report then counted as host time (79 us a GEMM against 8 for the 64-GEMM list).
inline constexpr std::size_t kEnqueuedGemmsMax = 128;

// Which enqueued GEMM to wait for before taking more: `ahead_us` holds the times of a stream's
// enqueued, unfinished GEMMs in stream order; the answer is the last one after whose end at
// least `lead_us` of work remains, or nullopt when less than that is queued (take now).
std::optional<std::size_t> refill_wait_index(const std::vector<double>& ahead_us, double lead_us);

// A GPU's activity from its GEMMs' (start, end) in stream order, times from the run's start,
// and the run's makespan.
GpuActivity gpu_activity(const std::vector<std::pair<double, double>>& intervals,
                         double makespan_us);

}  // namespace autogemm::multi
