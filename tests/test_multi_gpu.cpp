// Multi-GPU execution: split_gemm over NCCL and run_gemm_schedule, checked against the
// single-GPU result. One GPU: NCCL with one rank, every split kind bit for bit. Two or more:
// every kind, placement and strategy (skipped, naming the count, with fewer).
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "autogemm/gemm.hpp"
#include "autogemm/multi_gpu.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "gpu_test_util.hpp"
#include "multi/result_match.hpp"
#include "multi/split_plan.hpp"
#include "multi_test_util.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;
using autogemm::testing::contains;
using autogemm::testing::gpu_count;
using autogemm::testing::synchronize_gpus;
using autogemm::testing::expect_invalid;

namespace {

#define REQUIRE_NCCL()                                                                     \
  do {                                                                                     \
    if (!nccl_version())                                                                   \
      GTEST_SKIP() << "autogemm was built without NCCL (cmake/nccl.cmake found no nccl.h " \
                      "or libnccl): nothing to run";                                        \
  } while (0)

#define REQUIRE_GPUS(n)                                                                   \
  do {                                                                                    \
    AUTOGEMM_REQUIRE_GPU();                                                               \
    if (gpu_count() < (n))                                                                \
      GTEST_SKIP() << "needs " << (n) << " or more GPUs; this machine has " << gpu_count(); \
  } while (0)

std::size_t d_bytes(const GemmProblem& p) {
  return bench::operand_elements(p, 'D') * std::size_t(dtype_bytes(p.d_type));
}

// Inputs (the same values on every device: the same seed) and a poisoned D per device.
struct Data {
  std::vector<bench::GemmInputs> inputs;   // per device
  std::vector<bench::DeviceBuffer> c;      // per device, for beta != 0
};

Data make_data(const GemmProblem& p, int gpus, uint64_t seed = 7) {
  Data data;
  for (int g = 0; g < gpus; ++g) {
    cuda_check(cudaSetDevice(g), "cudaSetDevice(test)");
    data.inputs.push_back(bench::make_gemm_inputs(p, seed));
    data.c.emplace_back(bench::operand_elements(p, 'C') * std::size_t(dtype_bytes(p.d_type)));
    bench::fill_random(data.c.back().get(), bench::operand_elements(p, 'C'), p.d_type, seed + 5);
  }
  cuda_check(cudaSetDevice(0), "cudaSetDevice(test)");
  return data;
}

GemmOperands operands_on(Data& data, int device, float alpha = 1, float beta = 0) {
  GemmOperands o = data.inputs[std::size_t(device)].operands();
  o.alpha = alpha;
  o.beta = beta;
  if (beta != 0) o.c = data.c[std::size_t(device)].get();
  return o;
}

// gemm() on GPU 0 into a fresh D: the single-GPU result, as bytes.
std::vector<unsigned char> single_gpu_result(const GemmProblem& p, Data& data, float alpha = 1,
                                             float beta = 0) {
  cuda_check(cudaSetDevice(0), "cudaSetDevice(test)");
  bench::DeviceBuffer d(d_bytes(p));
  GemmOperands o = operands_on(data, 0, alpha, beta);
  o.d = d.get();
  gemm(p, o, nullptr);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(test)");
  return multi::download_bytes(d.get(), d_bytes(p));
}

bool all_poison(const void* d, const GemmProblem& p) {
  for (double v : bench::download_as_double(d, bench::operand_elements(p, 'D'), p.d_type))
    if (!std::isnan(v)) return false;
  return true;
}

// Rows [r0, r1) x columns [c0, c1) of a row-major byte image with leading dimension ld.
std::vector<unsigned char> block(const std::vector<unsigned char>& all, int64_t ld, int bytes, int64_t r0,
                                 int64_t r1, int64_t c0, int64_t c1) {
  std::vector<unsigned char> out;
  for (int64_t r = r0; r < r1; ++r)
    out.insert(out.end(), all.begin() + (r * ld + c0) * bytes, all.begin() + (r * ld + c1) * bytes);
  return out;
}

SplitPlan forced(const GemmProblem& p, SplitKind kind, int gpus, OutputPlacement output = OutputPlacement::root,
                 InputPlacement inputs = InputPlacement::replicated) {
  SplitOptions o;
  o.kind = kind;
  o.output = output;
  o.inputs = inputs;
  o.max_chunks = 1;
  return plan_split(p, device_preset("h200"), topology_preset("nvlink", gpus), o);
}

// The same plan with each rank's work cut into `chunks` pieces (the planner's own choice of
// configuration for each): exercises the overlapped path however the cost model decides.
SplitPlan chunked(SplitPlan plan, int chunks) {
  std::string why;
  plan.chosen.pieces = multi::cut_pieces(plan.problem, plan.chosen.kind, plan.gpus(), chunks, &why);
  EXPECT_FALSE(plan.chosen.pieces.empty()) << why;
  plan.chosen.chunks = chunks;
  return plan;
}

}  // namespace

TEST(MultiNccl, BuildSaysWhetherNcclIsThereAndChecksDeviceListsFirst) {
  expect_invalid([] { MultiGpuComm::local({}); }, "devices");
  expect_invalid([] { MultiGpuComm::local({0, 0}); }, "devices");
  expect_invalid([] { MultiGpuComm::wrap(nullptr); }, "comm");
  if (!nccl_version()) {
    try {
      MultiGpuComm::local({0});
      ADD_FAILURE() << "expected the no-NCCL error";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "built without NCCL")) << e.what();
    }
    return;
  }
  EXPECT_GE(*nccl_version(), 2000);
  if (gpu_count() == 0) EXPECT_THROW(MultiGpuComm::local({0}), NoDevice);
}

TEST(MultiNcclGpu, OneRankEveryKindEqualsTheOneGpuResultBitwise) {
  REQUIRE_GPUS(1);
  REQUIRE_NCCL();
  const GemmProblem p = autogemm::testing::problem(320, 384, 640);
  Data data = make_data(p, 1);
  const auto want = single_gpu_result(p, data);
  MultiGpuComm comm = MultiGpuComm::local({0});
  EXPECT_EQ(comm.size(), 1);
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  for (SplitKind kind : {SplitKind::none, SplitKind::m, SplitKind::n, SplitKind::k})
    for (OutputPlacement output : {OutputPlacement::root, OutputPlacement::sharded})
      for (InputPlacement inputs : {InputPlacement::replicated, InputPlacement::root}) {
        SCOPED_TRACE(fmt::format("{} output {} inputs {}", to_string(kind), to_string(output), to_string(inputs)));
        bench::fill_poison(data.inputs[0].d.get(), bench::operand_elements(p, 'D'), p.d_type);
        const SplitReport r = split_gemm(p, {operands_on(data, 0)}, forced(p, kind, 1, output, inputs), comm);
        synchronize_gpus(1);
        EXPECT_EQ(r.kind, kind);
        const auto got = multi::download_bytes(data.inputs[0].d.get(), d_bytes(p));
        EXPECT_TRUE(got == want) << "diff " << multi::match_results(got, want, p.d_type).diff;
      }
}

TEST(MultiNcclGpu, OneRankFp32PartialsChunksAndAlphaBeta) {
  REQUIRE_GPUS(1);
  REQUIRE_NCCL();
  const GemmProblem p = autogemm::testing::problem(512, 640, 1024);
  Data data = make_data(p, 1);
  MultiGpuComm comm = MultiGpuComm::local({0});
  const float alpha = 0.5f, beta = 0.25f;
  const auto want = single_gpu_result(p, data, alpha, beta);
  // Split K's several-GPU path on one: fp32 partials, the NCCL reduction, the finish kernel.
  SplitPlan fp32 = forced(p, SplitKind::k, 1);
  fp32.chosen.partial_type = DType::fp32;
  // Chunks: the communication stream, one reduction per chunk; split M's hand-over.
  for (const SplitPlan& plan : {fp32, chunked(forced(p, SplitKind::k, 1), 4), chunked(forced(p, SplitKind::m, 1), 2)}) {
    SCOPED_TRACE(fmt::format("{} chunks {} partials {}", to_string(plan.chosen.kind), plan.chosen.chunks,
                             to_string(plan.chosen.partial_type)));
    bench::fill_poison(data.inputs[0].d.get(), bench::operand_elements(p, 'D'), p.d_type);
    split_gemm(p, {operands_on(data, 0, alpha, beta)}, plan, comm);
    synchronize_gpus(1);
    const auto m = multi::match_results(multi::download_bytes(data.inputs[0].d.get(), d_bytes(p)), want, p.d_type);
    EXPECT_TRUE(m.ok()) << "diff " << m.diff << (m.finite ? "" : ", unwritten elements");
  }
}

TEST(MultiNcclGpu, BadInputIsRefusedBeforeAnythingRuns) {
  REQUIRE_GPUS(1);
  REQUIRE_NCCL();
  const GemmProblem p = autogemm::testing::problem(256, 256, 256);
  Data data = make_data(p, 1);
  MultiGpuComm comm = MultiGpuComm::local({0});
  const void* d = data.inputs[0].d.get();
  // A communicator whose size disagrees with the plan's GPUs.
  const std::string size = expect_invalid(
      [&] { split_gemm(p, {operands_on(data, 0)}, forced(p, SplitKind::m, 2), comm); }, "communicator size");
  EXPECT_TRUE(contains(size, "over 2 GPUs")) << size;
  // Operands for ranks this process does not drive.
  expect_invalid(
      [&] { split_gemm(p, {operands_on(data, 0), operands_on(data, 0)}, forced(p, SplitKind::m, 1), comm); },
      "operands");
  // Host memory where the rank's GPU needs its own.
  std::vector<unsigned char> host(bench::operand_elements(p, 'A') * 2);
  GemmOperands on_host = operands_on(data, 0);
  on_host.a = host.data();
  const std::string where = expect_invalid(
      [&] { split_gemm(p, {on_host}, forced(p, SplitKind::n, 1), comm); }, "operands[0].a (rank 0)");
  EXPECT_TRUE(contains(where, "host memory")) << where;
  // A plan made for another problem.
  expect_invalid(
      [&] { split_gemm(p, {operands_on(data, 0)}, forced(autogemm::testing::problem(256, 256, 512), SplitKind::m, 1), comm); },
      "plan");
  // A device index out of range.
  const std::string range = expect_invalid([] { MultiGpuComm::local({0, 64}); }, "devices");
  EXPECT_TRUE(contains(range, "device 64 is out of range")) << range;
  synchronize_gpus(1);
  EXPECT_TRUE(all_poison(d, p)) << "a refused call wrote D";
}

TEST(MultiNcclGpu, SeveralGpusEveryKindAndPlacementMatchesOneGpu) {
  REQUIRE_GPUS(2);
  REQUIRE_NCCL();
  const int gpus = gpu_count();
  const GemmProblem p = autogemm::testing::problem(1000, 768, 1280);  // uneven parts
  Data data = make_data(p, gpus);
  const auto want = single_gpu_result(p, data);
  std::vector<int> devices;
  for (int g = 0; g < gpus; ++g) devices.push_back(g);
  MultiGpuComm comm = MultiGpuComm::local(devices);
  ASSERT_EQ(comm.size(), gpus);
  const int64_t ldd = p.ldd_or_packed();
  for (SplitKind kind : {SplitKind::none, SplitKind::m, SplitKind::n, SplitKind::k})
    for (OutputPlacement output : {OutputPlacement::root, OutputPlacement::sharded})
      for (InputPlacement inputs : {InputPlacement::replicated, InputPlacement::root})
        for (int chunks : {1, 2}) {
          SCOPED_TRACE(fmt::format("{} output {} inputs {} chunks {}", to_string(kind), to_string(output),
                                   to_string(inputs), chunks));
          SplitPlan plan = forced(p, kind, gpus, output, inputs);
          if (chunks > 1) plan = chunked(plan, chunks);
          std::vector<GemmOperands> ops;
          for (int g = 0; g < gpus; ++g) {
            cuda_check(cudaSetDevice(g), "cudaSetDevice(test)");
            bench::fill_poison(data.inputs[g].d.get(), bench::operand_elements(p, 'D'), p.d_type);
            GemmOperands o = operands_on(data, g);
            if (inputs == InputPlacement::root && g > 0) o.a = o.b = nullptr;
            ops.push_back(o);
          }
          split_gemm(p, ops, plan, comm);
          synchronize_gpus(gpus);
          for (int g = 0; g < gpus; ++g) {
            if (output == OutputPlacement::root && g > 0) break;
            const auto got = multi::download_bytes(data.inputs[g].d.get(), d_bytes(p));
            if (output == OutputPlacement::root || kind == SplitKind::none) {
              const auto m = multi::match_results(got, want, p.d_type);
              EXPECT_TRUE(m.ok()) << "GPU " << g << " diff " << m.diff;
              break;
            }
            // Sharded: the rank's own rows (M, and K's shards) or columns (N).
            const auto& pieces = plan.chosen.pieces[g];
            int64_t r0 = pieces.front().row_begin, r1 = pieces.back().row_end;
            int64_t c0 = pieces.front().col_begin, c1 = pieces.front().col_end;
            if (kind == SplitKind::k) {
              const auto shard = multi::row_shards(p, gpus)[g];
              r0 = shard.begin;
              r1 = shard.end;
            }
            const auto m = multi::match_results(block(got, ldd, 2, r0, r1, c0, c1),
                                                block(want, ldd, 2, r0, r1, c0, c1), p.d_type);
            EXPECT_TRUE(m.ok()) << "GPU " << g << " part diff " << m.diff;
          }
        }
  // An operand on another rank's device.
  std::vector<GemmOperands> wrong;
  for (int g = 0; g < gpus; ++g) wrong.push_back(operands_on(data, g));
  wrong[1].a = data.inputs[0].a.get();
  const std::string message = expect_invalid(
      [&] { split_gemm(p, wrong, forced(p, SplitKind::m, gpus), comm); }, "operands[1].a (rank 1)");
  EXPECT_TRUE(contains(message, "is memory of device 0")) << message;
}

TEST(MultiScheduleGpu, EveryStrategyMatchesOneGpuBitwise) {
  REQUIRE_GPUS(1);
  const int gpus = std::min(gpu_count(), 4);
  const std::vector<GemmProblem> problems = {autogemm::testing::problem(64, 2112, 7168),
                                             autogemm::testing::problem(1024, 1024, 1024),
                                             autogemm::testing::problem(8, 4096, 1024),
                                             autogemm::testing::problem(512, 768, 256)};
  std::vector<Data> data;
  std::vector<std::vector<unsigned char>> want;
  for (const GemmProblem& p : problems) {
    data.push_back(make_data(p, gpus));
    want.push_back(single_gpu_result(p, data.back()));
  }
  std::vector<int> devices;
  for (int g = 0; g < gpus; ++g) devices.push_back(g);
  for (ScheduleStrategy s : {ScheduleStrategy::round_robin, ScheduleStrategy::load_balanced, ScheduleStrategy::priority}) {
    SCOPED_TRACE(std::string(to_string(s)));
    // Each problem three times; each GEMM its own D on every device.
    std::vector<ScheduledGemm> gemms;
    std::vector<std::vector<bench::DeviceBuffer>> d(problems.size() * 3);
    for (std::size_t i = 0; i < problems.size() * 3; ++i) {
      const GemmProblem& p = problems[i % problems.size()];
      ScheduledGemm g;
      g.problem = p;
      g.priority = int(i % 2);
      for (int dev = 0; dev < gpus; ++dev) {
        cuda_check(cudaSetDevice(dev), "cudaSetDevice(test)");
        d[i].emplace_back(d_bytes(p));
        bench::fill_poison(d[i].back().get(), bench::operand_elements(p, 'D'), p.d_type);
        GemmOperands o = operands_on(data[i % problems.size()], dev);
        o.d = d[i].back().get();
        g.operands.push_back(o);
      }
      gemms.push_back(g);
    }
    ScheduleOptions options;
    options.strategy = s;
    options.devices = devices;
    // The start gate (multi/start_gate.hpp): on for two strategies, off for priority, where the
    // result says why; the results are the same bit for bit either way.
    options.start_gate = s != ScheduleStrategy::priority;
    const ScheduleResult r = run_gemm_schedule(gemms, options);
    ASSERT_EQ(r.runs.size(), gemms.size());
    EXPECT_GT(r.makespan_us, 0.0);
    EXPECT_EQ(r.start_gated, options.start_gate) << r.start_gate_note;
    if (!options.start_gate) EXPECT_TRUE(contains(r.start_gate_note, "start_gate = false")) << r.start_gate_note;
    else EXPECT_EQ(r.start_gate_note, "");
    EXPECT_GE(r.resolve_us, 0.0);
    // Replicated operands, aligned rows: every launch resolved before the run.
    for (std::size_t i = 0; i < gemms.size(); ++i)
      EXPECT_TRUE(r.runs[i].resolved || r.runs[i].report.used_vendor) << "GEMM " << i;
    // The report: per GPU busy and idle add up to the makespan, the ideal is busy / G.
    ASSERT_EQ(r.gpus.size(), std::size_t(gpus));
    double busy = 0;
    int ran = 0;
    for (const GpuActivity& a : r.gpus) {
      EXPECT_NEAR(a.busy_us + a.idle_us, r.makespan_us, 1e-3 * r.makespan_us);
      EXPECT_LE(a.span_us, r.makespan_us + 1e-6);
      EXPECT_EQ(a.bytes_moved, 0);   // replicated: nothing copied
      busy += a.busy_us;
      ran += a.gemms;
    }
    EXPECT_EQ(ran, int(gemms.size()));
    EXPECT_NEAR(r.ideal_us, busy / gpus, 1e-6);
    EXPECT_GE(r.bound_us, r.ideal_us);
    EXPECT_GT(r.host_us_per_gemm, 0.0);
    for (std::size_t i = 0; i < gemms.size(); ++i) {
      const int g = r.runs[i].gpu;
      ASSERT_GE(g, 0);
      EXPECT_GT(r.runs[i].measured_us, 0.0);
      const auto got = multi::download_bytes(d[i][std::size_t(g)].get(), d_bytes(gemms[i].problem));
      EXPECT_TRUE(got == want[i % problems.size()]) << "GEMM " << i << " on GPU " << g;
    }
  }
  // Operands for fewer devices than the schedule's: refused before anything runs.
  std::vector<ScheduledGemm> short_list(1);
  short_list[0].problem = problems[0];
  ScheduleOptions options;
  options.devices = devices;
  expect_invalid([&] { run_gemm_schedule(short_list, options); }, "gemms[0].operands");
}

TEST(MultiScheduleGpu, OperandsOnOneGpuOrTheHostAreCopiedAndMatchOneGpu) {
  REQUIRE_GPUS(1);
  const int gpus = std::min(gpu_count(), 4);
  const std::vector<GemmProblem> problems = {autogemm::testing::problem(64, 2112, 7168),
                                             autogemm::testing::problem(1024, 1024, 1024),
                                             autogemm::testing::problem(8, 4096, 1024)};
  std::vector<Data> data;
  std::vector<std::vector<unsigned char>> want;
  for (const GemmProblem& p : problems) {
    data.push_back(make_data(p, 1));
    want.push_back(single_gpu_result(p, data.back()));
  }
  std::vector<int> devices;
  for (int g = 0; g < gpus; ++g) devices.push_back(g);
  for (OperandHome home : {OperandHome::device, OperandHome::host}) {
    SCOPED_TRACE(std::string(to_string(home)));
    std::vector<ScheduledGemm> gemms;
    std::vector<bench::DeviceBuffer> d_device;
    std::vector<std::vector<unsigned char>> host_a, host_b;
    std::vector<void*> host_d;
    for (std::size_t i = 0; i < problems.size() * 4; ++i) {
      const GemmProblem& p = problems[i % problems.size()];
      ScheduledGemm g;
      g.problem = p;
      g.placement = {home, 0};
      GemmOperands o = operands_on(data[i % problems.size()], 0);
      if (home == OperandHome::device) {
        cuda_check(cudaSetDevice(0), "cudaSetDevice(test)");
        d_device.emplace_back(d_bytes(p));
        bench::fill_poison(d_device.back().get(), bench::operand_elements(p, 'D'), p.d_type);
        o.d = d_device.back().get();
      } else {
        void* h = nullptr;
        cuda_check(cudaMallocHost(&h, d_bytes(p)), "cudaMallocHost(test)");
        std::memset(h, 0xff, d_bytes(p));
        host_d.push_back(h);
        o.d = h;
        // A and B in pageable host memory: the scheduler copies from them all the same.
        host_a.push_back(multi::download_bytes(o.a, bench::operand_elements(p, 'A') * 2));
        host_b.push_back(multi::download_bytes(o.b, bench::operand_elements(p, 'B') * 2));
        o.a = host_a.back().data();
        o.b = host_b.back().data();
      }
      g.operands = {o};
      gemms.push_back(g);
    }
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(test)");
    ScheduleOptions options;
    options.devices = devices;
    options.topology = topology_preset("nvlink", gpus);
    const ScheduleResult r = run_gemm_schedule(gemms, options);
    int64_t moved = 0;
    for (std::size_t i = 0; i < gemms.size(); ++i) {
      const GemmProblem& p = gemms[i].problem;
      const auto got = multi::download_bytes(gemms[i].operands[0].d, d_bytes(p));
      EXPECT_TRUE(got == want[i % problems.size()]) << "GEMM " << i << " on GPU " << r.runs[i].gpu;
      if (home == OperandHome::device && r.runs[i].gpu == 0) EXPECT_EQ(r.runs[i].bytes_moved, 0);
      else EXPECT_GT(r.runs[i].bytes_moved, 0) << i;
      // Staged operands go through gemm() in the run; those on the GPU that runs them do not.
      EXPECT_EQ(r.runs[i].resolved, r.runs[i].bytes_moved == 0) << i;
      moved += r.runs[i].bytes_moved;
    }
    int64_t reported = 0;
    for (const GpuActivity& a : r.gpus) reported += a.bytes_moved;
    EXPECT_EQ(reported, moved);
    for (void* h : host_d) cuda_check(cudaFreeHost(h), "cudaFreeHost(test)");
  }
  // A limit nothing fits in: refused before anything runs, naming the GEMM.
  std::vector<ScheduledGemm> one(1);
  one[0].problem = problems[1];
  one[0].placement = {OperandHome::host, 0};
  GemmOperands o = operands_on(data[1], 0);
  std::vector<unsigned char> a = multi::download_bytes(o.a, d_bytes(problems[1])), b = a, d = a;
  o.a = a.data();
  o.b = b.data();
  o.d = d.data();
  one[0].operands = {o};
  ScheduleOptions tight;
  tight.devices = devices;
  tight.topology = topology_preset("nvlink", gpus);
  tight.memory_limit_bytes.assign(std::size_t(gpus), 0);
  const std::string message = expect_invalid([&] { run_gemm_schedule(one, tight); }, "gemms[0]");
  EXPECT_TRUE(contains(message, "fits on no GPU")) << message;
}
