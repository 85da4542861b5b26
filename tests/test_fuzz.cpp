// autogemm fuzz (src/bench/fuzz.hpp): what it draws, that a case replays alone, that its forced
// configurations are legal, the CPU variant CI runs (300 cases: planning, rules, specs, NVRTC),
// and on a GPU a short run in which every case must pass.
#include <gtest/gtest.h>

#include <set>

#include "autogemm/errors.hpp"
#include "autogemm/kernel_spec.hpp"
#include "bench/fuzz.hpp"
#include "cli_test_util.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;

namespace {

bench::FuzzOptions options(int64_t cases, uint64_t seed) {
  bench::FuzzOptions o;
  o.cases = cases;
  o.seed = seed;
  return o;
}

}  // namespace

TEST(Fuzz, DrawsTheWholeSpaceWithinItsLimits) {
  const GpuInfo h100 = device_preset("h100-sxm");
  const bench::FuzzOptions o = options(2000, 3);
  const auto cases = bench::draw_fuzz_cases(o, h100);
  ASSERT_EQ(cases.size(), 2000u);
  std::set<Layout> layouts;
  std::set<Scaling> scalings;
  std::set<DType> outputs;
  int64_t decode = 0, edge = 0, forced = 0, with_c = 0, padded = 0, alpha = 0, big = 0;
  for (const auto& c : cases) {
    const GemmProblem& p = c.problem;
    layouts.insert(p.layout);
    scalings.insert(p.scaling);
    outputs.insert(p.d_type);
    decode += p.m <= 32;
    edge += (p.m % 64 <= 1 || p.m % 64 >= 63 || p.n % 64 <= 1 || p.n % 64 >= 63) ? 1 : 0;
    forced += c.config.has_value();
    with_c += p.reads_c;
    padded += p.lda != 0 || p.ldb != 0 || p.ldd != 0;
    alpha += c.alpha != 1.0f;
    big += std::max({p.m, p.n, p.k}) >= 4096;
    EXPECT_NO_THROW(validate(p));
    EXPECT_LE(p.m * p.n, o.max_output_elements);
    EXPECT_LE(double(p.m) * p.n * p.k, double(o.max_work));
    EXPECT_EQ(p.reads_c, c.beta != 0.0f);
    if (dtype_bytes(p.a_type) == 1) EXPECT_EQ(p.layout, Layout::nt);
  }
  EXPECT_EQ(layouts.size(), 4u);
  EXPECT_EQ(scalings.size(), 3u);   // none (16-bit), per-tensor, block
  EXPECT_GE(outputs.size(), 3u);
  EXPECT_GT(decode, 200);
  EXPECT_GT(edge, 300);
  EXPECT_GT(forced, 400);
  EXPECT_GT(with_c, 400);
  EXPECT_GT(padded, 400);
  EXPECT_GT(alpha, 400);
  EXPECT_GT(big, 100);
}

TEST(Fuzz, ACaseReplaysAloneAndItsForcedConfigurationIsLegal) {
  const GpuInfo h100 = device_preset("h100-sxm");
  const bench::FuzzOptions o = options(400, 11);
  const auto all = bench::draw_fuzz_cases(o, h100);
  for (int64_t i : {0, 17, 233, 399}) {
    const auto one = bench::draw_fuzz_cases(o, h100, i);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].problem.m, all[size_t(i)].problem.m);
    EXPECT_EQ(one[0].problem.ldd, all[size_t(i)].problem.ldd);
    EXPECT_EQ(one[0].config, all[size_t(i)].config);
    EXPECT_EQ(one[0].alpha, all[size_t(i)].alpha);
    EXPECT_EQ(one[0].data_seed, all[size_t(i)].data_seed);
    EXPECT_NE(bench::fuzz_reproducer(one[0], o).find("--only " + std::to_string(i)),
              std::string::npos);
  }
  for (const auto& c : all)
    if (c.config) EXPECT_NO_THROW(make_kernel_spec(c.problem, *c.config, h100)) << c.config->describe();
  EXPECT_THROW(bench::draw_fuzz_cases(o, h100, 400), InvalidArgument);
}

// The CPU variant as CI runs it: every case planned or forced into a spec and checked, and
// the first distinct kernels compiled with NVRTC.
TEST(Fuzz, CpuVariantOf300Cases) {
  const auto run = autogemm::testing::run_cli("fuzz --cpu --cases 300 --seed 1 --compile-limit 24");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("300 passed, 0 failed"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("24 distinct kernels compiled"), std::string::npos) << run.out;
  const auto bad = autogemm::testing::run_cli("fuzz --cpu --cases 10 --only 10");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--only"), std::string::npos) << bad.out;
}

// On a GPU: a short run through autogemm::gemm(), every case checked element by element.
TEST(FuzzGpu, ShortRunPasses) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  const bench::FuzzOptions o = options(300, 5);
  const auto cases = bench::draw_fuzz_cases(o, gpu);
  bench::precompile_fuzz_kernels(cases, gpu, 16);
  bench::FuzzRunner runner(cases);
  for (const auto& c : cases) {
    const bench::FuzzOutcome r = runner.run(c);
    EXPECT_TRUE(r.passed) << r.error << " diff " << r.diff << " bad " << r.bad << " guard "
                          << r.guard << " " << r.first_bad << "\n"
                          << bench::fuzz_reproducer(c, o);
  }
}

// The case the first 10,000-case run failed (seed 2026, case 6196): BF16 tn through cuBLASLt
// with D's rows 2-byte aligned (ldd 12163) and C read. cuBLASLt was told the pointer's
// alignment, not the rows', and faulted with a misaligned address. The planner now stores
// such rows with our threads, so cuBLASLt is forced, then the planner's choice runs the same.
TEST(FuzzGpu, CuBLASLtWithRowsTwoByteAligned) {
  AUTOGEMM_REQUIRE_GPU();
  bench::FuzzCase c;
  c.index = 6196;
  c.input = bench::FuzzInput::bf16;
  c.problem.m = 152;
  c.problem.n = 12162;
  c.problem.k = 1024;
  c.problem.layout = Layout::tn;
  c.problem.lda = 152;
  c.problem.ldb = 12232;
  c.problem.ldc = 12192;
  c.problem.ldd = 12163;
  c.alpha = 1.0f;
  c.beta = -1.03f;
  c.problem.reads_c = true;
  c.config = GemmConfig::parse("cuBLASLt");
  bench::FuzzCase planned = c;
  planned.config.reset();
  bench::FuzzRunner runner({c, planned});
  const bench::FuzzOutcome r = runner.run(c);
  EXPECT_EQ(r.config, "cuBLASLt");
  EXPECT_TRUE(r.passed) << r.error << " diff " << r.diff << " bad " << r.bad << " " << r.first_bad;
  const bench::FuzzOutcome ours = runner.run(planned);
  EXPECT_NE(ours.config, "cuBLASLt");
  EXPECT_TRUE(ours.passed) << ours.error << " diff " << ours.diff << " bad " << ours.bad << " "
                           << ours.first_bad;
}
