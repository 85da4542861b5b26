#pragma once
// Several GPUs (issue 26): the links between them, one large GEMM split over G GPUs with its
// communication on NCCL, and many independent GEMMs scheduled over the GPUs of this process.
//
//   Topology links = topology_preset("nvlink", 4);             // or measure_topology({0,1,2,3})
//   SplitPlan plan = plan_split(problem, device_preset("h200"), links);   // no GPU needed
//   MultiGpuComm comm = MultiGpuComm::local({0, 1, 2, 3});      // ncclCommInitAll
//   split_gemm(problem, per_device_operands, plan, comm);       // one GemmOperands per GPU
//
// A multi-process job (torch.distributed, MPI) gives each process's ncclComm_t to
// MultiGpuComm::wrap and calls split_gemm in every process with that rank's operands.
// Planning and scheduling decisions are plain functions that run without a GPU; what needs NCCL
// throws autogemm::Error when the library was built without it (nccl_version() says which).
#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

// NCCL's communicator: nccl.h has `typedef struct ncclComm* ncclComm_t;`. Declared here so that
// this header needs no nccl.h; pass an ncclComm_t where a `ncclComm*` is asked for.
struct ncclComm;

namespace autogemm {

// ---- links between GPUs ----------------------------------------------------------------------

enum class LinkKind { self, nvlink, pcie };
std::string_view to_string(LinkKind kind);

struct Link {
  LinkKind kind = LinkKind::pcie;
  double bandwidth_gbps = 0;    // one direction, 1e9 bytes/s, what one GPU can send to the other
  double latency_us = 0;        // one small (8-byte) transfer, start to end
  bool peer_access = false;     // cudaDeviceCanAccessPeer and cudaDevP2PAttrAccessSupported
                                // (presets: true)
  int performance_rank = -1;    // cudaDevP2PAttrPerformanceRank (lower is better); -1: preset
  std::string source;           // where the figures come from (a preset's citation, "measured")
};

struct Topology {
  std::vector<int> devices;               // CUDA ordinals (measured) or 0..G-1 (preset)
  std::vector<std::vector<Link>> links;   // [i][j] from devices[i] to devices[j]; [i][i]: self
  std::vector<Link> host_links;           // [i] from pinned host memory to devices[i]
                                          // (cudaMemcpyAsync; presets: the board's PCIe)
  std::string description;                // one line: the preset and its source, or "measured"
  bool measured = false;
  int gpus() const { return int(devices.size()); }
  // A ring over all GPUs in order (NCCL's ring collectives): its slowest link's bandwidth and
  // its largest latency. One GPU: infinite bandwidth, zero latency (nothing travels).
  double ring_bandwidth_gbps() const;
  double ring_latency_us() const;
  // The slowest link into or out of GPU `root` (a gather or scatter funnels through it).
  double root_bandwidth_gbps(int root) const;
  double root_latency_us(int root) const;
};

// "nvlink" (H100/H200 SXM, NVLink 4 through NVSwitch), "pcie" (= "pcie5", Gen5 x16), "pcie4".
std::vector<std::string> link_preset_names();
// Every pair of `gpus` GPUs linked as the preset says. InvalidArgument for an unknown name
// (listing the known ones) or gpus < 1.
Topology topology_preset(const std::string& link, int gpus);
// The preset a device's board uses when nothing is measured: "nvlink" for the SXM presets
// (h100-sxm, h200, b200; a measured GPU whose name says SXM or is an H200), "pcie4" for
// Gen4 boards (a100-80g's PCIe variant, l40s), else "pcie". The reason goes to *why.
std::string default_link_preset(const GpuInfo& device, std::string* why = nullptr);
// Measures every ordered pair of `devices` (cudaMemcpyPeerAsync of 256 MiB timed with CUDA
// events for bandwidth, of 8 bytes for latency; median of several), with peer access enabled
// where cudaDeviceCanAccessPeer allows (and disabled again after). NVLink or PCIe is inferred
// from the bandwidth (> 100 GB/s: more than a PCIe Gen5 x16 link carries), since the CUDA
// runtime does not say which link joins two GPUs (NVML would; autogemm does not link it).
// Throws NoDevice without GPUs, InvalidArgument for an ordinal out of range or repeated.
Topology measure_topology(const std::vector<int>& devices);

// ---- one GEMM over G GPUs ---------------------------------------------------------------------

enum class SplitKind {
  none,  // one GPU (GPU 0) computes everything: the baseline every split must beat
  m,     // rows of A and D: GPU r computes D[rows_r, :] from A[rows_r, :] and all of B
  n,     // columns of B and D: GPU r computes D[:, cols_r] from all of A and B[cols_r]
  k,     // the inner dimension: GPU r computes A[:, k_r] B[k_r, :]; the partial sums are
         // added by NCCL (reduce to GPU 0, or one reduce per row shard)
};
std::string_view to_string(SplitKind kind);
std::optional<SplitKind> parse_split_kind(std::string_view text);  // none, m, n, k

// Where the operands are before the call and where D must be after it.
enum class InputPlacement {
  replicated,  // A, B (and C, scales) on every GPU already: nothing moves before the GEMMs
  root,        // only on GPU 0 (rank 0): each GPU's slices are sent first (broadcast/scatter)
};
enum class OutputPlacement {
  root,     // all of D on GPU 0 (rank 0)
  sharded,  // each GPU keeps its part of D, at its place in its own full-size D buffer
            // (split K: rank r gets the reduced rows of part r of an M split)
};
std::string_view to_string(InputPlacement placement);
std::string_view to_string(OutputPlacement placement);

struct SplitOptions {
  InputPlacement inputs = InputPlacement::replicated;
  OutputPlacement output = OutputPlacement::root;
  std::optional<SplitKind> kind;  // use this kind (one GPU is still priced beside it); empty:
                                  // the fastest of all kinds
  int max_chunks = 8;             // output pieces per GPU that may overlap its communication
                                  // with the next piece's GEMM (1, 2, 4 or 8; 1: never overlap)
};

// One GEMM a rank runs: D[rows, cols] (+)= A[rows, ks] B[ks, cols].
struct SplitPiece {
  int64_t row_begin = 0, row_end = 0;   // M
  int64_t col_begin = 0, col_end = 0;   // N
  int64_t k_begin = 0, k_end = 0;       // K
  // Forced configuration: set when the plan overlaps communication with the GEMMs (the best
  // non-persistent one, so NCCL's kernels find SMs between the GEMM's CTAs).
  std::optional<GemmConfig> config;
  double predicted_us = 0;
  int64_t rows() const { return row_end - row_begin; }
  int64_t cols() const { return col_end - col_begin; }
  int64_t depth() const { return k_end - k_begin; }
  bool empty() const { return rows() <= 0 || cols() <= 0 || depth() <= 0; }
};

struct SplitCandidate {
  SplitKind kind = SplitKind::none;
  int chunks = 1;                               // pieces per rank (> 1: overlapped)
  std::vector<std::vector<SplitPiece>> pieces;  // [rank][chunk]; empty for a rejected one
  DType partial_type = DType::fp32;             // split K: the type partial sums travel in
  double compute_us = 0;     // the slowest rank's GEMMs, one after the other
  double input_us = 0;       // slices sent before the GEMMs (InputPlacement::root)
  double output_us = 0;      // gather / reduce / finishing copies after (or beside) the GEMMs
  double exposed_comm_us = 0;  // the part of input_us + output_us not hidden behind GEMMs
  double total_us = 0;       // the prediction
  std::string rejected;      // non-empty: the rule this candidate breaks (it is not priced)
  std::string explanation;   // how total_us is made, in one or two sentences
};

struct SplitPlan {
  GemmProblem problem;
  GpuInfo device;               // every GPU is planned as this one
  Topology topology;
  SplitOptions options;
  double single_gpu_us = 0;     // plan_gemm(problem, device) on one GPU
  SplitCandidate chosen;        // the fastest legal candidate
  std::vector<SplitCandidate> candidates;  // every kind: legal ones fastest first, then rejected
  int gpus() const { return topology.gpus(); }
  double speedup() const { return chosen.total_us > 0 ? single_gpu_us / chosen.total_us : 0; }
};

// Prices split M, N and K (each with its best chunk count) and one GPU on `device` with the
// links of `topology` (its size is G), and picks the fastest. Pure host code. Throws
// InvalidArgument for a bad problem (validate()), G < 1, or a forced kind on G GPUs that the
// problem cannot be split into (the reason names the rule).
SplitPlan plan_split(const GemmProblem& problem, const GpuInfo& device, const Topology& topology,
                     const SplitOptions& options = {});

// ---- NCCL communicators and split execution ------------------------------------------------

// NCCL's version code (e.g. 22809) when autogemm was built with NCCL, else nullopt.
std::optional<int> nccl_version();
// A fresh ncclUniqueId's bytes (ncclGetUniqueId), for MultiGpuComm::from_unique_id.
std::vector<unsigned char> nccl_unique_id();

class MultiGpuComm;

struct SplitReport {
  SplitKind kind = SplitKind::none;
  int chunks = 1;
  std::vector<std::vector<GemmReport>> gemms;  // [local rank][chunk]: what each GEMM ran
};

// Runs `plan` (made by plan_split for this problem and comm.size() GPUs). operands[i] and
// streams[i] belong to comm.local_ranks()[i] (streams empty: each device's legacy default
// stream). Inputs replicated: every rank's A, B (scales, C) hold the whole operands; inputs on
// the root: only rank 0's (others may be null). Output on the root: rank 0's D gets all of D;
// sharded: each rank's D (full size, ldd) gets its part. Asynchronous on the streams; scratch
// buffers are stream-ordered allocations (cudaMallocAsync) freed on them. Everything is checked
// before anything is launched (InvalidArgument names the argument, its value and the rule): the
// plan against the problem and the communicator's size, each operand pointer against its
// rank's device (cudaPointerGetAttributes).
SplitReport split_gemm(const GemmProblem& problem, const std::vector<GemmOperands>& operands,
                       const SplitPlan& plan, MultiGpuComm& comm,
                       const std::vector<cudaStream_t>& streams = {});

// The ranks this process drives. Move-only; destroys the communicators it created.
class MultiGpuComm {
 public:
  struct LocalRank {
    int rank = 0;     // in the communicator
    int device = 0;   // CUDA ordinal
  };
  // One communicator over `devices` in this process (ncclCommInitAll): rank i is devices[i].
  // Sets NCCL_NVLS_ENABLE=0 first, overwriting any other value: NVLink multicast is forbidden
  // on the machines this runs on. Throws InvalidArgument (empty list, an ordinal out of range or
  // repeated), NoDevice (no GPU), Error (built without NCCL) before creating anything.
  static MultiGpuComm local(const std::vector<int>& devices);
  // A caller's communicator (one rank per process, e.g. from torch.distributed or MPI); it stays
  // the caller's. Create it with NCCL_NVLS_ENABLE=0 in the environment.
  static MultiGpuComm wrap(::ncclComm* comm);
  // One rank of a communicator made from a unique id that rank 0 drew (nccl_unique_id) and
  // handed to every rank over the caller's own channel (torch.distributed's broadcast, MPI):
  // ncclCommInitRank on `device`, destroyed with this. Sets NCCL_NVLS_ENABLE=0 first, as
  // local() does. InvalidArgument: an id that is not NCCL_UNIQUE_ID_BYTES long, rank outside
  // 0..world-1, a device out of range.
  static MultiGpuComm from_unique_id(const std::vector<unsigned char>& unique_id, int world,
                                     int rank, int device);

  MultiGpuComm(MultiGpuComm&&) noexcept;
  MultiGpuComm& operator=(MultiGpuComm&&) noexcept;
  ~MultiGpuComm();

  int size() const;                                 // ranks in the communicator
  const std::vector<LocalRank>& local_ranks() const;
  ::ncclComm* comm(std::size_t local_index) const;  // the local rank's communicator
  const GpuInfo& device(std::size_t local_index) const;  // the local rank's GPU, profiled

  struct State;
  // What src/multi's executors keep with the communicator (the tensor-parallel agreement
  // board); not for callers.
  State& internal_state() { return *state_; }

 private:
  friend SplitReport split_gemm(const GemmProblem&, const std::vector<GemmOperands>&,
                                const SplitPlan&, MultiGpuComm&, const std::vector<cudaStream_t>&);
  explicit MultiGpuComm(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// ---- many independent GEMMs over the GPUs of this process -----------------------------------

enum class ScheduleStrategy {
  round_robin,    // GEMM i to GPU i mod G, in list order, all enqueued up front; never
                  // migrated (the baseline)
  load_balanced,  // longest first, each to the GPU that finishes it first; the shortest are
                  // held in a shared pool for the end; migrated
  priority,       // higher priority first, each to the GPU that finishes it first; the
                  // shortest of the lowest priority pooled; migrated
};
std::string_view to_string(ScheduleStrategy strategy);
std::optional<ScheduleStrategy> parse_schedule_strategy(std::string_view text);  // rr, load, priority

// Where a GEMM's operands (A, B, C, scales) and its D live before and after it runs.
enum class OperandHome {
  replicated,  // on every GPU of the schedule: it runs anywhere without a copy
  device,      // on one GPU: elsewhere its inputs are copied there first and D copied back
  host,        // in host memory (pinned, for the copies to be asynchronous): copied in and out
};
std::string_view to_string(OperandHome home);
std::optional<OperandHome> parse_operand_home(std::string_view text);  // replicated, device, host

struct OperandPlacement {
  OperandHome home = OperandHome::replicated;
  int device = 0;   // OperandHome::device: an index into the schedule's GPUs
};

// One GEMM as the scheduler plans it (a ScheduledGemm without its pointers).
struct GemmDemand {
  double time_us = 0;            // on one GPU: measured by a warm-up, or predicted
  int priority = 0;              // ScheduleStrategy::priority: higher runs first
  OperandPlacement placement;
  int64_t input_bytes = 0;       // A, B, C and scales: copied to a GPU they do not live on
  int64_t output_bytes = 0;      // D: made there, and copied back home after
  int64_t workspace_bytes = 0;   // what the call itself allocates on its GPU (split-K, copies
                                 // of unaligned rows, A's scales re-laid, cuBLASLt's)
};

// What limits the placement.
struct PlacementLimits {
  // [gpu]: bytes the scheduler may allocate there (copies of operands that live elsewhere, and
  // the largest workspace of its GEMMs); empty: no limit. run_gemm_schedule: each GPU's free
  // memory when the call starts, unless ScheduleOptions says less.
  std::vector<int64_t> memory_bytes;
  // Prices copies (links[home][gpu], host_links[gpu]); empty: the "nvlink" preset's.
  std::optional<Topology> topology;
  std::vector<double> speed;     // [gpu]: measured / predicted (1 when empty)
  // The pool (the shortest GEMMs, which any GPU takes at the end) holds at most this share of
  // the total time; 0: no pool.
  double pool_share = 0.15;
};

struct GemmAssignment {
  std::vector<std::vector<int>> queues;   // [gpu]: GEMM indices in the order they run
  std::vector<int> gpu;                   // [gemm]: the GPU it is planned on
  std::vector<double> copy_us;            // [gemm]: its copies there (0: no copy)
  // GEMMs held back in the shared pool (each also in its planned GPU's queue, last), longest
  // first: a GPU whose own share runs out takes from it.
  std::vector<int> pool;
  std::vector<double> predicted_busy_us;  // [gpu]: its GEMMs' times and copies
  std::vector<int64_t> memory_bytes;      // [gpu]: what the plan allocates there
  std::vector<int64_t> bytes_moved;       // [gpu]: operands copied in and D copied out
  double predicted_makespan_us = 0;       // the largest busy time
  double ideal_us = 0;                    // total time (without copies) / G, at each GPU's speed
  double lower_bound_us = 0;              // no schedule ends sooner: the ideal, or the longest
                                          // GEMM on the fastest GPU when that is longer
};

// The static plan of a strategy: pure. Each GEMM goes to the GPU that would finish it first,
// counting its copies there, among the GPUs with room for it (round-robin: the next GPU in
// turn with room). Throws InvalidArgument for gpus < 1, a bad time, placement or speed, and
// "gemms[i]" naming the bytes when a GEMM fits on no GPU: nothing runs.
GemmAssignment assign_gemms(const std::vector<GemmDemand>& gemms, int gpus,
                            ScheduleStrategy strategy, const PlacementLimits& limits = {});
// Replicated GEMMs of these times (and priorities: none, or one each), no memory limit.
GemmAssignment assign_gemms(const std::vector<double>& predicted_us,
                            const std::vector<int>& priorities, int gpus,
                            ScheduleStrategy strategy, const std::vector<double>& speed = {});

struct ScheduledGemm {
  GemmProblem problem;
  OperandPlacement placement;
  // Replicated: one per device of ScheduleOptions::devices. Device or host: one, where they
  // live (D too; host pointers should be pinned).
  std::vector<GemmOperands> operands;
  int priority = 0;                    // ScheduleStrategy::priority: higher runs first
  double predicted_us = 0;             // 0: plan_gemm on the first device
  double measured_us = 0;              // a warm-up's time on one GPU: balanced on this when > 0
};

struct ScheduleOptions {
  ScheduleStrategy strategy = ScheduleStrategy::load_balanced;
  std::vector<int> devices;            // CUDA ordinals, each once
  std::optional<bool> migrate;         // default: on for load_balanced and priority
  // [device]: at most this many bytes allocated there; empty: its free memory at the call.
  std::vector<int64_t> memory_limit_bytes;
  // Prices copies; empty: measured once per process (measure_topology) when some GEMM's
  // operands are not replicated.
  std::optional<Topology> topology;
  double pool_share = 0.15;            // PlacementLimits::pool_share
  // Every GPU's stream waits on a host word until every feeding thread has enqueued its first
  // GEMMs, then records its start and runs: all GPUs start at once with a full queue. Off, or
  // on a device that cannot map host memory: each start is recorded before the threads start
  // (ScheduleResult::start_gate_note says which).
  bool start_gate = true;
};

// Idle stretches of a GPU's stream longer than this are listed: longer than the host's cost of
// a launch (about 5 us) several times over, so a gap this long means the GPU waited on the host.
inline constexpr double kIdleGapUs = 20.0;

struct ScheduledRun {
  int gpu = -1;               // index into ScheduleOptions::devices where it ran
  bool migrated = false;      // it ran elsewhere than planned
  double predicted_us = 0;    // what it was balanced on (measured_us when given)
  double start_us = 0;        // CUDA events around it (its copies included), from the run's
  double end_us = 0;          // start on its GPU
  double measured_us = 0;     // end - start
  double host_us = 0;         // the host's time to enqueue it (copies, gemm() or the resolved
                              // launch, events)
  bool resolved = false;      // launched as resolved before the run (its plan, kernels,
                              // parameters and tensor maps), not through gemm()
  int64_t bytes_moved = 0;    // its copies
  GemmReport report;
};

struct GpuActivity {
  int gemms = 0;
  int migrated_in = 0;         // GEMMs planned elsewhere that it ran
  double busy_us = 0;          // its GEMMs' measured times
  double span_us = 0;          // the run's start to its last end
  double idle_us = 0;          // makespan - busy: every microsecond it did nothing
  std::vector<std::pair<double, double>> gaps;  // (start, length) of idle stretches > kIdleGapUs
                                                // before its last end
  int64_t bytes_moved = 0;
};

struct ScheduleResult {
  GemmAssignment assignment;          // the static plan before migration
  std::vector<ScheduledRun> runs;     // per GEMM
  std::vector<GpuActivity> gpus;      // per device
  double makespan_us = 0;             // the largest span
  double ideal_us = 0;                // measured busy time / G
  double bound_us = 0;                // max(ideal, the longest GEMM measured)
  double host_us_per_gemm = 0;        // mean ScheduledRun::host_us: every enqueue, the ones
                                      // behind the start gate included
  int migrations = 0;
  bool start_gated = false;           // the GPUs started together behind the start gate
  std::string start_gate_note;        // why not, or how it opened when not as planned
  double resolve_us = 0;              // host time resolving launches before the run (all GPUs
                                      // at once; outside the makespan)
};

// Runs every GEMM once, a stream per device, each fed by a host thread of its own (kept for
// the process): its share enqueued up front (the first GEMMs behind the start gate), then the
// pool taken as its stream drains. Each GEMM's launch is resolved for the GPUs it may run on
// before the run where it can be (not cuBLASLt, copied operands, per-call copies or re-laid
// scales: those go through gemm() in the run). Calls are serialised within the process.
// Returns when all are done. Everything is checked first (operands on their devices, the placement
// within each device's memory): on bad input nothing runs.
ScheduleResult run_gemm_schedule(const std::vector<ScheduledGemm>& gemms,
                                 const ScheduleOptions& options);

}  // namespace autogemm
