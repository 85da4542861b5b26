// Tensor-parallel GEMMs from Python (autogemm/distributed.py is their public face): the planner
// as a dictionary (no GPU needed), one rank of a communicator made from a unique id, and a plan
// with the workspace it runs on, whose run() calls tp_gemm on this rank's DLPack arrays.
//
// Every rank must take the same collective path, or some rank waits forever inside NCCL. So a
// failed check of this rank's arrays never raises before tp_gemm: the array's pointer goes to
// tp_gemm as null, tp_gemm's agreement (each call exchanges every rank's own check of its
// arguments) makes every rank raise ("rank 2: b = null: ..."), and this rank then raises its own
// precise message (the argument, its shape, the shape tp_shard_shapes expects). The problem is
// made from the shapes the caller passed (autogemm/distributed.py), so a rank whose shards imply
// another GEMM holds another plan, which the agreement reports on every rank too. What raises
// here before any collective is only what cannot form a problem at all (an unknown pattern or
// type, sizes validate() refuses); distributed.py routes those through an exchange of its own.
#include "tp_call.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "autogemm/multi_gpu.hpp"
#include "autogemm/quantize.hpp"
#include "autogemm/tensor_parallel.hpp"

namespace autogemm::python {
namespace {

using namespace nb::literals;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Python spellings ("all_gather", "copy_engine") as the C++ parsers read them ("all-gather").
std::string dashed(const std::string& s) {
  std::string out = lower(s);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

bool is_fp8(const TpProblem& p) { return p.scaling == Scaling::block_1x128_128x128; }

TpPattern pattern_of(const std::string& text) {
  const std::optional<TpPattern> p = parse_tp_pattern(dashed(text));
  if (!p)
    throw InvalidArgument("pattern", text,
                          "expected all_gather (ag), reduce_scatter (rs) or all_reduce (ar)");
  // gather (D on rank 0) is the one-process CLI's and C++'s: a torch user gathers with
  // torch.distributed around a rank's own GEMM.
  if (*p == TpPattern::gather)
    throw InvalidArgument("pattern", text,
                          "gather (D on rank 0) runs from C++ (tp_gemm) and `autogemm bench --tp "
                          "gather`; here: all_gather, reduce_scatter or all_reduce");
  return *p;
}

std::optional<TpTransport> transport_of(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const std::optional<TpTransport> t = parse_tp_transport(dashed(*text));
  if (!t)
    throw InvalidArgument("transport", *text,
                          "expected None (the planner's choice: copy_engine where every pair of "
                          "ranks has peer access, else nccl), \"copy_engine\" or \"nccl\"");
  return t;
}

// The whole GEMM: dtype "bf16" / "fp16" (also "bfloat16", "float16"), or "fp8" (e4m3 with
// 1x128 / 128x128 block scales, D bf16 unless out_dtype says otherwise).
TpProblem tp_problem(const std::string& pattern, int world, int64_t m, int64_t n, int64_t k,
                     const std::string& dtype, const std::optional<std::string>& out_dtype,
                     int64_t lda, int64_t ldb, int64_t ldd) {
  TpProblem p;
  p.pattern = pattern_of(pattern);
  p.world = world;
  p.m = m, p.n = n, p.k = k;
  std::string d = lower(dtype);
  if (d == "float16") d = "fp16";
  if (d == "float8_e4m3fn") d = "e4m3";
  const std::optional<DType> t = parse_dtype(d);
  if (!t || !(*t == DType::bf16 || *t == DType::fp16 || *t == DType::e4m3))
    throw InvalidArgument("dtype", dtype,
                          "expected bf16, fp16 or fp8 (e4m3 with 1x128 / 128x128 block scales)");
  p.a_type = p.b_type = *t;
  if (*t == DType::e4m3) p.scaling = Scaling::block_1x128_128x128;
  p.d_type = out_dtype ? parse_out_dtype(*out_dtype) : *t == DType::e4m3 ? DType::bf16 : *t;
  p.lda = lda, p.ldb = ldb, p.ldd = ldd;
  return p;
}

// Every rank planned as `device` (a preset name or an ordinal of this machine) over `world`
// GPUs joined as the link preset says (default: the device's board's); without peer access the
// planner can only choose the NCCL transport.
TpPlan make_plan(const TpProblem& problem, const std::string& device,
                 const std::optional<std::string>& link, bool peer_access,
                 const std::optional<std::string>& transport, int bands) {
  validate(problem);   // sizes first: a bad one is reported before any device query
  TpOptions options;
  options.transport = transport_of(transport);
  options.bands = bands;
  const GpuInfo gpu = resolve_device(device);
  Topology topology = topology_preset(link ? *link : default_link_preset(gpu), problem.world);
  if (!peer_access) {
    for (std::size_t i = 0; i < topology.links.size(); ++i)
      for (std::size_t j = 0; j < topology.links[i].size(); ++j)
        if (i != j) topology.links[i][j].peer_access = false;
    topology.description += "; no peer access between the ranks";
  }
  nb::gil_scoped_release release;
  return plan_tp(problem, gpu, topology, options);
}

nb::tuple shape2(int64_t rows, int64_t cols) { return nb::make_tuple(rows, cols); }

nb::dict plan_info(const TpPlan& plan) {
  const TpProblem& p = plan.problem;
  const TpShardShapes s = tp_shard_shapes(p, 0);
  nb::dict d;
  d["describe"] = plan.describe();
  d["pattern"] = std::string(to_string(p.pattern));
  d["world"] = p.world;
  d["m"] = p.m, d["n"] = p.n, d["k"] = p.k;
  d["dtype"] = std::string(to_string(p.a_type));
  d["out_dtype"] = std::string(to_string(p.d_type));
  d["device"] = plan.device.preset.empty() ? plan.device.name : plan.device.preset;
  d["link"] = plan.topology.description;
  d["transport"] = std::string(to_string(plan.transport));
  d["bands"] = plan.bands;
  d["rounds"] = plan.rounds;
  d["tail_rows"] = plan.tail_rows;
  d["launches"] = int(plan.steps.size());
  d["total_us"] = plan.total_us;
  d["compute_us"] = plan.compute_us;
  d["transfer_us"] = plan.transfer_us;
  d["exposed_us"] = plan.exposed_us;
  d["single_gpu_us"] = plan.single_gpu_us;
  d["speedup"] = plan.speedup();
  d["link_gbps"] = plan.link_gbps;
  d["explanation"] = plan.explanation;
  d["hash"] = plan.hash();
  d["a_shape"] = shape2(s.a_rows, s.a_cols);   // every rank's shards have these shapes
  d["b_shape"] = shape2(s.b_rows, s.b_cols);
  d["d_shape"] = shape2(s.d_rows, s.d_cols);
  nb::list steps;
  for (const TpStep& st : plan.steps)
    steps.append(nb::make_tuple(st.step, st.band, st.rows, st.config.describe(), st.reads_c,
                                st.predicted_us, st.bands));
  d["steps"] = steps;
  return d;
}

// tp_gemm's agreement says some rank's workspace was made for another plan: the signal a rank
// sends (TpGemm.probe) when it has no workspace for its call's shapes yet. Every rank sees the
// same exception, so every rank takes the same path after it (distributed.py's exchange).
bool is_missing_workspace(const InvalidArgument& e) {
  return e.argument().rfind("rank ", 0) == 0 &&
         (e.rule().find("TpWorkspace::fits") != std::string::npos ||
          e.rule().find("made for another plan") != std::string::npos);
}

std::string dtype_words(DType t) {
  switch (t) {
    case DType::bf16: return "bfloat16";
    case DType::fp16: return "float16";
    case DType::fp32: return "float32";
    case DType::e4m3: return "float8_e4m3fn (or uint8 bytes read as e4m3)";
    default: return std::string(to_string(t));
  }
}

// ---- the classes -------------------------------------------------------------------------------

// One rank of a communicator of autogemm's own (ncclCommInitRank from rank 0's unique id).
struct PyTpComm {
  std::shared_ptr<MultiGpuComm> comm;
  int world = 0, rank = 0, device = 0;
};

// One plan on a communicator, and the workspace it runs on (made by create_workspace(), a
// collective, or shared with a plan whose workspace fits: plans that differ only in leading
// dimensions run on the same buffers).
struct PyTpGemm {
  std::shared_ptr<MultiGpuComm> comm;
  int rank = 0, device = 0;
  TpPlan plan;
  std::shared_ptr<TpWorkspace> workspace;
};

// The arrays of one call, imported (the imports keep them alive through the call).
struct Imported {
  std::optional<ArrayView> a, b, d, scale_a, scale_b, a_gathered;
};

// Imports and checks this rank's arrays against tp_shard_shapes(problem, rank), filling
// `shards` in the order a, b, d, scales, a_gathered; throws InvalidArgument at the first that
// fails (its pointer, and those after it, stay null).
void check_shards(const PyTpGemm& g, nb::handle a, nb::handle b, nb::handle d,
                  nb::handle scale_a, nb::handle scale_b, nb::handle a_gathered, Imported& v,
                  TpShards& shards) {
  const TpProblem& p = g.plan.problem;
  const TpShardShapes s = tp_shard_shapes(p, g.rank);
  const bool fp8 = is_fp8(p);
  const bool gather = p.pattern == TpPattern::all_gather;
  const std::string sizes = fmt::format("{} of M = {}, N = {}, K = {} over {} ranks",
                                        to_string(p.pattern), p.m, p.n, p.k, p.world);
  auto matrix = [&](std::optional<ArrayView>& slot, const char* name, nb::handle h,
                    bool writable, int64_t rows, int64_t cols, DType type, int64_t ld,
                    const char* words) -> void* {
    slot = import_array(name, h, writable);
    const Matrix mat = matrix_of(*slot);
    if (mat.rows != rows || mat.cols != cols)
      throw InvalidArgument(name, fmt::format("an array of shape {}", slot->shape_text()),
                            fmt::format("must have shape ({}, {}) = {} on rank {} ({})", rows,
                                        cols, words, g.rank, sizes));
    const std::optional<DType> t =
        element_type(*slot, type == DType::e4m3 ? std::optional(DType::e4m3) : std::nullopt);
    if (t != type)
      throw InvalidArgument(name, slot->dtype_text(),
                            fmt::format("must have dtype {} ({})", dtype_words(type), sizes));
    int64_t have = leading_dimension(mat);
    if (have == cols) have = 0;
    const int64_t want = ld == cols ? 0 : ld;
    if (have != want)
      throw InvalidArgument(name, fmt::format("shape {} with strides {} (elements)",
                                              slot->shape_text(), slot->strides_text()),
                            want ? fmt::format("the plan was made for rows {} elements apart",
                                               want)
                                 : std::string("the plan was made for packed rows"));
    return slot->data;
  };
  shards.a = matrix(v.a, "a", a, false, s.a_rows, s.a_cols, p.a_type, p.lda,
                    gather ? "(M/world, K)" : "(M, K/world)");
  shards.b = matrix(v.b, "b", b, false, s.b_rows, s.b_cols, p.b_type, p.ldb,
                    gather ? "(N/world, K)" : "(N, K/world)");
  shards.d = matrix(v.d, "d", d, true, s.d_rows, s.d_cols, p.d_type, p.ldd,
                    gather                                     ? "(M, N/world)"
                    : p.pattern == TpPattern::reduce_scatter ? "(M/world, N)"
                                                               : "(M, N)");
  if (fp8) {
    v.scale_a = import_array("scale_a", scale_a, false);
    check_block_scales(*v.scale_a, {s.a_rows, ceil_div(s.a_cols, kFp8ScaleGroup)},
                       "(rows of a, ceil(columns of a / 128))",
                       "one scale per row per 128 columns of the shard (quantize_fp8(a, (1, 128)))",
                       sizes);
    shards.scale_a = static_cast<const float*>(v.scale_a->data);
    v.scale_b = import_array("scale_b", scale_b, false);
    check_block_scales(*v.scale_b,
                       {ceil_div(s.b_rows, kFp8ScaleGroup), ceil_div(s.b_cols, kFp8ScaleGroup)},
                       "(ceil(rows of b / 128), ceil(columns of b / 128))",
                       "one scale per 128x128 block of the shard (quantize_fp8(b, (128, 128)))",
                       sizes);
    shards.scale_b = static_cast<const float*>(v.scale_b->data);
  } else {
    for (auto [name, h] : {std::pair{"scale_a", scale_a}, std::pair{"scale_b", scale_b}})
      if (!h.is_none())
        throw InvalidArgument(name, "an array",
                              fmt::format("scales go with FP8 shards; these are {}",
                                          dtype_words(p.a_type)));
  }
  if (!a_gathered.is_none()) {
    if (!gather)
      throw InvalidArgument("a_gathered", "an array",
                            fmt::format("only all_gather gathers A; this is {}",
                                        to_string(p.pattern)));
    shards.a_gathered =
        matrix(v.a_gathered, "a_gathered", a_gathered, true, p.m, p.k, p.a_type, 0, "(M, K)");
  }
  for (const auto* slot : {&v.a, &v.b, &v.d, &v.scale_a, &v.scale_b, &v.a_gathered}) {
    if (!*slot) continue;
    const int device = common_cuda_device({&**slot});
    if (device != g.device)
      throw InvalidArgument((*slot)->name, fmt::format("an array on CUDA device {}", device),
                            fmt::format("must be on this rank's GPU, CUDA device {} (the "
                                        "communicator's)", g.device));
  }
}

// One tp_gemm call on this rank (see the file's comment for the order of the checks).
// Returns false when the agreement reports that some rank has no workspace for its shapes.
bool run(PyTpGemm& g, nb::handle a, nb::handle b, nb::handle d, nb::handle scale_a,
         nb::handle scale_b, nb::handle a_gathered, uintptr_t stream) {
  if (!g.workspace)
    throw InvalidArgument("workspace", "none",
                          "create_workspace() (a collective) or share_workspace() first");
  Imported v;
  TpShards shards;
  std::optional<InvalidArgument> local;
  try {
    check_shards(g, a, b, d, scale_a, scale_b, a_gathered, v, shards);
  } catch (const InvalidArgument& e) {
    local = e;
  }
  if (local) {
    // Into the agreement: a null pointer where tp_gemm needs one (its own check names it).
    const std::string& name = local->argument();
    const bool fp8 = is_fp8(g.plan.problem);
    if (name == "a") shards.a = nullptr;
    else if (name == "b") shards.b = nullptr;
    else if (fp8 && name == "scale_a") shards.scale_a = nullptr;
    else if (fp8 && name == "scale_b") shards.scale_b = nullptr;
    else shards.d = nullptr;
  }
  try {
    DeviceGuard guard(g.device);
    nb::gil_scoped_release release;
    tp_gemm(g.plan, {shards}, *g.workspace, *g.comm, {reinterpret_cast<cudaStream_t>(stream)});
  } catch (const InvalidArgument& e) {
    if (is_missing_workspace(e)) return false;
    if (local) throw *local;
    throw;
  }
  if (local) throw *local;   // not reached: a null pointer fails tp_gemm's own check
  return true;
}

// The signal of a rank without a workspace for its call: tp_gemm's agreement with a plan this
// workspace was not made for (its bands differ), so this rank's own check fails and every rank
// raises the same InvalidArgument; returns false then. Another rank's earlier error (a lower
// rank's) is raised instead, as on every rank.
bool probe(PyTpGemm& g, uintptr_t stream) {
  if (!g.workspace)
    throw InvalidArgument("workspace", "none", "probe() needs a plan with a workspace");
  TpPlan other = g.plan;
  other.bands = g.plan.bands + 1;
  try {
    DeviceGuard guard(g.device);
    nb::gil_scoped_release release;
    tp_gemm(other, {TpShards{}}, *g.workspace, *g.comm, {reinterpret_cast<cudaStream_t>(stream)});
  } catch (const InvalidArgument& e) {
    if (is_missing_workspace(e)) return false;
    throw;
  }
  throw Error("tp_gemm ran a plan on a workspace made for another plan (TpWorkspace::fits)");
}

}  // namespace

void register_tensor_parallel(nb::module_& m) {
  m.def(
      "tp_plan",
      [](const std::string& pattern, int world, int64_t m, int64_t n, int64_t k,
         const std::string& dtype, std::optional<std::string> out_dtype,
         const std::string& device, std::optional<std::string> link,
         std::optional<std::string> transport, int bands, bool peer_access) {
        const TpProblem p = tp_problem(pattern, world, m, n, k, dtype, out_dtype, 0, 0, 0);
        return plan_info(make_plan(p, device, link, peer_access, transport, bands));
      },
      "pattern"_a, "world"_a, "m"_a, "n"_a, "k"_a, "dtype"_a, "out_dtype"_a.none(), "device"_a,
      "link"_a.none(), "transport"_a.none(), "bands"_a, "peer_access"_a = true,
      "plan_tp for `world` GPUs of a preset (or this machine's GPU) joined by a link preset: "
      "a dict with 'describe' (the plan's text) and its numbers. No GPU needed.");
  m.def(
      "nccl_unique_id",
      []() {
        const std::vector<unsigned char> id = nccl_unique_id();
        return nb::bytes(reinterpret_cast<const char*>(id.data()), id.size());
      },
      "A fresh ncclUniqueId's bytes (rank 0 draws it and hands it to every rank).");
  m.def("nccl_version", &nccl_version,
        "NCCL's version code when autogemm was built with NCCL, else None.");

  nb::class_<PyTpComm>(m, "_TpComm",
                       "One rank of a communicator of autogemm's own (ncclCommInitRank; private: "
                       "autogemm.distributed.TensorParallel makes it).")
      .def(
          "__init__",
          [](PyTpComm* self, nb::bytes unique_id, int world, int rank, int device) {
            const auto* data = static_cast<const unsigned char*>(unique_id.data());
            const std::vector<unsigned char> id(data, data + unique_id.size());
            std::shared_ptr<MultiGpuComm> comm;
            {
              nb::gil_scoped_release release;   // waits for every rank
              comm = std::make_shared<MultiGpuComm>(
                  MultiGpuComm::from_unique_id(id, world, rank, device));
            }
            new (self) PyTpComm{std::move(comm), world, rank, device};
          },
          "unique_id"_a, "world"_a, "rank"_a, "device"_a)
      .def_ro("world", &PyTpComm::world)
      .def_ro("rank", &PyTpComm::rank)
      .def_ro("device", &PyTpComm::device);

  nb::class_<PyTpGemm>(m, "_TpGemm",
                       "One plan on a communicator and the workspace it runs on (private: "
                       "autogemm.distributed.TensorParallel keeps them).")
      .def(
          "__init__",
          [](PyTpGemm* self, const PyTpComm& comm, const std::string& pattern, int64_t m,
             int64_t n, int64_t k, const std::string& dtype, std::optional<std::string> out_dtype,
             int64_t lda, int64_t ldb, int64_t ldd, std::optional<std::string> device,
             std::optional<std::string> link, bool peer_access,
             std::optional<std::string> transport, int bands) {
            const TpProblem p =
                tp_problem(pattern, comm.world, m, n, k, dtype, out_dtype, lda, ldb, ldd);
            TpPlan plan = make_plan(p, device ? *device : std::to_string(comm.device), link,
                                    peer_access, transport, bands);
            new (self) PyTpGemm{comm.comm, comm.rank, comm.device, std::move(plan), nullptr};
          },
          "comm"_a, "pattern"_a, "m"_a, "n"_a, "k"_a, "dtype"_a, "out_dtype"_a.none(), "lda"_a,
          "ldb"_a, "ldd"_a, "device"_a.none(), "link"_a.none(), "peer_access"_a,
          "transport"_a.none(), "bands"_a,
          "Plans (host only, no collective); device None: the communicator's GPU.")
      .def("info", [](const PyTpGemm& g) { return plan_info(g.plan); },
           "The plan as tp_plan() gives it.")
      .def("describe", [](const PyTpGemm& g) { return g.plan.describe(); })
      .def_prop_ro("has_workspace", [](const PyTpGemm& g) { return bool(g.workspace); })
      .def_prop_ro("workspace_bytes", [](const PyTpGemm& g) {
        return g.workspace ? g.workspace->bytes_per_rank() : std::size_t(0);
      })
      .def(
          "create_workspace",
          [](PyTpGemm& g) {
            DeviceGuard guard(g.device);
            nb::gil_scoped_release release;
            g.workspace = std::make_shared<TpWorkspace>(g.plan, *g.comm);
          },
          "TpWorkspace(plan, comm): a collective, every rank with an equal plan.")
      .def(
          "share_workspace",
          [](PyTpGemm& g, const PyTpGemm& other) {
            if (!other.workspace || other.comm != g.comm || !other.workspace->fits(g.plan))
              return false;
            g.workspace = other.workspace;
            return true;
          },
          "other"_a, "Runs on other's workspace when it fits this plan (no collective).")
      .def("run", &run, "a"_a.none(), "b"_a.none(), "d"_a.none(), "scale_a"_a.none(),
           "scale_b"_a.none(), "a_gathered"_a.none(), "stream"_a,
           "tp_gemm on this rank's shards; False when the agreement says some rank has no "
           "workspace for its shapes (every rank returns False then).")
      .def("probe", &probe, "stream"_a,
           "Tells every rank, through tp_gemm's agreement, that this one has no workspace for "
           "its call; returns False (as run() does on the other ranks).");
}

}  // namespace autogemm::python
