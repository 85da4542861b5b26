// run_gemm_schedule (multi_gpu.hpp): many independent GEMMs over the GPUs of this process, one
// stream per GPU. The host keeps a few GEMMs enqueued per GPU (ScheduleOptions::in_flight) and
// the rest in per-GPU queues, polls CUDA events for completions, and when a GPU's queue runs
// dry moves the last queued GEMM of the GPU projected to finish last (scheduler.hpp), projected
// from predicted times corrected by each GPU's measured/predicted ratio so far.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <chrono>
#include <deque>
#include <map>
#include <thread>
#include <tuple>

#include "autogemm/errors.hpp"
#include "autogemm/multi_gpu.hpp"
#include "autogemm/plan.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/current_device_guard.hpp"
#include "multi/device_list.hpp"
#include "multi/scheduler.hpp"
#include "multi/split_checks.hpp"

namespace autogemm {

namespace {

// How long the dispatcher sleeps when nothing completed and nothing could be launched: short
// next to the shortest GEMMs (decode rows run 5-30 us), long enough not to spin a core.
constexpr auto kPollInterval = std::chrono::microseconds(10);

void check_operands(const std::vector<ScheduledGemm>& gemms, const std::vector<int>& devices) {
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const ScheduledGemm& g = gemms[i];
    validate(g.problem);
    if (g.operands.size() != devices.size())
      throw InvalidArgument(fmt::format("gemms[{}].operands", i), fmt::format("{} entries", g.operands.size()),
                            fmt::format("one per device ({}): a GEMM may run on any of them",
                                        devices.size()));
    for (std::size_t d = 0; d < devices.size(); ++d) {
      const GemmOperands& o = g.operands[d];
      auto check = [&](const char* name, const void* pointer, bool needed) {
        if (!needed) return;
        const std::string argument = fmt::format("gemms[{}].operands[{}].{}", i, d, name);
        if (pointer == nullptr)
          throw InvalidArgument(argument, "null", fmt::format("device {} needs it", devices[d]));
        if (const std::string why = multi::pointer_device_violation(pointer, devices[d]); !why.empty())
          throw InvalidArgument(argument, fmt::format("{}", pointer), why);
      };
      const bool fp8 = g.problem.scaling != Scaling::none;
      check("a", o.a, true);
      check("b", o.b, true);
      check("d", o.d, true);
      check("c", o.c, o.beta != 0.0f);
      check("scale_a", o.scale_a, fp8);
      check("scale_b", o.scale_b, fp8);
    }
  }
}

// Each GEMM's predicted time on the first device (the caller's, or the planner's).
std::vector<double> predicted_times(const std::vector<ScheduledGemm>& gemms, int device) {
  const GpuProfile profile = profile_gpus();
  const GpuInfo& gpu = profile.gpus.at(std::size_t(device));
  std::map<std::tuple<int64_t, int64_t, int64_t, DType, DType, Layout>, double> planned;
  std::vector<double> out;
  for (const ScheduledGemm& g : gemms) {
    if (g.predicted_us > 0) {
      out.push_back(g.predicted_us);
      continue;
    }
    const GemmProblem& p = g.problem;
    const auto key = std::make_tuple(p.m, p.n, p.k, p.a_type, p.d_type, p.layout);
    auto it = planned.find(key);
    if (it == planned.end())
      it = planned.emplace(key, plan_gemm(p, gpu).best().prediction.time_us).first;
    out.push_back(it->second);
  }
  return out;
}

struct Launched {
  std::size_t gemm = 0;
  cudaEvent_t start = nullptr, end = nullptr;
};

// Streams and events, destroyed however the run ends.
struct Resources {
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> events;
  ~Resources() {
    for (cudaEvent_t e : events) (void)cudaEventDestroy(e);
    for (cudaStream_t s : streams) (void)cudaStreamDestroy(s);
  }
  cudaEvent_t event() {
    cudaEvent_t e = nullptr;
    cuda_check(cudaEventCreate(&e), "cudaEventCreate(schedule)");
    events.push_back(e);
    return e;
  }
};

double elapsed_us(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime(schedule)");
  return double(ms) * 1000.0;
}

class Dispatcher {
 public:
  Dispatcher(const std::vector<ScheduledGemm>& gemms, const ScheduleOptions& options,
             const std::vector<double>& predicted, const GemmAssignment& assignment)
      : gemms_(gemms), options_(options), predicted_(predicted), g_(options.devices.size()) {
    queues_.resize(g_);
    for (std::size_t d = 0; d < g_; ++d)
      for (int i : assignment.queues[d]) queues_[d].push_back(std::size_t(i));
    in_flight_.resize(g_);
    measured_sum_.assign(g_, 0.0);
    predicted_sum_.assign(g_, 0.0);
    last_end_.assign(g_, nullptr);
    runs_.resize(gemms.size());
    for (std::size_t d = 0; d < g_; ++d)
      for (int i : assignment.queues[d]) runs_[std::size_t(i)].gpu = int(d);
    migrate_ = options.migrate.value_or(options.strategy != ScheduleStrategy::round_robin);
  }

  ScheduleResult run() {
    for (std::size_t d = 0; d < g_; ++d) {
      set_device(d);
      cudaStream_t s = nullptr;
      cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate(schedule)");
      resources_.streams.push_back(s);
      start_.push_back(resources_.event());
      cuda_check(cudaEventRecord(start_.back(), s), "cudaEventRecord(schedule start)");
    }
    std::size_t finished = 0;
    while (finished < gemms_.size()) {
      bool progress = false;
      for (std::size_t d = 0; d < g_; ++d) finished += collect(d, &progress);
      for (std::size_t d = 0; d < g_; ++d) feed(d, &progress);
      if (!progress) std::this_thread::sleep_for(kPollInterval);
    }
    ScheduleResult result;
    result.runs = runs_;
    result.busy_us = measured_sum_;
    for (std::size_t d = 0; d < g_; ++d) {
      set_device(d);
      result.span_us.push_back(last_end_[d] ? elapsed_us(start_[d], last_end_[d]) : 0.0);
      result.makespan_us = std::max(result.makespan_us, result.span_us.back());
    }
    result.migrations = migrations_;
    return result;
  }

 private:
  void set_device(std::size_t d) const {
    cuda_check(cudaSetDevice(options_.devices[d]), "cudaSetDevice(schedule)");
  }

  // Finished GEMMs of GPU d, in stream order.
  std::size_t collect(std::size_t d, bool* progress) {
    std::size_t done = 0;
    while (!in_flight_[d].empty()) {
      const Launched& l = in_flight_[d].front();
      const cudaError_t state = cudaEventQuery(l.end);
      if (state == cudaErrorNotReady) break;
      cuda_check(state, "cudaEventQuery(schedule)");
      set_device(d);
      ScheduledRun& run = runs_[l.gemm];
      run.measured_us = elapsed_us(l.start, l.end);
      measured_sum_[d] += run.measured_us;
      predicted_sum_[d] += run.predicted_us;
      last_end_[d] = l.end;
      in_flight_[d].pop_front();
      ++done;
      *progress = true;
    }
    return done;
  }

  multi::DeviceOutlook outlook(std::size_t d) const {
    multi::DeviceOutlook o;
    for (std::size_t i : queues_[d]) o.queued_us.push_back(predicted_[i]);
    for (const Launched& l : in_flight_[d]) o.in_flight_us += predicted_[l.gemm];
    if (predicted_sum_[d] > 0) o.speed = measured_sum_[d] / predicted_sum_[d];
    return o;
  }

  // Keeps GPU d's stream `in_flight` GEMMs ahead: from its queue, else migrated from another.
  void feed(std::size_t d, bool* progress) {
    while (in_flight_[d].size() < std::size_t(std::max(1, options_.in_flight))) {
      if (!queues_[d].empty()) {
        const std::size_t gemm = queues_[d].front();
        queues_[d].pop_front();
        launch(d, gemm);
      } else if (migrate_) {
        std::vector<multi::DeviceOutlook> outlooks;
        for (std::size_t e = 0; e < g_; ++e) outlooks.push_back(outlook(e));
        const auto move = multi::choose_migration(outlooks, int(d));
        if (!move) return;
        auto& donor = queues_[std::size_t(move->from)];
        const std::size_t gemm = donor[move->position];
        donor.erase(donor.begin() + std::ptrdiff_t(move->position));
        runs_[gemm].migrated = true;
        ++migrations_;
        launch(d, gemm);
      } else {
        return;
      }
      *progress = true;
    }
  }

  void launch(std::size_t d, std::size_t index) {
    set_device(d);
    Launched l{index, resources_.event(), resources_.event()};
    ScheduledRun& run = runs_[index];
    run.gpu = int(d);
    run.predicted_us = predicted_[index];
    GemmOptions options;
    options.device = options_.devices[d];
    cuda_check(cudaEventRecord(l.start, resources_.streams[d]), "cudaEventRecord(gemm start)");
    const ScheduledGemm& g = gemms_[index];
    run.report = gemm(g.problem, g.operands[d], resources_.streams[d], options);
    cuda_check(cudaEventRecord(l.end, resources_.streams[d]), "cudaEventRecord(gemm end)");
    in_flight_[d].push_back(l);
  }

  const std::vector<ScheduledGemm>& gemms_;
  const ScheduleOptions& options_;
  const std::vector<double>& predicted_;
  const std::size_t g_;
  bool migrate_ = false;
  int migrations_ = 0;
  Resources resources_;
  std::vector<cudaEvent_t> start_, last_end_;
  std::vector<std::deque<std::size_t>> queues_;
  std::vector<std::deque<Launched>> in_flight_;
  std::vector<double> measured_sum_, predicted_sum_;
  std::vector<ScheduledRun> runs_;
};

}  // namespace

ScheduleResult run_gemm_schedule(const std::vector<ScheduledGemm>& gemms,
                                 const ScheduleOptions& options) {
  multi::check_device_list("options.devices", options.devices);
  if (options.in_flight < 1)
    throw InvalidArgument("options.in_flight", std::to_string(options.in_flight),
                          "at least one GEMM is enqueued per GPU");
  check_operands(gemms, options.devices);
  CurrentDeviceGuard restore;
  const std::vector<double> predicted = predicted_times(gemms, options.devices.front());
  std::vector<int> priorities;
  for (const ScheduledGemm& g : gemms) priorities.push_back(g.priority);
  const GemmAssignment assignment =
      assign_gemms(predicted, priorities, int(options.devices.size()), options.strategy);
  ScheduleResult result = Dispatcher(gemms, options, predicted, assignment).run();
  result.assignment = assignment;
  return result;
}

}  // namespace autogemm
