// Tensor-parallel GEMMs (tp_gemm) over the GPUs of this process, one rank each: every pattern
// and transport, every rank's block against the same block of the one-GPU result (diff < 1e-5,
// poisoned outputs, several calls in a row, odd row counts, padded leading dimensions, FP8,
// CUDA graph replay), and bad arguments refused on every rank before anything runs. One GPU:
// world 1; two or more: all of them up to 4.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "autogemm/gemm.hpp"
#include "autogemm/tensor_parallel.hpp"
#include "bench/tensors.hpp"
#include "bench/tp_shards.hpp"
#include "cuda/cuda_check.hpp"
#include "gpu_test_util.hpp"
#include "multi/result_match.hpp"
#include "multi_test_util.hpp"

using namespace autogemm;
using autogemm::testing::contains;
using autogemm::testing::gpu_count;
using autogemm::testing::synchronize_gpus;
using autogemm::testing::expect_invalid;

namespace {

#define REQUIRE_TP_GPUS()                                                                 \
  do {                                                                                    \
    AUTOGEMM_REQUIRE_GPU();                                                               \
    if (!nccl_version()) GTEST_SKIP() << "autogemm was built without NCCL";               \
  } while (0)

int ranks_here() { return std::min(gpu_count(), 4); }

std::vector<int> devices(int g) {
  std::vector<int> d;
  for (int i = 0; i < g; ++i) d.push_back(i);
  return d;
}

// The whole inputs on GPU 0, the one-GPU result, and every rank's shards.
struct TpSetup {
  TpProblem problem;
  bench::GemmInputs whole;
  std::vector<unsigned char> reference;
  std::vector<bench::TpRankBuffers> ranks;
  TpSetup(const TpProblem& p, uint64_t seed = 11) : problem(p) {
    cuda_check(cudaSetDevice(0), "cudaSetDevice(test)");
    const GemmProblem w = tp_whole_problem(p);
    whole = bench::make_gemm_inputs(w, seed);
    gemm(w, whole.operands(), nullptr);
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(test)");
    reference = multi::download_bytes(whole.d.get(), std::size_t(p.m * p.n * dtype_bytes(p.d_type)));
    for (int r = 0; r < p.world; ++r) ranks.push_back(bench::cut_tp_rank(p, whole, r));
  }
  std::vector<TpShards> shards() const {
    std::vector<TpShards> s;
    for (const auto& r : ranks) s.push_back(r.shards());
    return s;
  }
  void poison() {
    for (int r = 0; r < problem.world; ++r) {
      cuda_check(cudaSetDevice(r), "cudaSetDevice(test)");
      const TpShardShapes s = tp_shard_shapes(problem, r);
      bench::fill_poison(ranks[r].d.get(), std::size_t(s.d_rows * s.d_cols), problem.d_type);
    }
    cuda_check(cudaSetDevice(0), "cudaSetDevice(test)");
  }
  // Every rank's block against the one-GPU result.
  void expect_blocks(const std::string& what) const {
    for (int r = 0; r < problem.world; ++r) {
      const TpShardShapes s = tp_shard_shapes(problem, r);
      const multi::ResultMatch m = multi::match_results(
          multi::download_bytes(ranks[r].d.get(), std::size_t(s.d_rows * s.d_cols * dtype_bytes(problem.d_type))),
          bench::expected_tp_block(problem, reference, r), problem.d_type);
      EXPECT_TRUE(m.ok()) << what << ", rank " << r << ": diff " << m.diff
                          << (m.finite ? "" : " with unwritten (NaN) entries");
    }
  }
};

// Even bands unless a thin last band is asked for (AThinLastBandMatchesOneGpu); finished
// bands staged in the receivers' workspaces unless `one_process` (TpPlan::d_direct).
TpPlan plan_for(const TpProblem& p, TpTransport transport, int bands, int rounds = 0,
                int64_t tail_rows = 0, bool one_process = false, int merge_c_steps = -1) {
  TpOptions o;
  o.merge_c_steps = merge_c_steps;
  o.one_process = one_process;
  o.transport = transport;
  o.bands = bands;
  o.rounds = rounds;
  o.tail_rows = transport == TpTransport::copy_engine ? tail_rows : -1;
  return plan_tp(p, profile_gpus().gpus.at(0), topology_preset("nvlink", p.world), o);
}

TpProblem problem_of(TpPattern pattern, int world, int64_t m, int64_t n, int64_t k,
                     bool fp8 = false) {
  TpProblem p;
  p.pattern = pattern;
  p.world = world;
  p.m = m, p.n = n, p.k = k;
  if (fp8) {
    p.a_type = p.b_type = DType::e4m3;
    p.scaling = Scaling::block_1x128_128x128;
  }
  return p;
}

// Runs `plan` three times on poisoned outputs (the flags and the done hand-shake must let every
// call after the first run too) and checks every rank's block after each.
void run_and_check(const TpProblem& p, TpTransport transport, int bands, int rounds = 0,
                   int64_t tail_rows = 0, bool one_process = false, int merge_c_steps = -1) {
  TpSetup s(p);
  MultiGpuComm comm = MultiGpuComm::local(devices(p.world));
  const TpPlan plan = plan_for(p, transport, bands, rounds, tail_rows, one_process, merge_c_steps);
  if (tail_rows > 0) ASSERT_EQ(plan.tail_rows, tail_rows) << plan.describe();
  bool gated = false;  // a launch of several bands that adds partials (C gated in the kernel)
  for (const TpStep& st : plan.steps) gated = gated || (st.reads_c && st.bands > 1);
  // (One rank has no step that adds partials: nothing to gate or merge.)
  if (merge_c_steps >= 0 && p.world > 1) ASSERT_EQ(gated, merge_c_steps == 1) << plan.describe();
  TpWorkspace ws(plan, comm);
  for (int call = 0; call < 3; ++call) {
    s.poison();
    tp_gemm(plan, s.shards(), ws, comm);
    synchronize_gpus(p.world);
    s.expect_blocks(fmt::format("{} {} x{} {}x{}x{} {} bands {} rounds {}, call {}",
                                to_string(p.pattern), to_string(transport), p.world, p.m, p.n,
                                p.k, to_string(p.a_type), plan.bands, plan.rounds, call)
                    + (plan.tail_rows ? fmt::format(" (last band {} rows)", plan.tail_rows) : "")
                    + (plan.d_direct ? " (bands straight into the peers' D)" : "")
                    + (gated ? " (partials gated band by band in one launch)" : ""));
  }
}

constexpr TpPattern kPatterns[] = {TpPattern::all_gather, TpPattern::reduce_scatter,
                                   TpPattern::all_reduce};

}  // namespace

TEST(TensorParallelGpu, EveryPatternOnCopyEnginesMatchesOneGpu) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  for (TpPattern pattern : kPatterns)
    for (int bands : {1, 2}) run_and_check(problem_of(pattern, g, 512 * g, 768, 1024), TpTransport::copy_engine, bands);
}

// All-reduce's ring in rounds: a round's finished bands travel on the push stream while the
// next round's partials travel on the copy stream; every grouping of 4 bands.
TEST(TensorParallelGpu, AllReduceInRoundsMatchesOneGpu) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  for (int rounds : {1, 2, 4})
    run_and_check(problem_of(TpPattern::all_reduce, g, 512 * g, 768, 1024), TpTransport::copy_engine, 4,
                  rounds);
}

// Gather: rank 0's D holds every rank's rows; the other ranks have no D (a null pointer).
TEST(TensorParallelGpu, GatherToRankZeroMatchesOneGpu) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  for (int bands : {1, 2, 4})
    run_and_check(problem_of(TpPattern::gather, g, 512 * g, 768, 1024), TpTransport::copy_engine, bands);
  run_and_check(problem_of(TpPattern::gather, g, 256 * g, 640, 512), TpTransport::nccl, 1);
  // 200 rows a rank (bands of 128 and 72), N = 1000 (D rows of 2000 bytes).
  run_and_check(problem_of(TpPattern::gather, g, 200 * g, 1000, 256 * g), TpTransport::copy_engine, 4);
  for (TpTransport t : {TpTransport::copy_engine, TpTransport::nccl})
    run_and_check(problem_of(TpPattern::gather, g, 384 * g, 256, 256 * g, true), t, 2);
}

// A thin last band (its own launch per step, its own flags and copies): 768 rows a rank in 2
// bands of 384, the second cut into 256 + 128; all-reduce also in 3 rounds of one band.
TEST(TensorParallelGpu, AThinLastBandMatchesOneGpu) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  for (TpPattern pattern : {TpPattern::all_gather, TpPattern::reduce_scatter,
                            TpPattern::all_reduce, TpPattern::gather})
    run_and_check(problem_of(pattern, g, 768 * g, 640, 512 * g), TpTransport::copy_engine, 2, 0, 128);
  run_and_check(problem_of(TpPattern::all_reduce, g, 768 * g, 640, 512 * g), TpTransport::copy_engine, 2, 3, 128);
  run_and_check(problem_of(TpPattern::all_reduce, g, 768 * g, 256, 256 * g, true), TpTransport::copy_engine, 2, 0, 128);
}

// One process: all-reduce's and gather's finished bands go straight into the peers' D (each
// receiver's stream first frees it with a flag): even, thin-last and rounds, FP8, odd rows; a
// padded D falls back to staging.
TEST(TensorParallelGpu, BandsStraightIntoThePeersDMatchOneGpu) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  for (TpPattern pattern : {TpPattern::all_reduce, TpPattern::gather}) {
    for (int bands : {1, 2, 4})
      run_and_check(problem_of(pattern, g, 512 * g, 768, 1024 * (pattern == TpPattern::gather ? 1 : g)),
                    TpTransport::copy_engine, bands, 0, 0, true);
    run_and_check(problem_of(pattern, g, 768 * g, 640, 512 * g), TpTransport::copy_engine, 2, 0, 128, true);
    run_and_check(problem_of(pattern, g, 200 * g, 1000, 256 * g), TpTransport::copy_engine, 4, 0, 0, true);
    run_and_check(problem_of(pattern, g, 384 * g, 256, 256 * g, true), TpTransport::copy_engine, 2, 0, 0, true);
  }
  run_and_check(problem_of(TpPattern::all_reduce, g, 768 * g, 640, 512 * g), TpTransport::copy_engine, 2, 3, 128, true);
  TpProblem padded = problem_of(TpPattern::all_reduce, g, 512 * g, 768, 1024);
  padded.ldd = 768 + 64;
  EXPECT_FALSE(plan_for(padded, TpTransport::copy_engine, 2, 0, 0, true).d_direct);
}

TEST(TensorParallelGpu, EveryPatternOnNcclMatchesOneGpu) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  for (TpPattern pattern : kPatterns)
    run_and_check(problem_of(pattern, g, 256 * g, 640, 512), TpTransport::nccl, 1);
}

TEST(TensorParallelGpu, OddRowsAndColumnsAndManyBands) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  // 200 rows a rank (bands of 128 and 72), N = 1000 (D rows of 2000 bytes: staged stores).
  for (TpPattern pattern : kPatterns)
    run_and_check(problem_of(pattern, g, 200 * g, 1000 * (pattern == TpPattern::all_gather ? g : 1), 256 * g),
                  TpTransport::copy_engine, 4);
}

// The ring's steps that add partials as one launch of all their bands, each band's C waited
// for inside the kernel (GemmOperands::c_band_flags), and as a launch per band: BF16 and FP8
// (whose epilogue loads C after the k-loop), a thin last band, two rounds, D staged and direct.
TEST(TensorParallelGpu, MergedStepsWaitForEachBandsPartialInTheKernel) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  for (int merge : {1, 0})
    for (TpPattern pattern : {TpPattern::reduce_scatter, TpPattern::all_reduce}) {
      run_and_check(problem_of(pattern, g, 1024 * g, 1536, 512 * g), TpTransport::copy_engine, 4,
                    0, 0, false, merge);
      run_and_check(problem_of(pattern, g, 512 * g, 256 * g * 2, 256 * g, true),
                    TpTransport::copy_engine, 2, 0, 0, false, merge);
    }
  const TpProblem ar = problem_of(TpPattern::all_reduce, g, 1024 * g, 1536, 512 * g);
  run_and_check(ar, TpTransport::copy_engine, 4, 2, 0, true, 1);    // two rounds, D direct
  run_and_check(ar, TpTransport::copy_engine, 4, 1, 128, true, 1);  // a thin last band
}

TEST(TensorParallelGpu, BlockScaledFp8) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  for (TpPattern pattern : kPatterns)
    for (TpTransport t : {TpTransport::copy_engine, TpTransport::nccl})
      run_and_check(problem_of(pattern, g, 384 * g, 128 * g * 2, 256 * g, true), t, 2);
}

TEST(TensorParallelGpu, PaddedLeadingDimensionsAndGatheredA) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  for (TpPattern pattern : kPatterns) {
    TpProblem p = problem_of(pattern, g, 256 * g, 512 * g, 512 * g);
    const TpShardShapes shape = tp_shard_shapes(p, 0);
    p.lda = shape.a_cols + 64, p.ldb = shape.b_cols + 32, p.ldd = shape.d_cols + 16;
    TpSetup s(problem_of(pattern, g, p.m, p.n, p.k));
    // Copy each packed shard into padded buffers (and back for D) on its GPU.
    std::vector<bench::DeviceBuffer> a, b, d, gathered;
    std::vector<TpShards> shards;
    const int e = 2;
    for (int r = 0; r < g; ++r) {
      cuda_check(cudaSetDevice(r), "cudaSetDevice(test)");
      a.emplace_back(std::size_t(shape.a_rows * p.lda * e));
      b.emplace_back(std::size_t(shape.b_rows * p.ldb * e));
      d.emplace_back(std::size_t(shape.d_rows * p.ldd * e));
      gathered.emplace_back(std::size_t(p.m * p.k * e));
      cuda_check(cudaMemcpy2D(a.back().get(), p.lda * e, s.ranks[r].a.get(), shape.a_cols * e,
                              shape.a_cols * e, shape.a_rows, cudaMemcpyDeviceToDevice), "pad a");
      cuda_check(cudaMemcpy2D(b.back().get(), p.ldb * e, s.ranks[r].b.get(), shape.b_cols * e,
                              shape.b_cols * e, shape.b_rows, cudaMemcpyDeviceToDevice), "pad b");
      bench::fill_poison(d.back().get(), std::size_t(shape.d_rows * p.ldd), p.d_type);
      TpShards sh;
      sh.a = a.back().get(), sh.b = b.back().get(), sh.d = d.back().get();
      if (pattern == TpPattern::all_gather) sh.a_gathered = gathered.back().get();
      shards.push_back(sh);
    }
    MultiGpuComm comm = MultiGpuComm::local(devices(g));
    // All-reduce in two rounds: its padded D's bands are packed on the push stream.
    const TpPlan plan = plan_for(p, TpTransport::copy_engine, 2, pattern == TpPattern::all_reduce ? 2 : 0);
    TpWorkspace ws(plan, comm);
    tp_gemm(plan, shards, ws, comm);
    synchronize_gpus(g);
    for (int r = 0; r < g; ++r) {
      cuda_check(cudaSetDevice(r), "cudaSetDevice(test)");
      cuda_check(cudaMemcpy2D(s.ranks[r].d.get(), shape.d_cols * e, d[r].get(), p.ldd * e,
                              shape.d_cols * e, shape.d_rows, cudaMemcpyDeviceToDevice), "unpad d");
      if (pattern == TpPattern::all_gather) {
        const auto got = multi::download_bytes(gathered[r].get(), std::size_t(p.m * p.k * e));
        const auto want = multi::download_bytes(s.whole.a.get(), std::size_t(p.m * p.k * e));
        EXPECT_TRUE(got == want) << "rank " << r << ": the gathered A is not the whole A";
      }
    }
    synchronize_gpus(g);
    s.expect_blocks(fmt::format("{} with padded rows", to_string(pattern)));
  }
}

TEST(TensorParallelGpu, CapturedInACudaGraphAndReplayed) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  // Every pattern staged, then all-reduce with its bands straight into the peers' D.
  for (int mode = 0; mode < 4; ++mode) {
    const TpPattern pattern = mode < 3 ? kPatterns[mode] : TpPattern::all_reduce;
    const bool one_process = mode == 3;
    // Shapes whose launches are not split-K: gemm()'s split-K workspace lookup
    // (cudaStreamGetId) is refused while several GPUs' streams capture at once.
    const int64_t n = pattern == TpPattern::all_gather ? 8192 * g : 8192;
    const TpProblem p = problem_of(pattern, g, 1024 * g, n, 1024 * g);
    TpSetup s(p);
    MultiGpuComm comm = MultiGpuComm::local(devices(g));
    const TpPlan plan = plan_for(p, TpTransport::copy_engine, 2, 0, 0, one_process);
    TpWorkspace ws(plan, comm);
    std::vector<cudaStream_t> streams(static_cast<std::size_t>(g), nullptr);
    std::vector<cudaGraphExec_t> graphs(static_cast<std::size_t>(g), nullptr);
    for (int r = 0; r < g; ++r) {
      cuda_check(cudaSetDevice(r), "cudaSetDevice(test)");
      cuda_check(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), "stream");
    }
    tp_gemm(plan, s.shards(), ws, comm, streams);  // agreed and compiled outside capture
    synchronize_gpus(g);
    for (int r = 0; r < g; ++r) {
      cuda_check(cudaSetDevice(r), "cudaSetDevice(test)");
      cuda_check(cudaStreamBeginCapture(streams[r], cudaStreamCaptureModeRelaxed), "begin capture");
    }
    std::string failure;
    try {
      tp_gemm(plan, s.shards(), ws, comm, streams);
    } catch (const std::exception& e) {
      failure = e.what();  // end every capture before reporting it
    }
    for (int r = 0; r < g; ++r) {
      cuda_check(cudaSetDevice(r), "cudaSetDevice(test)");
      cudaGraph_t graph = nullptr;
      if (!failure.empty()) {
        (void)cudaStreamEndCapture(streams[r], &graph);
        if (graph) (void)cudaGraphDestroy(graph);
        continue;
      }
      cuda_check(cudaStreamEndCapture(streams[r], &graph), "end capture");
      cuda_check(cudaGraphInstantiate(&graphs[r], graph, 0), "instantiate");
      cuda_check(cudaGraphDestroy(graph), "graph destroy");
    }
    ASSERT_TRUE(failure.empty()) << to_string(pattern) << " under capture: " << failure;
    for (int replay = 0; replay < 3; ++replay) {
      s.poison();
      for (int r = 0; r < g; ++r) {
        cuda_check(cudaSetDevice(r), "cudaSetDevice(test)");
        cuda_check(cudaGraphLaunch(graphs[r], streams[r]), "graph launch");
      }
      synchronize_gpus(g);
      s.expect_blocks(fmt::format("{}{} graph replay {}", to_string(pattern), one_process ? " (direct)" : "", replay));
    }
    for (int r = 0; r < g; ++r) {
      cuda_check(cudaSetDevice(r), "cudaSetDevice(test)");
      (void)cudaGraphExecDestroy(graphs[r]);
      (void)cudaStreamDestroy(streams[r]);
    }
  }
}

TEST(TensorParallelGpu, BadArgumentsAreRefusedOnEveryRankBeforeAnythingRuns) {
  REQUIRE_TP_GPUS();
  const int g = ranks_here();
  const TpProblem p = problem_of(TpPattern::all_gather, g, 256 * g, 256 * g, 256);
  TpSetup s(p);
  MultiGpuComm comm = MultiGpuComm::local(devices(g));
  const TpPlan plan = plan_for(p, TpTransport::copy_engine, 1);
  TpWorkspace ws(plan, comm);
  s.poison();
  // The last rank's A on another GPU (or, with one GPU, a host pointer).
  std::vector<TpShards> shards = s.shards();
  std::vector<char> host(16);
  shards.back().a = g > 1 ? shards.front().a : host.data();
  const std::string what = expect_invalid([&] { tp_gemm(plan, shards, ws, comm); },
                                          fmt::format("rank {}: a", g - 1));
  EXPECT_TRUE(contains(what, g > 1 ? "on GPU 0" : "not device memory")) << what;
  // Null D on rank 0.
  shards = s.shards();
  shards.front().d = nullptr;
  expect_invalid([&] { tp_gemm(plan, shards, ws, comm); }, "rank 0: d");
  // A plan for another world or another shape.
  if (g > 1) {
    const TpProblem other = problem_of(TpPattern::all_gather, g - 1, 256 * (g - 1), 256 * (g - 1), 256);
    const TpPlan wrong = plan_tp(other, profile_gpus().gpus.at(0), topology_preset("nvlink", g - 1));
    expect_invalid([&] { tp_gemm(wrong, s.shards(), ws, comm); }, "rank 0: comm");
  }
  expect_invalid([&] { tp_gemm(plan, {}, ws, comm); }, "shards");
  synchronize_gpus(g);
  // Nothing ran: every D is still poison.
  for (int r = 0; r < g; ++r) {
    const TpShardShapes sh = tp_shard_shapes(p, r);
    for (double v : bench::download_as_double(s.ranks[r].d.get(), std::size_t(sh.d_rows * sh.d_cols), p.d_type))
      ASSERT_TRUE(std::isnan(v)) << "rank " << r << " wrote D although the call was refused";
  }
  // And the workspace still works after the refusals.
  tp_gemm(plan, s.shards(), ws, comm);
  synchronize_gpus(g);
  s.expect_blocks("after refused calls");
}
