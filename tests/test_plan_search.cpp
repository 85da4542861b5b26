// plan_gemm over thousands of random problems and several devices: the chosen configuration
// always passes every hardware rule (legality, wgmma shape, TMA boxes, shared memory,
// registers) and covers the problem; non-Hopper devices and TMA-incompatible strides get the
// vendor library with the reason; the ranking is sorted and deterministic.
#include <gtest/gtest.h>

#include <algorithm>

#include <random>

#include "kernels/sm90/stream_k.cuh"
#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "cli/cli_common.hpp"
#include "plan/gemm_search.hpp"
#include "plan/operand_copy.hpp"
#include "plan/rules.hpp"
#include "plan/swap_ab.hpp"
#include "kernels/sm90/gemm_layout.cuh"
#include "plan/tma_rules.hpp"
#include "plan/wgmma_rules.hpp"

using namespace autogemm;

namespace {

GpuInfo hopper(int sm_count = 132, int smem_optin = 232448, int64_t l2_bytes = 50 << 20) {
  GpuInfo g;
  g.name = "test hopper " + std::to_string(sm_count);
  g.cc = {9, 0};
  g.caps = *arch_capabilities(g.cc);
  g.sm_count = sm_count;
  g.smem_per_block_optin_bytes = smem_optin;
  g.l2_bytes = l2_bytes;
  g.memory_bandwidth_gbps = 3352;
  g.sm_clock_khz = 1980000;
  return g;
}

std::vector<GpuInfo> hopper_devices() {
  return {hopper(),                                // H100 SXM numbers
          hopper(131),                             // odd SM count: no clusters can pair up
          hopper(66, 101376, 25 << 20),            // half a Hopper with 99 KB of opt-in smem
          device_preset("h100-pcie"), device_preset("h200")};
}

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Sizes 1..20000: half uniform, half log-uniform so small and odd sizes are common.
int64_t random_size(std::mt19937_64& rng) {
  if (rng() % 2) return 1 + int64_t(rng() % 20000);
  std::uniform_real_distribution<double> exponent(0, std::log(20000.0));
  return std::max<int64_t>(1, int64_t(std::exp(exponent(rng))));
}

GemmProblem random_problem(std::mt19937_64& rng, bool tma_friendly) {
  GemmProblem p;
  p.m = random_size(rng);
  p.n = random_size(rng);
  p.k = random_size(rng);
  p.layout = Layout(rng() % 4);
  p.a_type = p.b_type = p.d_type = (rng() % 2) ? DType::bf16 : DType::fp16;
  if (tma_friendly) {
    // Rows padded to 16 bytes, as a TMA user would allocate them.
    p.lda = round_up(a_is_k_major(p.layout) ? p.k : p.m, 8);
    p.ldb = round_up(b_is_k_major(p.layout) ? p.k : p.n, 8);
    p.ldd = round_up(p.n, 8);
  }
  return p;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Every hardware rule, checked directly against the rule functions (not only through
// legality_violation), for a configuration the planner proposed.
void expect_kernel_config_is_sound(const GemmProblem& p, const Candidate& c, const GpuInfo& d) {
  const GemmConfig& cfg = c.config;
  SCOPED_TRACE(cfg.describe());
  EXPECT_EQ(legality_violation(p, cfg, d), "");
  if (cfg.instruction == Instruction::mma) {
    // The decode family (test_decode_family.cpp has its rules): only at decode sizes.
    EXPECT_LE(p.m, plan::kDecodeMaxM);
    return;
  }
  ASSERT_EQ(cfg.instruction, Instruction::wgmma);
  // What the kernels compute: A and B copied into padded rows where the caller's break TMA's
  // stride rule (plan/operand_copy.hpp), and D^T = B^T A^T where the configuration swaps
  // (plan/swap_ab.hpp: offered for up to 32 rows of A, one tile holding them all, or for 16-bit
  // rows of A to fit along wgmma's N, or in the weight-bound middle one tile column).
  const GemmProblem k = plan::kernel_problem(p, cfg);
  if (cfg.swap_ab) {
    EXPECT_EQ(k.m, p.n);
    EXPECT_EQ(k.n, p.m);
    if (p.m <= plan::kSwapAbMaxM) {
      EXPECT_EQ(ceil_div(k.n, cfg.block_n), 1) << "one tile holds every row of A";
    } else if (plan::weight_bound_middle(p)) {
      EXPECT_GE(cfg.block_n, p.m) << "the middle's swapped tiles hold every row in one column";
    } else {
      EXPECT_EQ(dtype_bytes(p.a_type), 2);
      EXPECT_GE(p.m, plan::kSwapAbFitMinM);
      EXPECT_LE(p.m, plan::kSwapAbFitMaxM);
      EXPECT_GE(p.n, plan::kSwapAbFitMinN);
      EXPECT_GE(p.k, plan::kSwapAbFitMinK);
    }
  }

  plan::WgmmaShape shape;
  shape.m = 64;
  shape.n = cfg.block_n;
  shape.k = plan::wgmma_k(k.a_type);
  shape.a_type = k.a_type;
  shape.b_type = k.b_type;
  shape.a_k_major = a_is_k_major(k.layout);
  shape.b_k_major = b_is_k_major(k.layout);
  EXPECT_EQ(plan::wgmma_violation(shape, d.cc), "");
  const KernelFields fields = plan::kernel_fields(k, cfg);
  const auto boxes = plan::gemm_tma_boxes(k, fields);
  // A, B, and D unless D is stored by the threads (rows ending mid 16-byte chunk, D's or C's rows a
  // stride TMA cannot describe). Swapped, the caller's rows are the kernel's M columns.
  const int out_bytes = dtype_bytes(k.d_type);
  const bool thread_stores =
      cfg.swap_ab ? d_needs_thread_stores(plan::swapped_problem(k)) : d_needs_thread_stores(k);
  EXPECT_EQ(fields.store_path != StorePath::tma, thread_stores);
  // D in 128-byte boxes and a tail box, one map each (kernels/sm90/gemm_layout.cuh); D^T in
  // boxes of block_n caller rows by 128 bytes, one map.
  const std::size_t d_maps =
      cfg.swap_ab ? 1
                  : (sm90::d_main_boxes(cfg.block_n, out_bytes) > 0 ? 1 : 0) +
                        (sm90::d_tail_box_cols(cfg.block_n, out_bytes) > 0 ? 1 : 0);
  EXPECT_EQ(boxes.size(), fields.store_path == StorePath::tma ? 2 + d_maps : 2u);
  for (const auto& box : boxes) EXPECT_EQ(plan::tma_violation(box.description), "") << box.operand;

  EXPECT_LE(plan::gemm_smem_bytes(k, fields), d.smem_per_block_optin_bytes);
  EXPECT_GE(cfg.num_stages, 2);
  EXPECT_LE(cfg.num_stages, 8);
  if (cfg.num_stages < 8) {  // the deepest ring that fits
    KernelFields deeper = fields;
    ++deeper.config.num_stages;
    EXPECT_GT(plan::gemm_smem_bytes(k, deeper), d.smem_per_block_optin_bytes);
  }
  EXPECT_EQ(cfg.block_m % (64 * cfg.num_consumers), 0);
  EXPECT_LE(plan::accumulator_registers(cfg),
            plan::consumer_register_budget(fields) - plan::kRegisterHeadroom);
  EXPECT_LE(cfg.cluster_m * cfg.cluster_n, 2);

  // The tiles cover the problem.
  const Prediction& pr = c.prediction;
  EXPECT_EQ(pr.num_tiles, ceil_div(k.m, cfg.block_m) * ceil_div(k.n, cfg.block_n) * cfg.split_k);
  EXPECT_GE(ceil_div(k.m, cfg.block_m) * cfg.block_m, k.m);
  EXPECT_GE(ceil_div(k.n, cfg.block_n) * cfg.block_n, k.n);
  // With the n-tail kernel the last column of tiles counts as the narrow tiles' share; with
  // stream-K the shared tiles are one more wave of runs, on every SM.
  const int64_t shared = cfg.stream_k ? autogemm::sm90::stream_k_tiles(int(pr.num_tiles), d.sm_count) : 0;
  EXPECT_TRUE(!cfg.stream_k || shared > 0) << "stream-K offered with whole waves";
  EXPECT_GE(pr.waves * d.sm_count, cfg.n_tail_kernel
                                       ? ceil_div(k.m, cfg.block_m) * (k.n / cfg.block_n)
                                       : pr.num_tiles - shared);
  if (cfg.stream_k) EXPECT_EQ(pr.busy_sms, d.sm_count);
  EXPECT_GE(pr.busy_sms, 1);
  EXPECT_LE(pr.busy_sms, d.sm_count);
  EXPECT_GT(pr.time_us, 0);
}

}  // namespace

TEST(PlanSearch, RandomProblemsGetSoundConfigurations) {
  std::mt19937_64 rng(20240611);
  const auto devices = hopper_devices();
  int kernel_plans = 0, copy_plans = 0, vendor_plans = 0;
  for (int i = 0; i < 2400; ++i) {
    const GpuInfo& device = devices[i % devices.size()];
    const GemmProblem p = random_problem(rng, /*tma_friendly=*/i % 4 != 3);
    SCOPED_TRACE(testing::Message() << "problem " << i << ": " << p.m << "x" << p.n << "x" << p.k
                                    << " " << to_string(p.layout) << " " << to_string(p.a_type)
                                    << " on " << device.name);
    const Plan plan = plan_gemm(p, device);
    ASSERT_FALSE(plan.candidates.empty());
    // Only A's and B's strides can send a problem to cuBLASLt (D and C are written and read by
    // the threads where TMA cannot describe them), and only where copying A and B into padded
    // rows was predicted to lose to its kernels for unaligned rows.
    const std::string tma_why = tma_load_incompatibility(p);
    if (plan.best().config.instruction == Instruction::vendor) {
      ++vendor_plans;
      ASSERT_FALSE(tma_why.empty());
      EXPECT_NE(plan.path_reason.find(tma_why), std::string::npos) << plan.path_reason;
      EXPECT_NE(plan.path_reason.find("loses to cuBLASLt"), std::string::npos) << plan.path_reason;
      EXPECT_TRUE(plan.spec.vendor);
      continue;
    }
    ++kernel_plans;
    EXPECT_EQ(plan.spec.copy_a.active() || plan.spec.copy_b.active(), !tma_why.empty());
    if (!tma_why.empty()) ++copy_plans;
    expect_kernel_config_is_sound(p, plan.best(), device);
    if (HasFatalFailure() || HasNonfatalFailure()) return;  // one report, not thousands
    // Ranked by predicted time, up to the planner's 2% tie band (gemm_search.cpp).
    for (std::size_t c = 1; c < plan.candidates.size(); ++c)
      ASSERT_LE(plan.candidates[c - 1].prediction.time_us,
                plan.candidates[c].prediction.time_us * 1.0201);
    // The ranking's numbers are the cost model's, copies included.
    EXPECT_EQ(predict(p, plan.best().config, device).time_us, plan.best().prediction.time_us);
    EXPECT_EQ(plan.best().prediction.operand_copy_us > 0, !tma_why.empty());
  }
  // Every path was exercised.
  EXPECT_GT(kernel_plans, 1500);
  EXPECT_GT(copy_plans, 100);
  EXPECT_GT(vendor_plans, 0);
}

TEST(PlanSearch, EveryCandidateIsLegalAndEveryRejectionIsTheFirstBrokenRule) {
  std::mt19937_64 rng(7);
  const auto devices = hopper_devices();
  for (int i = 0; i < 40; ++i) {
    const GpuInfo& device = devices[i % devices.size()];
    const GemmProblem p = random_problem(rng, true);
    SCOPED_TRACE(testing::Message() << p.m << "x" << p.n << "x" << p.k << " "
                                    << to_string(p.layout) << " on " << device.name);
    const Plan plan = plan_gemm(p, device);
    for (const Candidate& c : plan.candidates) expect_kernel_config_is_sound(p, c, device);
    EXPECT_FALSE(plan.rejected.empty());  // e.g. 128x256 with one consumer never fits
    for (const RejectedConfig& r : plan.rejected) {
      EXPECT_FALSE(r.reason.empty());
      EXPECT_EQ(legality_violation(p, r.config, device), r.reason) << r.config.describe();
    }
    if (HasFailure()) return;
  }
}

TEST(PlanSearch, Fp8ProblemsUseTheFp8Family) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 200; ++i) {
    GemmProblem p;
    p.m = random_size(rng);
    p.n = random_size(rng);
    p.k = round_up(random_size(rng), 16);
    p.a_type = p.b_type = DType::e4m3;
    p.d_type = DType::bf16;
    p.scaling = Scaling::block_1x128_128x128;
    p.ldd = round_up(p.n, 8);
    const GpuInfo device = hopper();
    const Plan plan = plan_gemm(p, device);
    SCOPED_TRACE(testing::Message() << p.m << "x" << p.n << "x" << p.k);
    expect_kernel_config_is_sound(p, plan.best(), device);
    if (plan.best().config.instruction == Instruction::wgmma)
      EXPECT_EQ(plan.best().config.block_k, 128);  // 128 bytes of 1-byte inputs
    if (HasFailure()) return;
  }
}

// Block-scaled FP8 with more than 11 k-blocks gets no multicast cluster and no 256x64 ordered
// issue among the candidates (measured 3-8% slower on the H100); K = 512 keeps multicast,
// per-tensor FP8 and BF16 keep it at any K.
TEST(PlanSearch, Fp8MulticastAndOrderedIssueWhereTheyMeasuredFaster) {
  const GpuInfo device = hopper();
  auto fp8 = [](int64_t m, int64_t n, int64_t k, Scaling scaling) {
    GemmProblem p = cli::make_problem(m, n, k, "fp8", "nt", 0, 0, 0);   // block-scaled e4m3
    p.scaling = scaling;
    return p;
  };
  auto has = [&](const GemmProblem& p, auto predicate) {
    const Plan plan = plan_gemm(p, device);
    return std::any_of(plan.candidates.begin(), plan.candidates.end(),
                       [&](const Candidate& c) { return predicate(c.config); });
  };
  auto multicast = [](const GemmConfig& c) { return c.multicast != Multicast::none; };
  auto narrow_oi = [](const GemmConfig& c) { return c.ordered_issue && c.block_n < 128; };
  const GemmProblem long_k = fp8(4096, 2112, 7168, Scaling::block_1x128_128x128);
  EXPECT_FALSE(has(long_k, multicast));
  EXPECT_FALSE(has(long_k, narrow_oi));
  EXPECT_TRUE(has(long_k, [](const GemmConfig& c) { return c.ordered_issue; }));   // 256x128
  // The n-tail kernel (measured 108.7 against 120.6 us on the H100); not with
  // ordered issue, whose narrow tail tiles were slow.
  EXPECT_EQ(plan_gemm(long_k, device).best().config.describe(),
            "128x128x128 s5 c2 p g8 pb2 ntk");
  EXPECT_FALSE(has(long_k, [](const GemmConfig& c) { return c.ordered_issue && c.n_tail_kernel; }));
  EXPECT_TRUE(has(fp8(4096, 32768, 512, Scaling::block_1x128_128x128), multicast));
  EXPECT_TRUE(has(fp8(4096, 2112, 7168, Scaling::per_tensor), multicast));
  GemmProblem bf16;   // default types: bf16 in and out
  bf16.m = bf16.n = 4096;
  bf16.k = 8192;
  EXPECT_TRUE(plan::multicast_offered(bf16, false));
  EXPECT_FALSE(plan::multicast_offered(bf16, true));
}

// Stream-K where it measured faster (gemm_search.hpp stream_k_offered): the middle's swapped
// one-consumer tiles with a partial wave past the first; not one wave of tiles, not short K,
// not FP8, not two consumers.
TEST(PlanSearch, StreamKOnlyWhereItMeasuredFaster) {
  const GpuInfo device = device_preset("h200");
  auto pick = [&](int64_t m, int64_t n, int64_t k, const char* dtype) {
    return plan_gemm(cli::make_problem(m, n, k, dtype, "nt", 0, 0, 0), device).best().config;
  };
  const GemmConfig middle = pick(130, 18432, 7168, "bf16");
  EXPECT_TRUE(middle.stream_k && middle.swap_ab) << middle.describe();
  EXPECT_FALSE(pick(142, 10240, 8192, "bf16").stream_k);   // 80 tiles: one wave
  EXPECT_FALSE(pick(142, 24576, 1536, "bf16").stream_k);   // 24 k-blocks
  EXPECT_FALSE(pick(130, 18432, 7168, "fp8").stream_k);
  EXPECT_FALSE(pick(225, 57344, 8192, "bf16").stream_k);   // two consumers' tiles
  for (const char* dtype : {"bf16", "fp8"})
    for (const Candidate& c : plan_gemm(cli::make_problem(1153, 7168, 2048, dtype, "nt", 0, 0, 0),
                                        device).candidates)
      EXPECT_FALSE(c.config.stream_k) << c.config.describe();
  // A forced stream-K configuration breaking a rule is refused naming it.
  const GemmProblem p = cli::make_problem(130, 18432, 7168, "bf16", "nt", 0, 0, 0);
  EXPECT_NE(legality_violation(p, GemmConfig::parse("128x136x64 s5 c1 p g8 cl2x1/none stk swap"),
                               device)
                .find("stream_k with cluster 2x1"),
            std::string::npos);
  EXPECT_NE(legality_violation(p, GemmConfig::parse("128x136x64 s5 c1 p g8 sk2 stk swap"), device)
                .find("stream_k with split_k = 2"),
            std::string::npos);
  EXPECT_NE(legality_violation(p, GemmConfig::parse("128x136x64 s5 c1 g8 stk swap"), device)
                .find("stream_k with a non-persistent grid"),
            std::string::npos);
  EXPECT_NE(legality_violation(cli::make_problem(64, 256, 64, "bf16", "nt", 0, 0, 0),
                               GemmConfig::parse("64x64x64 s4 c1 p g8 stk"), device)
                .find("every SM's run needs at least one k-block"),
            std::string::npos);
}

// At decode sizes (M <= 128) no input type gets a multicast cluster: every measured pair there
// was slower than the same tiles alone (H100: FP8 64x32 A multicast 13-20% slower, BF16
// 64 x 2112 x 7168 64x16x128 cl1x2/a 20.9 us against 17.5); above it BF16 keeps them.
// The measured-fastest BF16 choice of the weakest decode row is then the planner's.
TEST(PlanSearch, NoMulticastAtDecodeSizes) {
  const GpuInfo device = hopper();
  auto bf16 = [](int64_t m, int64_t n, int64_t k) {
    return cli::make_problem(m, n, k, "bf16", "nt", 0, 0, 0);
  };
  auto any_multicast = [&](const GemmProblem& p) {
    const Plan plan = plan_gemm(p, device);
    return std::any_of(plan.candidates.begin(), plan.candidates.end(), [](const Candidate& c) {
      return c.config.multicast != Multicast::none;
    });
  };
  for (int64_t m : {1, 64, 128}) {
    EXPECT_FALSE(any_multicast(bf16(m, 2112, 7168))) << m;
    EXPECT_FALSE(plan::multicast_offered(bf16(m, 32768, 512), false)) << m;
  }
  EXPECT_TRUE(any_multicast(bf16(129, 32768, 512)));
  EXPECT_TRUE(any_multicast(bf16(4096, 2112, 7168)));
  // 64 x 2112 x 7168 bf16 on the H100: 17.4 us alone against 21.3 with cl1x2/a and 18.4 for
  // the model's former first choice, 64x32x64 sk2 (configs-bf16-decode-no-multicast.log).
  EXPECT_EQ(plan_gemm(bf16(64, 2112, 7168), device).best().config.describe(),
            "64x16x128 s8 c1 p g8");
}

TEST(PlanSearch, NonHopperDevicesGetTheVendorLibrary) {
  GemmProblem p;
  p.m = p.n = p.k = 4096;
  for (const char* name : {"a100-80g", "l40s", "b200", "rtx5090", "gb10"}) {
    const GpuInfo device = device_preset(name);
    const Plan plan = plan_gemm(p, device);
    ASSERT_EQ(plan.candidates.size(), 1u) << name;
    EXPECT_EQ(plan.best().config.instruction, Instruction::vendor) << name;
    EXPECT_TRUE(plan.spec.vendor) << name;
    EXPECT_TRUE(plan.spec.kernels.empty()) << name;   // the library runs its own kernels
    EXPECT_NE(plan.path_reason.find(name), std::string::npos) << plan.path_reason;
    EXPECT_NE(plan.path_reason.find(device.caps.arch_name), std::string::npos) << plan.path_reason;
    EXPECT_NE(plan.path_reason.find("cuBLASLt"), std::string::npos) << plan.path_reason;
    EXPECT_GT(plan.best().prediction.time_us, 0);
  }
  const Plan a100 = plan_gemm(p, device_preset("a100-80g"));
  EXPECT_NE(a100.path_reason.find("no wgmma/TMA"), std::string::npos) << a100.path_reason;
}

TEST(PlanSearch, HopperWithoutLegalTileFallsBackWithTheReason) {
  // A Hopper with 16 KB of opt-in shared memory cannot hold two stages of any tile.
  const Plan plan = plan_gemm([] {
    GemmProblem p;
    p.m = p.n = p.k = 1024;
    return p;
  }(), hopper(132, 16384));
  ASSERT_EQ(plan.candidates.size(), 1u);
  EXPECT_EQ(plan.best().config.instruction, Instruction::vendor);
  EXPECT_NE(plan.path_reason.find("smem"), std::string::npos) << plan.path_reason;
}

TEST(PlanSearch, TinyNUsesTheNarrowWgmma) {
  GemmProblem p;
  p.m = 4096;
  p.n = 8;
  p.k = 4096;
  const Plan plan = plan_gemm(p, hopper());
  EXPECT_EQ(plan.best().config.block_n, 8);
}

TEST(PlanSearch, Deterministic) {
  GemmProblem p;
  p.m = 3000;
  p.n = 5000;
  p.k = 2048;
  const Plan a = plan_gemm(p, hopper()), b = plan_gemm(p, hopper());
  ASSERT_EQ(a.candidates.size(), b.candidates.size());
  for (std::size_t i = 0; i < a.candidates.size(); ++i)
    EXPECT_EQ(a.candidates[i].config, b.candidates[i].config);
  EXPECT_EQ(a.path_reason, b.path_reason);
  EXPECT_NE(a.path_reason.find("wgmma"), std::string::npos);
}

TEST(PlanSearch, BadInputNamesTheArgument) {
  GemmProblem p;
  p.m = 0;
  p.n = p.k = 64;
  try {
    plan_gemm(p, hopper());
    FAIL() << "no error for m = 0";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "m");
    EXPECT_NE(std::string(e.what()).find("m = 0"), std::string::npos) << e.what();
  }
  p.m = 64;
  p.lda = 10;  // below the row length K = 64
  EXPECT_THROW(plan_gemm(p, hopper()), InvalidArgument);
}

// Operands that cannot fit the device's memory are refused by planning and by a forced
// configuration alike, with the bytes needed and available: a preset against its memory, a
// present GPU against what its profile says it has.
TEST(PlanSearch, OperandsPastTheDevicesMemoryAreRefused) {
  GemmProblem p;
  p.m = p.n = p.k = int64_t(1) << 30;  // A, B and D: 2 EiB each in bf16
  const GpuInfo h100 = device_preset("h100-sxm");
  const std::string available = std::to_string(h100.memory_total_bytes);
  for (int forced = 0; forced < 2; ++forced) {
    try {
      if (forced)
        make_kernel_spec(p, GemmConfig::parse("128x256x64 s3 c2 p g8"), h100);
      else
        plan_gemm(p, h100);
      FAIL() << "no error (forced: " << forced << ")";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "problem");
      EXPECT_NE(e.value().find("1073741824 x 1073741824 x 1073741824"), std::string::npos)
          << e.what();
      EXPECT_NE(e.rule().find("6917529027641081856 bytes"), std::string::npos) << e.what();
      EXPECT_NE(e.rule().find(available + " bytes"), std::string::npos) << e.what();
      EXPECT_NE(e.rule().find("h100-sxm"), std::string::npos) << e.what();
    }
  }
  // Just past a preset's memory, counting C when it is read; just inside is planned.
  const GpuInfo h200 = device_preset("h200");
  p.m = 1;
  p.n = 1024;
  // bf16 A (m x k), B (n x k) and D (m x n): 2 (m + n) k + 2 m n bytes. The largest k that
  // fits leaves 886 bytes, less than C's 2048.
  p.k = (h200.memory_total_bytes - 2 * p.m * p.n) / (2 * (p.m + p.n));
  EXPECT_NO_THROW(plan_gemm(p, h200));
  p.reads_c = true;
  EXPECT_THROW(plan_gemm(p, h200), InvalidArgument);
  p.reads_c = false;
  p.k += 1;
  EXPECT_THROW(plan_gemm(p, h200), InvalidArgument);
  // A device whose memory is unknown (0: a hand-built description) is not checked.
  EXPECT_NO_THROW(plan_gemm(p, hopper()));
}

// Every candidate the planner ranks is one its text names: describe() then parse() gives the
// same configuration back, so what `autogemm plan` prints can be forced with --config (group 1
// along N once printed as group 1 along M, a different tile order).
TEST(PlanSearch, EveryCandidateRoundTripsThroughItsText) {
  for (const GemmProblem& p :
       {cli::make_problem(32, 7168, 2048, "bf16", "nt", 0, 0, 0),
        cli::make_problem(4096, 4096, 4096, "bf16", "tn", 0, 0, 0),
        cli::make_problem(8, 4096, 14336, "bf16", "nt", 0, 0, 0),
        cli::make_problem(4096, 2112, 7168, "fp8", "nt", 0, 0, 0)}) {
    const Plan plan = plan_gemm(p, hopper());
    ASSERT_FALSE(plan.candidates.empty());
    for (const Candidate& c : plan.candidates) {
      const GemmConfig back = GemmConfig::parse(c.config.describe());
      EXPECT_EQ(back, c.config) << c.config.describe();
    }
  }
}
