// run_gemm_schedule (multi_gpu.hpp): many independent GEMMs over the GPUs of this process.
//
// Each GPU has a host thread of its own (kept for the process, so gemm()'s per-thread caches of
// kernels and tensor maps stay warm between calls) and one stream. The thread enqueues its
// whole planned share up front, then keeps its stream kRefillLeadUs of work ahead by taking
// from the shared pool of short GEMMs: it blocks in cudaEventSynchronize on the GEMM after
// whose end that much work remains (no sleep polling), and takes its own pooled GEMMs first,
// then (migration) the last pooled GEMM of the GPU projected to finish last. On 4 H200s the
// one-thread dispatcher it replaces left each GPU idle 547-708 us of a 2-2.7 ms run (issue 53):
// at most two GEMMs ahead, sleep_for(10 us) polls costing ~60 us, two events created a launch.
// Timing events come from a per-device pool made once per process.
//
// Before the run each worker resolves the launches of every GEMM that may run on its GPU (its
// share and the whole pool, which may migrate to it): the plan, the spec, the loaded kernel,
// its parameters and tensor maps (runtime::plan_call, runtime::resolve_launch: what gemm()
// computes per call), so dispatching one in the run is the launch and one or two event records
// (feed: a GEMM the GPU reaches without idling starts at its predecessor's end event). The
// same 64-GEMM run measured 23 us of host time per GEMM through gemm() (target <= 10). GEMMs
// whose call allocates or copies per call (cuBLASLt, operands staged from another GPU or the
// host, padded rows, re-laid FP8 scales) still go through gemm().
//
// The start gate (multi/start_gate.hpp): each stream first waits on a word of pinned, mapped
// host memory, then records its start event; the threads enqueue the resolved head of their
// shares behind it and the last to arrive opens it with one store. Without it the main thread
// recorded every start before the threads woke, and their wake-up and first enqueues counted as
// idle (5.8-8.6% per GPU on that run).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "autogemm/errors.hpp"
#include "autogemm/multi_gpu.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/quantize.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/current_device_guard.hpp"
#include "cuda/driver.hpp"
#include "multi/device_list.hpp"
#include "multi/scheduler.hpp"
#include "multi/split_checks.hpp"
#include "multi/start_gate.hpp"
#include "runtime/call_spec.hpp"
#include "runtime/launch.hpp"

namespace autogemm {

namespace {

// ---- process-wide resources: a thread, a stream and timing events per device -----------------

class DeviceWorker {
 public:
  explicit DeviceWorker(int device) : device_(device), thread_([this] { loop(); }) {}
  ~DeviceWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  std::future<void> submit(std::function<void()> job) {
    std::packaged_task<void()> task(std::move(job));
    std::future<void> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(task));
    }
    wake_.notify_one();
    return done;
  }
  // The worker's stream on its device (created on its first job).
  cudaStream_t stream() {
    if (!stream_) {
      cuda_check(cudaSetDevice(device_), "cudaSetDevice(schedule worker)");
      cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate(schedule)");
    }
    return stream_;
  }
  // `count` timing events of this device, reused from earlier runs where there are enough.
  std::vector<cudaEvent_t> events(std::size_t count) {
    while (events_.size() < count) {
      cudaEvent_t e = nullptr;
      cuda_check(cudaEventCreate(&e), "cudaEventCreate(schedule)");
      events_.push_back(e);
    }
    return {events_.begin(), events_.begin() + std::ptrdiff_t(count)};
  }

 private:
  void loop() {
    for (;;) {
      std::packaged_task<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (stop_ && jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }
  int device_;
  cudaStream_t stream_ = nullptr;          // kept for the process (split-K keeps a workspace
  std::vector<cudaEvent_t> events_;        // per stream); both released with the process
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

DeviceWorker& worker(int device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<DeviceWorker>> workers;
  std::lock_guard<std::mutex> lock(mutex);
  auto& w = workers[device];
  if (!w) w = std::make_unique<DeviceWorker>(device);
  return *w;
}

// ---- checks -------------------------------------------------------------------------------

// Empty when `pointer` is host memory (pinned or not), else why not.
std::string host_pointer_violation(const void* pointer) {
  cudaPointerAttributes attributes{};
  const cudaError_t e = cudaPointerGetAttributes(&attributes, pointer);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return {};  // not known to CUDA: pageable host memory
  }
  if (attributes.type == cudaMemoryTypeDevice)
    return fmt::format("is memory of device {}, not of the host", attributes.device);
  return {};
}

void check_operands(const std::vector<ScheduledGemm>& gemms, const std::vector<int>& devices) {
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const ScheduledGemm& g = gemms[i];
    validate(g.problem);
    // The schedule's operands have no epilogue vectors (ScheduledGemm's per-GPU copies).
    if (!g.problem.epilogue.empty())
      throw InvalidArgument(fmt::format("gemms[{}].problem.epilogue", i),
                            g.problem.epilogue.describe(),
                            "the scheduler runs plain GEMMs: no fused epilogue");
    if (g.problem.scaling == Scaling::rowwise ||
        g.problem.scaling == Scaling::block_1x128_1x128)
      throw InvalidArgument(fmt::format("gemms[{}].problem.scaling", i),
                            std::string(to_string(g.problem.scaling)),
                            "the scheduler takes per_tensor or block_1x128_128x128 FP8 scales");
    if (g.problem.weight_format)
      throw InvalidArgument(fmt::format("gemms[{}].problem.weight_format", i),
                            std::string(to_string(*g.problem.weight_format)),
                            "the scheduler moves B as b_type rows (its operands carry no packed "
                            "weight scales): run weight-only GEMMs with gemm()");
    if (g.problem.d_type == DType::e4m3)
      throw InvalidArgument(fmt::format("gemms[{}].problem.d_type", i), "e4m3",
                            "the scheduler's GEMMs write bf16, fp16 or fp32 (its operands carry "
                            "no FP8 output scales)");
    const OperandPlacement& at = g.placement;
    if (at.home == OperandHome::device && (at.device < 0 || at.device >= int(devices.size())))
      throw InvalidArgument(fmt::format("gemms[{}].placement.device", i), std::to_string(at.device),
                            fmt::format("an index into options.devices ({} devices)", devices.size()));
    const std::size_t wanted = at.home == OperandHome::replicated ? devices.size() : 1;
    if (g.operands.size() != wanted)
      throw InvalidArgument(
          fmt::format("gemms[{}].operands", i), fmt::format("{} entries", g.operands.size()),
          at.home == OperandHome::replicated
              ? fmt::format("one per device ({}): a replicated GEMM may run on any of them",
                            devices.size())
              : fmt::format("one: where the operands live ({})", to_string(at.home)));
    for (std::size_t d = 0; d < wanted; ++d) {
      const GemmOperands& o = g.operands[d];
      const int device = at.home == OperandHome::replicated ? devices[d]
                         : at.home == OperandHome::device  ? devices[std::size_t(at.device)]
                                                           : -1;
      auto check = [&](const char* name, const void* pointer, bool needed) {
        if (!needed) return;
        const std::string argument = fmt::format("gemms[{}].operands[{}].{}", i, d, name);
        if (pointer == nullptr)
          throw InvalidArgument(argument, "null",
                                device < 0 ? std::string("the GEMM needs it")
                                           : fmt::format("device {} needs it", device));
        const std::string why = device < 0 ? host_pointer_violation(pointer)
                                           : multi::pointer_device_violation(pointer, device);
        if (!why.empty()) throw InvalidArgument(argument, fmt::format("{}", pointer), why);
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

// ---- what the plan needs: times and bytes ------------------------------------------------------

struct Planned {
  double time_us = 0;
  multi::GemmBytes bytes;
};

// Each distinct problem planned once per process and device (plan_gemm: ~ms each).
const Planned& planned(const GemmProblem& p, int device) {
  using Key = std::tuple<int, int64_t, int64_t, int64_t, DType, DType, DType, Layout, int64_t,
                         int64_t, int64_t, int64_t, Scaling, bool>;
  static std::mutex mutex;
  static std::map<Key, Planned> cache;
  const Key key{device, p.m,      p.n,      p.k,      p.a_type,  p.b_type, p.d_type,
                p.layout, p.lda, p.ldb, p.ldc, p.ldd, p.scaling, p.reads_c};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  static const GpuProfile profile = profile_gpus();
  const Plan plan = plan_gemm(p, profile.gpus.at(std::size_t(device)));
  Planned out{plan.best().prediction.time_us, multi::gemm_bytes(p, plan.spec)};
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(key, out).first->second;
}

std::vector<GemmDemand> demands(const std::vector<ScheduledGemm>& gemms, int device) {
  std::vector<GemmDemand> out;
  out.reserve(gemms.size());
  for (const ScheduledGemm& g : gemms) {
    const Planned& p = planned(g.problem, device);
    GemmDemand d;
    d.time_us = g.measured_us > 0 ? g.measured_us : g.predicted_us > 0 ? g.predicted_us : p.time_us;
    d.priority = g.priority;
    d.placement = g.placement;
    d.input_bytes = p.bytes.input;
    d.output_bytes = p.bytes.output;
    d.workspace_bytes = p.bytes.workspace;
    out.push_back(d);
  }
  return out;
}

// The links, measured once per process and device list (a few hundred ms), when some GEMM's
// operands must travel.
Topology schedule_topology(const std::vector<ScheduledGemm>& gemms, const ScheduleOptions& o) {
  if (o.topology) return *o.topology;
  const int g = int(o.devices.size());
  bool travels = false;
  for (const ScheduledGemm& s : gemms) travels = travels || s.placement.home != OperandHome::replicated;
  if (!travels) return topology_preset("nvlink", g);   // nothing is copied: never priced
  static std::mutex mutex;
  static std::map<std::vector<int>, Topology> measured;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = measured.find(o.devices);
  if (it == measured.end()) it = measured.emplace(o.devices, measure_topology(o.devices)).first;
  return it->second;
}

// ---- the run ----------------------------------------------------------------------------------

double elapsed_us(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime(schedule)");
  return double(ms) * 1000.0;
}

// A GEMM's operands copied to the GPU it runs on (its operands live elsewhere), in stream-
// ordered memory freed after D is copied home.
struct Staged {
  GemmOperands operands;
  std::vector<void*> buffers;
  int64_t bytes = 0;
};

Staged stage_in(const ScheduledGemm& g, cudaStream_t stream) {
  const GemmOperands& home = g.operands.front();
  const GemmProblem& p = g.problem;
  Staged s;
  s.operands = home;
  auto copy = [&](const void* from, std::size_t n) -> void* {
    void* to = nullptr;
    cuda_check(cudaMallocAsync(&to, n, stream), "cudaMallocAsync(schedule copy)");
    s.buffers.push_back(to);
    if (from) cuda_check(cudaMemcpyAsync(to, from, n, cudaMemcpyDefault, stream), "cudaMemcpyAsync(schedule operand)");
    s.bytes += from ? int64_t(n) : 0;
    return to;
  };
  auto size = [&](char operand, DType t) {
    return bench::operand_elements(p, operand) * std::size_t(dtype_bytes(t));
  };
  s.operands.a = copy(home.a, size('A', p.a_type));
  s.operands.b = copy(home.b, size('B', p.b_type));
  if (home.beta != 0.0f) s.operands.c = copy(home.c, size('C', p.d_type));
  if (p.scaling == Scaling::per_tensor) {
    s.operands.scale_a = static_cast<const float*>(copy(home.scale_a, sizeof(float)));
    s.operands.scale_b = static_cast<const float*>(copy(home.scale_b, sizeof(float)));
  } else if (p.scaling == Scaling::block_1x128_128x128) {
    s.operands.scale_a = static_cast<const float*>(
        copy(home.scale_a, std::size_t(fp8_scale_count_1x128(p.stored_rows(), p.k)) * sizeof(float)));
    s.operands.scale_b = static_cast<const float*>(
        copy(home.scale_b, std::size_t(fp8_scale_count_128x128(p.n, p.k)) * sizeof(float)));
  }
  // D: C's values where C is D (beta != 0 reads them), else written whole by the GEMM.
  s.operands.d = home.c == home.d && home.beta != 0.0f ? const_cast<void*>(s.operands.c)
                                                       : copy(nullptr, size('D', p.d_type));
  return s;
}

void stage_out(const ScheduledGemm& g, Staged& s, cudaStream_t stream) {
  const std::size_t n = bench::operand_elements(g.problem, 'D') * std::size_t(dtype_bytes(g.problem.d_type));
  cuda_check(cudaMemcpyAsync(g.operands.front().d, s.operands.d, n, cudaMemcpyDefault, stream),
             "cudaMemcpyAsync(schedule D home)");
  s.bytes += int64_t(n);
  for (void* b : s.buffers) cuda_check(cudaFreeAsync(b, stream), "cudaFreeAsync(schedule copy)");
}

// ---- the start gate's word ---------------------------------------------------------------------

// One word of pinned host memory, portable (every device's context) and mapped (each device
// reads it through its own device pointer), made once per process; runs are serialised, and each
// opens the gate by storing the next value (a stream waits until the word is at least it, in
// cyclic order), so the word is never reset and outlives every stream that waits on it.
struct GateWord {
  uint32_t* host = nullptr;
  std::string failure;   // why there is none
};

const GateWord& gate_word() {
  static const GateWord word = [] {
    GateWord w;
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, sizeof(uint32_t), cudaHostAllocPortable | cudaHostAllocMapped);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      w.failure = cuda_error_text(e, "cudaHostAlloc(schedule start gate)");
      return w;
    }
    w.host = static_cast<uint32_t*>(p);
    std::atomic_ref<uint32_t>(*w.host).store(0);
    return w;
  }();
  return word;
}

// How long the caller waits for the threads to open the gate before opening it itself. Behind
// the gate they only launch resolved GEMMs (microseconds each); this is a backstop against a
// launch the driver blocks (a full queue) that would otherwise wait for the gate for ever.
constexpr std::chrono::seconds kGateBackstop{10};

// ---- the run -----------------------------------------------------------------------------------

class Run {
 public:
  Run(const std::vector<ScheduledGemm>& gemms, const ScheduleOptions& options,
      const std::vector<GemmDemand>& demand, const GemmAssignment& plan)
      : gemms_(gemms), options_(options), demand_(demand), plan_(plan), g_(options.devices.size()) {
    runs_.resize(gemms.size());
    pooled_.assign(gemms.size(), 0);
    for (int i : plan.pool) pooled_[std::size_t(i)] = 1;
    pools_.resize(g_);
    for (int i : plan.pool) pools_[std::size_t(plan.gpu[std::size_t(i)])].push_back(std::size_t(i));
    in_flight_us_.assign(g_, 0.0);
    speed_.assign(g_, 1.0);
    migrate_ = options.migrate.value_or(options.strategy != ScheduleStrategy::round_robin);
    resolved_.assign(g_, std::vector<std::optional<Resolved>>(gemms.size()));
    start_.assign(g_, nullptr);
  }

  ScheduleResult run() {
    std::vector<std::vector<cudaEvent_t>> events(g_);
    for (std::size_t d = 0; d < g_; ++d) {
      // Every GEMM may end up on any GPU (the pool): two events each, and the start.
      DeviceWorker& w = worker(options_.devices[d]);
      cuda_check(cudaSetDevice(options_.devices[d]), "cudaSetDevice(schedule)");
      events[d] = w.events(2 * (plan_.queues[d].size() + plan_.pool.size()) + 1);
      start_[d] = events[d].back();
      cuda_check(cudaStreamSynchronize(w.stream()), "cudaStreamSynchronize(schedule)");
    }
    ScheduleResult result;
    // Each GPU's launches resolved by its own thread, all GPUs at once; a failure here throws
    // before anything is enqueued.
    const auto resolve_start = std::chrono::steady_clock::now();
    wait_all(each_device([this](std::size_t d) { resolve(d); }));
    result.resolve_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - resolve_start).count();

    const multi::GateDecision gate = open_gate_plan();
    result.start_gated = gate.gated;
    result.start_gate_note = gate.note;
    std::optional<multi::StartGate> start_gate;
    if (gate.gated) {
      start_gate.emplace(g_, gate_word().host, gate_value_);
      gate_ = &*start_gate;
    } else {
      // Today's start, on every GPU at once as near as the host can: the feeding threads'
      // start-up counts as idle time.
      for (std::size_t d = 0; d < g_; ++d) {
        cuda_check(cudaSetDevice(options_.devices[d]), "cudaSetDevice(schedule)");
        cuda_check(cudaEventRecord(start_[d], worker(options_.devices[d]).stream()),
                   "cudaEventRecord(schedule start)");
      }
    }
    // A thread that never started never arrives: on a failed submission the gate is opened
    // for those that did.
    std::vector<std::future<void>> done =
        each_device([this, &events](std::size_t d) { feed(d, events[d]); }, [this] {
          if (gate_) gate_->open();
        });
    if (gate_ && !gate_->wait_open_for(kGateBackstop)) {
      gate_->open();
      result.start_gate_note = fmt::format(
          "opened by the caller after {} s: {} of {} threads had enqueued their first GEMMs",
          kGateBackstop.count(), gate_->arrived(), g_);
    }
    wait_all(std::move(done));
    gate_ = nullptr;

    std::vector<std::vector<std::pair<double, double>>> intervals(g_);
    double host_us = 0;
    for (std::size_t d = 0; d < g_; ++d) {
      cuda_check(cudaSetDevice(options_.devices[d]), "cudaSetDevice(schedule)");
      for (const Launched& l : launched_[d]) {
        ScheduledRun& r = runs_[l.gemm];
        r.start_us = elapsed_us(start_[d], l.start);
        r.end_us = elapsed_us(start_[d], l.end);
        r.measured_us = r.end_us - r.start_us;
        intervals[d].emplace_back(r.start_us, r.end_us);
        result.makespan_us = std::max(result.makespan_us, r.end_us);
        // Every enqueue counts, the ones behind the start gate too: those no longer show as the
        // GPUs' idle time, and the 23 us per GEMM measured before the gate was the mean over
        // every enqueue, so the figure stays comparable.
        host_us += r.host_us;
      }
    }
    double busy = 0, longest = 0;
    for (std::size_t d = 0; d < g_; ++d) {
      GpuActivity a = multi::gpu_activity(intervals[d], 0);
      busy += a.busy_us;
      result.gpus.push_back(std::move(a));
    }
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const ScheduledRun& r = runs_[i];
      GpuActivity& a = result.gpus[std::size_t(r.gpu)];
      a.migrated_in += r.migrated ? 1 : 0;
      a.bytes_moved += r.bytes_moved;
      result.migrations += r.migrated ? 1 : 0;
      longest = std::max(longest, r.measured_us);
    }
    for (GpuActivity& a : result.gpus) a.idle_us = std::max(0.0, result.makespan_us - a.busy_us);
    result.ideal_us = busy / double(g_);
    result.bound_us = std::max(result.ideal_us, longest);
    result.host_us_per_gemm = runs_.empty() ? 0 : host_us / double(runs_.size());
    result.runs = std::move(runs_);
    return result;
  }

 private:
  struct Launched {
    std::size_t gemm = 0;
    cudaEvent_t start = nullptr, end = nullptr;
  };
  // A GEMM's launch on one GPU, resolved before the run.
  struct Resolved {
    runtime::ResolvedLaunch launch;
    GemmReport report;        // what gemm() would report for it
  };

  // `job(d)` on every GPU's thread; the futures in device order. Jobs already submitted when a
  // submission fails are waited for before the failure is rethrown (they use this Run), after
  // `unblock` (which lets them finish: the start gate opened).
  std::vector<std::future<void>> each_device(const std::function<void(std::size_t)>& job,
                                             const std::function<void()>& unblock = {}) {
    std::vector<std::future<void>> done;
    try {
      for (std::size_t d = 0; d < g_; ++d)
        done.push_back(worker(options_.devices[d]).submit([job, d] { job(d); }));
    } catch (...) {
      if (unblock) unblock();
      for (auto& f : done) f.wait();
      throw;
    }
    return done;
  }

  // Waits for every job; rethrows the first failure.
  static void wait_all(std::vector<std::future<void>> done) {
    std::exception_ptr failure;
    for (auto& f : done) {
      try {
        f.get();
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
  }

  const GemmOperands& operands_on(std::size_t i, std::size_t d) const {
    const ScheduledGemm& g = gemms_[i];
    return g.placement.home == OperandHome::replicated ? g.operands[d] : g.operands.front();
  }

  // GPU d's thread, before the run: the launches of its share and of the whole pool on its GPU,
  // where they can be resolved ahead (else the GEMM goes through gemm() in the run).
  void resolve(std::size_t d) {
    cuda_check(cudaSetDevice(options_.devices[d]), "cudaSetDevice(schedule)");
    cudaStream_t stream = worker(options_.devices[d]).stream();
    auto one = [&](std::size_t i) {
      // Operands that live elsewhere are staged per call (stage_in): today's path.
      if (multi::copy_bytes(demand_[i], int(d)) > 0) return;
      const GemmOperands& o = operands_on(i, d);
      GemmOptions options;
      options.device = options_.devices[d];
      // The spec gemm() would launch (the same plan, so the same result bitwise); where gemm()
      // would call cuBLASLt, or the call copies per call, it stays gemm()'s.
      const runtime::CallPlan call = runtime::plan_call(gemms_[i].problem, o, stream, options);
      if (!call.why_not_ours.empty() || !runtime::resolve_ahead_violation(*call.spec).empty()) return;
      Resolved r;
      // Split-K's workspace on this stream grown now to the largest need, not in the run.
      r.launch = runtime::resolve_launch(*call.spec, o, stream);
      r.report.config = call.spec->config;
      r.report.reason = call.spec->reason;
      resolved_[d][i] = std::move(r);
    };
    for (int i : plan_.queues[d])
      if (!pooled_[std::size_t(i)]) one(std::size_t(i));
    for (int i : plan_.pool) one(std::size_t(i));
  }

  // Whether the streams can wait on the gate, and the value that opens it. Queried each run
  // (one attribute per device); the word is made once per process.
  multi::GateDecision open_gate_plan() {
    std::vector<multi::GateSupport> support;
    for (int device : options_.devices) {
      int maps = 0;
      cuda_check(cudaDeviceGetAttribute(&maps, cudaDevAttrCanMapHostMemory, device),
                 "cudaDeviceGetAttribute(CanMapHostMemory)");
      support.push_back({device, maps != 0});
    }
    multi::GateDecision decision = multi::decide_start_gate(options_.start_gate, support);
    if (!decision.gated) return decision;
    const GateWord& word = gate_word();
    if (word.host == nullptr) return {false, fmt::format("off: {}", word.failure)};
    gate_device_word_.assign(g_, 0);
    for (std::size_t d = 0; d < g_; ++d) {
      cuda_check(cudaSetDevice(options_.devices[d]), "cudaSetDevice(schedule)");
      void* mapped = nullptr;
      cuda_check(cudaHostGetDevicePointer(&mapped, word.host, 0), "cudaHostGetDevicePointer(schedule start gate)");
      gate_device_word_[d] = CUdeviceptr(mapped);
    }
    gate_value_ = std::atomic_ref<uint32_t>(*word.host).load() + 1;
    return decision;
  }

  // GPU d's thread: its share up front (the resolved head of it behind the start gate), then the
  // pool, kRefillLeadUs ahead of the GPU.
  void feed(std::size_t d, const std::vector<cudaEvent_t>& events) {
    // Arrives however this thread leaves, so a failure here still opens the gate.
    multi::GateArrival arrival(gate_);
    cuda_check(cudaSetDevice(options_.devices[d]), "cudaSetDevice(schedule)");
    cudaStream_t stream = worker(options_.devices[d]).stream();
    std::size_t next_event = 0;
    std::vector<Launched>& mine = launched_[d];
    mine.reserve(plan_.queues[d].size() + plan_.pool.size());
    bool behind_gate = false;   // the stream waits on the closed start gate
    auto launch = [&](std::size_t i, bool migrated) {
      const auto t0 = std::chrono::steady_clock::now();
      ScheduledRun& run = runs_[i];
      run.gpu = int(d);
      run.migrated = migrated;
      run.predicted_us = demand_[i].time_us;
      const std::optional<Resolved>& resolved = resolved_[d][i];
      // One event record a GEMM where the GPU cannot idle before it: its start is the end of
      // the GEMM before it on this stream, when that one cannot have ended before this launch
      // reaches the GPU: behind the closed gate, or while the GEMM two back has not ended (the
      // one between still has its whole run, >= 5 us on these lists, against a few us for a
      // launch to reach the GPU). An event record is a stream submission like the launch:
      // host time a GEMM on one H200 8.1 -> 7.1 us, on 2 H200s 10.3 -> 7.6 (64 list; issue
      // 53's target <= 10).
      bool chained = !mine.empty() && behind_gate;
      if (!mine.empty() && !behind_gate && mine.size() >= 2) {
        const cudaError_t two_back = cudaEventQuery(mine[mine.size() - 2].end);
        if (two_back != cudaErrorNotReady) cuda_check(two_back, "cudaEventQuery(gemm end)");
        chained = two_back == cudaErrorNotReady;
      }
      Launched l{i, nullptr, nullptr};
      l.start = chained ? mine.back().end : events[next_event++];
      l.end = events[next_event++];
      if (!chained) cuda_check(cudaEventRecord(l.start, stream), "cudaEventRecord(gemm start)");
      if (resolved) {
        runtime::enqueue(resolved->launch, stream);
      } else {
        const ScheduledGemm& g = gemms_[i];
        GemmOptions options;
        options.device = options_.devices[d];
        if (multi::copy_bytes(demand_[i], int(d)) > 0) {
          Staged s = stage_in(g, stream);
          run.report = gemm(g.problem, s.operands, stream, options);
          stage_out(g, s, stream);
          run.bytes_moved = s.bytes;
        } else {
          run.report = gemm(g.problem, operands_on(i, d), stream, options);
        }
      }
      cuda_check(cudaEventRecord(l.end, stream), "cudaEventRecord(gemm end)");
      run.host_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (resolved) {
        run.resolved = true;
        run.report = resolved->report;
      }
      mine.push_back(l);
    };
    std::vector<std::size_t> share;
    for (int i : plan_.queues[d])
      if (!pooled_[std::size_t(i)]) share.push_back(std::size_t(i));
    std::size_t gated = 0;
    if (gate_ != nullptr) {
      driver::check(driver::api().cuStreamWaitValue32(reinterpret_cast<CUstream>(stream), gate_device_word_[d],
                                                      gate_value_, CU_STREAM_WAIT_VALUE_GEQ),
                    "cuStreamWaitValue32(schedule start gate)");
      cuda_check(cudaEventRecord(start_[d], stream), "cudaEventRecord(schedule start)");
      std::vector<char> ahead(share.size());
      for (std::size_t k = 0; k < share.size(); ++k) ahead[k] = resolved_[d][share[k]].has_value();
      gated = multi::gated_prefix(ahead, multi::kGatedGemmsMax);
    }
    behind_gate = gated > 0;
    for (std::size_t k = 0; k < gated; ++k) launch(share[k], false);
    behind_gate = false;
    arrival.arrive_and_wait();
    std::size_t finished = 0;      // launches of `mine` known to have ended
    double measured = 0, predicted = 0;
    auto retire_through = [&](std::size_t last) {  // waits for mine[last]; counts what ended
      cuda_check(cudaEventSynchronize(mine[last].end), "cudaEventSynchronize(schedule)");
      for (std::size_t j = finished; j <= last; ++j) {
        measured += elapsed_us(mine[j].start, mine[j].end);
        predicted += demand_[mine[j].gemm].time_us;
      }
      finished = last + 1;
    };
    for (std::size_t k = gated; k < share.size(); ++k) {
      if (mine.size() - finished >= multi::kEnqueuedGemmsMax) retire_through(finished);
      launch(share[k], false);
    }

    for (;;) {
      std::vector<double> ahead;
      for (std::size_t j = finished; j < mine.size(); ++j) ahead.push_back(demand_[mine[j].gemm].time_us);
      if (const auto wait = multi::refill_wait_index(ahead, multi::kRefillLeadUs))
        retire_through(finished + *wait);
      std::optional<std::pair<std::size_t, bool>> take;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        double left = 0;
        for (std::size_t j = finished; j < mine.size(); ++j) left += demand_[mine[j].gemm].time_us;
        in_flight_us_[d] = left;
        if (predicted > 0) speed_[d] = measured / predicted;
        if (!pools_[d].empty()) {
          take = std::make_pair(pools_[d].front(), false);
          pools_[d].pop_front();
        } else if (migrate_) {
          std::vector<multi::DeviceOutlook> outlooks(g_);
          for (std::size_t e = 0; e < g_; ++e) {
            for (std::size_t i : pools_[e]) outlooks[e].queued_us.push_back(demand_[i].time_us);
            outlooks[e].in_flight_us = in_flight_us_[e];
            outlooks[e].speed = speed_[e];
          }
          if (const auto move = multi::choose_migration(outlooks, int(d))) {
            auto& donor = pools_[std::size_t(move->from)];
            take = std::make_pair(donor[move->position], true);
            donor.erase(donor.begin() + std::ptrdiff_t(move->position));
          }
        }
        if (take) in_flight_us_[d] += demand_[take->first].time_us;
      }
      if (!take) {
        // Nothing left for this GPU; once its pool is empty it only waits if another GPU's
        // pooled work could still end sooner here: re-check after its next GEMM ends.
        if (finished == mine.size() || !migrate_ || !any_pooled()) break;
        retire_through(finished);
        continue;
      }
      launch(take->first, take->second);
    }
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(schedule)");
  }

  bool any_pooled() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& p : pools_)
      if (!p.empty()) return true;
    return false;
  }

  const std::vector<ScheduledGemm>& gemms_;
  const ScheduleOptions& options_;
  const std::vector<GemmDemand>& demand_;
  const GemmAssignment& plan_;
  const std::size_t g_;
  bool migrate_ = false;
  std::vector<ScheduledRun> runs_;        // each written by the one thread that launches it
  std::vector<char> pooled_;
  std::vector<std::vector<Launched>> launched_ = std::vector<std::vector<Launched>>(g_);
  std::mutex mutex_;                      // guards the pools and the outlooks
  std::vector<std::deque<std::size_t>> pools_;   // [planned gpu], longest first
  std::vector<double> in_flight_us_, speed_;
  std::vector<std::vector<std::optional<Resolved>>> resolved_;   // [gpu][gemm], written before
                                                                 // the run by GPU gpu's thread
  std::vector<cudaEvent_t> start_;        // [gpu]: the run's start on its stream
  multi::StartGate* gate_ = nullptr;      // while the run starts; null: no gate
  std::vector<CUdeviceptr> gate_device_word_;   // [gpu]: the gate word as that GPU maps it
  uint32_t gate_value_ = 0;               // the value that opens this run's gate
};

}  // namespace

ScheduleResult run_gemm_schedule(const std::vector<ScheduledGemm>& gemms,
                                 const ScheduleOptions& options) {
  multi::check_device_list("options.devices", options.devices);
  const std::size_t g = options.devices.size();
  if (!options.memory_limit_bytes.empty() && options.memory_limit_bytes.size() != g)
    throw InvalidArgument("options.memory_limit_bytes", fmt::format("{} entries", options.memory_limit_bytes.size()),
                          fmt::format("none, or one per device ({})", g));
  check_operands(gemms, options.devices);
  CurrentDeviceGuard restore;
  PlacementLimits limits;
  limits.pool_share = options.pool_share;
  limits.topology = schedule_topology(gemms, options);
  limits.memory_bytes = options.memory_limit_bytes;
  if (limits.memory_bytes.empty())
    for (int device : options.devices) {
      cuda_check(cudaSetDevice(device), "cudaSetDevice(schedule)");
      std::size_t free_bytes = 0, total = 0;
      cuda_check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo(schedule)");
      limits.memory_bytes.push_back(int64_t(free_bytes));
    }
  const std::vector<GemmDemand> demand = demands(gemms, options.devices.front());
  // Refused here, naming the GEMM and its bytes, before anything runs.
  const GemmAssignment assignment = assign_gemms(demand, int(g), options.strategy, limits);
  // One run at a time: the runs share the worker threads and the start gate's word, and two
  // runs' threads waiting on each other's gates behind one worker would never start.
  static std::mutex one_run;
  std::lock_guard<std::mutex> serialised(one_run);
  ScheduleResult result = Run(gemms, options, demand, assignment).run();
  result.assignment = assignment;
  return result;
}

}  // namespace autogemm
