// Tensor-parallel planning (plan_tp), shard shapes, bands, workspace layout and flag indices:
// host only, on presets.
#include <gtest/gtest.h>

#include <set>

#include "autogemm/tensor_parallel.hpp"
#include "multi/tp_plan.hpp"
#include "multi/tp_trace.hpp"
#include "multi_test_util.hpp"

using namespace autogemm;
using autogemm::testing::contains;
using autogemm::testing::expect_invalid;

namespace {

TpProblem tp(TpPattern pattern, int world, int64_t m, int64_t n, int64_t k) {
  TpProblem p;
  p.pattern = pattern, p.world = world, p.m = m, p.n = n, p.k = k;
  return p;
}

TpPlan plan_on_h200(const TpProblem& p, const TpOptions& o = {}) {
  return plan_tp(p, device_preset("h200"), topology_preset("nvlink", p.world), o);
}

// Every (step, band) of the plan is computed by exactly one launch, whose rows are its bands'
// rows; a launch of several bands signals each (its problem asks for them) and a step's
// launches run its bands in order. Returns the launches per step.
std::map<int, int> expect_launches_cover(const TpPlan& plan, int steps) {
  const auto cut = multi::tp_plan_bands(plan);
  std::set<std::pair<int, int>> seen;
  std::map<int, int> launches, next_band;
  for (const TpStep& s : plan.steps) {
    EXPECT_GE(s.bands, 1);
    EXPECT_EQ(s.band, next_band[s.step] % plan.bands) << "step " << s.step << ": bands in order";
    next_band[s.step] = s.band + s.bands;
    int64_t rows = 0;
    for (int b = s.band; b < s.band + s.bands; ++b) {
      EXPECT_TRUE(seen.insert({s.step, b}).second) << "step " << s.step << " band " << b << " twice";
      rows += cut[std::size_t(b)].size();
    }
    EXPECT_EQ(s.rows, rows);
    EXPECT_EQ(multi::tp_launch_problem(plan.problem, s).signal_bands, s.bands > 1 ? s.bands : 0);
    ++launches[s.step];
  }
  EXPECT_EQ(int(seen.size()), steps * plan.bands);
  return launches;
}

}  // namespace

TEST(TensorParallelPlan, ShardShapesFollowThePattern) {
  const TpShardShapes ag = tp_shard_shapes(tp(TpPattern::all_gather, 4, 8192, 28672, 8192), 2);
  EXPECT_EQ(ag.a_rows, 2048); EXPECT_EQ(ag.a_cols, 8192);
  EXPECT_EQ(ag.b_rows, 7168); EXPECT_EQ(ag.d_rows, 8192); EXPECT_EQ(ag.d_cols, 7168);
  const TpShardShapes rs = tp_shard_shapes(tp(TpPattern::reduce_scatter, 4, 8192, 8192, 28672), 3);
  EXPECT_EQ(rs.a_rows, 8192); EXPECT_EQ(rs.a_cols, 7168); EXPECT_EQ(rs.d_rows, 2048);
  EXPECT_EQ(rs.d_row_offset, 3 * 2048);
  const TpShardShapes ar = tp_shard_shapes(tp(TpPattern::all_reduce, 2, 4096, 4096, 4096), 1);
  EXPECT_EQ(ar.d_rows, 4096); EXPECT_EQ(ar.d_row_offset, 0); EXPECT_EQ(ar.b_cols, 2048);
}

TEST(TensorParallelPlan, BadProblemsNameTheField) {
  expect_invalid([] { validate(tp(TpPattern::all_gather, 3, 1000, 300, 64)); }, "m");
  expect_invalid([] { validate(tp(TpPattern::all_gather, 4, 1024, 1002, 64)); }, "n");
  // K / world must be whole 16-byte rows of bf16: 8 elements.
  expect_invalid([] { validate(tp(TpPattern::reduce_scatter, 4, 1024, 1024, 4 * 12)); }, "k");
  TpProblem fp8 = tp(TpPattern::reduce_scatter, 2, 1024, 1024, 2 * 192);
  fp8.a_type = fp8.b_type = DType::e4m3;
  fp8.scaling = Scaling::block_1x128_128x128;
  const std::string what = expect_invalid([&] { validate(fp8); }, "k");
  EXPECT_TRUE(contains(what, "scale groups")) << what;
  TpProblem mixed = tp(TpPattern::all_gather, 2, 1024, 1024, 1024);
  mixed.b_type = DType::fp16;
  expect_invalid([&] { validate(mixed); }, "types");
  expect_invalid([] { validate(tp(TpPattern::all_gather, 0, 1024, 1024, 1024)); }, "world");
  TpProblem narrow = tp(TpPattern::all_gather, 2, 1024, 1024, 1024);
  narrow.lda = 100;
  expect_invalid([&] { validate(narrow); }, "lda");
  expect_invalid([] { plan_tp(tp(TpPattern::all_gather, 2, 1024, 1024, 1024), device_preset("h200"),
                              topology_preset("nvlink", 4)); },
                 "topology");
  TpOptions bands;
  bands.bands = 9;
  expect_invalid([&] { plan_on_h200(tp(TpPattern::all_gather, 2, 1024, 1024, 1024), bands); }, "bands");
  EXPECT_FALSE(parse_tp_pattern("all-to-all"));
  EXPECT_EQ(parse_tp_pattern("rs"), TpPattern::reduce_scatter);
  EXPECT_EQ(parse_tp_transport("nccl"), TpTransport::nccl);
}

TEST(TensorParallelPlan, CopyEnginesHideTheGatherOfLargeGemms) {
  // 16384^3 on 4 H200s: each rank's 134 MB shard reaches a peer in ~340 us while each step's
  // GEMM runs ~700 us, so nothing but the flags is exposed (in one process: across processes
  // the agreement comes first, AcrossProcessesTheCallStartsAfterTheAgreement).
  TpOptions one;
  one.one_process = true;
  const TpPlan plan = plan_on_h200(tp(TpPattern::all_gather, 4, 16384, 16384, 16384), one);
  EXPECT_EQ(plan.transport, TpTransport::copy_engine);
  EXPECT_GT(plan.speedup(), 3.7) << plan.describe();
  EXPECT_LT(plan.exposed_us, 0.02 * plan.total_us) << plan.describe();
  EXPECT_EQ(plan.steps.size(), std::size_t(4 * plan.bands));
  EXPECT_FALSE(plan.steps.front().reads_c);
}

TEST(TensorParallelPlan, TheRingAddsTheNeighboursPartialAndAllReduceAddsTheGather) {
  const TpPlan rs = plan_on_h200(tp(TpPattern::reduce_scatter, 4, 16384, 16384, 16384));
  expect_launches_cover(rs, 4);
  for (const TpStep& s : rs.steps) EXPECT_EQ(s.reads_c, s.step > 0);
  const TpPlan ar = plan_on_h200(tp(TpPattern::all_reduce, 4, 16384, 16384, 16384));
  // All-reduce moves D a second time: it cannot be faster than reduce-scatter.
  EXPECT_GT(ar.total_us, rs.total_us);
  EXPECT_TRUE(contains(ar.explanation, "every finished band of D")) << ar.explanation;
}

TEST(TensorParallelPlan, AllReduceRunsItsRingInRoundsOfBands) {
  const TpProblem p = tp(TpPattern::all_reduce, 4, 16384, 16384, 16384);
  TpOptions o;
  o.bands = 4, o.rounds = 2;
  const TpPlan plan = plan_on_h200(p, o);
  ASSERT_EQ(plan.rounds, 2);
  // Round 0 runs every step of bands 0 and 1, then round 1 every step of bands 2 and 3 (each
  // step's two bands perhaps in one launch, never a launch across the rounds).
  expect_launches_cover(plan, 4);
  std::size_t round_one = 0;
  while (round_one < plan.steps.size() && plan.steps[round_one].band < 2) ++round_one;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const TpStep& s = plan.steps[i];
    EXPECT_EQ(s.band / 2, i < round_one ? 0 : 1) << i;
    EXPECT_EQ((s.band + s.bands - 1) / 2, s.band / 2) << i;
    EXPECT_EQ(s.reads_c, s.step > 0);
    EXPECT_EQ(s.d_to_caller, s.step == 3);
  }
  o.rounds = 1;
  const TpPlan one = plan_on_h200(p, o);
  EXPECT_NE(one.hash(), plan.hash());
  // The first round's finished rows travel while the second round computes: less exposed.
  EXPECT_LT(plan.exposed_us, one.exposed_us) << plan.describe() << one.describe();
  EXPECT_TRUE(contains(plan.describe(), "in 2 rounds of 2 band(s)")) << plan.describe();
  o.rounds = 3;
  expect_invalid([&] { plan_on_h200(p, o); }, "rounds");
  // Forced rounds with the planner's bands: only the cuts they divide.
  TpOptions two_rounds;
  two_rounds.rounds = 2;
  EXPECT_EQ(plan_on_h200(p, two_rounds).rounds, 2);
  EXPECT_EQ(plan_on_h200(p, two_rounds).bands % 2, 0);
  TpOptions gather;
  gather.rounds = 2;
  expect_invalid([&] { plan_on_h200(tp(TpPattern::all_gather, 4, 16384, 16384, 16384), gather); }, "rounds");
  // Unforced, one round of merged launches and two rounds are priced within 1% of each other
  // here (the rounds' shorter tail against their extra launches): the fewer rounds are kept.
  const TpPlan planned = plan_on_h200(p);
  TpOptions two = o;
  two.bands = planned.bands, two.tail_rows = planned.tail_rows, two.rounds = 2;
  if (planned.rounds == 1 && planned.bands % 2 == 0)
    EXPECT_GE(plan_on_h200(p, two).total_us, 0.99 * planned.total_us) << planned.describe();
}

TEST(TensorParallelPlan, GatherComputesEachRanksRowsAndSendsThemToRankZero) {
  EXPECT_EQ(parse_tp_pattern("gather"), TpPattern::gather);
  EXPECT_EQ(to_string(TpPattern::gather), "gather");
  const TpProblem p = tp(TpPattern::gather, 4, 16384, 16384, 16384);
  const TpShardShapes root = tp_shard_shapes(p, 0), other = tp_shard_shapes(p, 3);
  EXPECT_EQ(root.a_rows, 4096);
  EXPECT_EQ(root.b_rows, 16384);  // the whole weight on every rank
  EXPECT_EQ(root.d_rows, 16384);
  EXPECT_EQ(other.d_rows, 0);     // D is rank 0's only
  const TpPlan plan = plan_on_h200(p);
  EXPECT_EQ(plan.transport, TpTransport::copy_engine);
  expect_launches_cover(plan, 1);
  // 8192 x 28672 x 8192 on 2: one launch signalling each band as it finishes (nothing to wait
  // for between them).
  const TpPlan two = plan_on_h200(tp(TpPattern::gather, 2, 8192, 28672, 8192));
  EXPECT_EQ(expect_launches_cover(two, 1)[0], 1) << two.describe();
  int64_t rows = 0;
  for (const TpStep& s : plan.steps) {
    EXPECT_EQ(s.step, 0);
    EXPECT_FALSE(s.reads_c);
    rows += s.rows;
  }
  EXPECT_EQ(rows, 4096);
  // 3 x 134 MB into rank 0 at ~320 GB/s (1.25 ms) behind 2.8 ms of GEMMs: only the last
  // band's trip is exposed.
  EXPECT_GT(plan.speedup(), 3.4) << plan.describe();
  EXPECT_LT(plan.exposed_us, 0.1 * plan.total_us) << plan.describe();
  EXPECT_TRUE(contains(plan.describe(), "on rank 0")) << plan.describe();
  TpProblem padded = p;
  padded.ldd = p.n + 64;
  expect_invalid([&] { validate(padded); }, "ldd");
  TpProblem odd = tp(TpPattern::gather, 4, 4098, 1000, 512);
  expect_invalid([&] { validate(odd); }, "m");
  // Without peer access: each rank's GEMM, then rank 0 receives the others' rows over NCCL.
  Topology t = topology_preset("pcie", 2);
  t.links[0][1].peer_access = t.links[1][0].peer_access = false;
  const TpPlan nccl = plan_tp(tp(TpPattern::gather, 2, 4096, 4096, 4096), device_preset("h100-pcie"), t);
  EXPECT_EQ(nccl.transport, TpTransport::nccl);
  ASSERT_EQ(nccl.steps.size(), 1u);
  EXPECT_EQ(nccl.steps[0].rows, 2048);
  EXPECT_GT(nccl.transfer_us, 0);
}

TEST(TensorParallelPlan, AMergedRingStepWaitsForEachBandsPartialInsideTheKernel) {
  // 2 H200s, merged steps asked for: each step is one launch of every band; the step that adds
  // the partials starts at once and waits inside the kernel for each band's (c_band_flags), so
  // over NVLink it waits for none. Asked for a launch per band, no step that reads C merges.
  TpOptions merged, apart;
  merged.merge_c_steps = 1, apart.merge_c_steps = 0;
  for (TpPattern pattern : {TpPattern::reduce_scatter, TpPattern::all_reduce}) {
    const TpPlan plan = plan_on_h200(tp(pattern, 2, 16384, 16384, 16384), merged);
    EXPECT_EQ(expect_launches_cover(plan, 2), (std::map<int, int>{{0, 1}, {1, 1}})) << plan.describe();
    ASSERT_TRUE(plan.steps.back().reads_c);
    EXPECT_GT(plan.steps.back().bands, 1);
    EXPECT_TRUE(contains(plan.explanation, " 0 us waiting for partials")) << plan.explanation;
    const TpPlan per_band = plan_on_h200(tp(pattern, 2, 16384, 16384, 16384), apart);
    for (const TpStep& s : per_band.steps)
      if (s.reads_c) EXPECT_EQ(s.bands, 1) << per_band.describe();
    EXPECT_NE(per_band.hash(), plan.hash());
  }
  // Unforced, a merged step that reads C must save over 1% with its measured surcharge
  // (kGatedLaunchUs): all-reduce 16384^3 does (-1.9%), reduce-scatter 8192 x 28672 x 8192 not.
  const TpPlan ar = plan_on_h200(tp(TpPattern::all_reduce, 2, 16384, 16384, 16384));
  EXPECT_GT(ar.steps.back().bands, 1) << ar.describe();
  const TpPlan rs = plan_on_h200(tp(TpPattern::reduce_scatter, 2, 8192, 28672, 8192));
  for (const TpStep& s : rs.steps)
    if (s.reads_c) EXPECT_EQ(s.bands, 1) << rs.describe();
  TpOptions bad;
  bad.merge_c_steps = 2;
  expect_invalid([&] { plan_on_h200(tp(TpPattern::all_reduce, 2, 4096, 4096, 4096), bad); }, "merge_c_steps");
  // Over a link 40x slower a partial takes longer than the band that needs it: the merged step
  // is priced band by band against the arrivals (a band ends no sooner than its partial's
  // arrival plus its tiles past the first wave).
  Topology slow = topology_preset("nvlink", 2);
  for (auto& row : slow.links)
    for (Link& l : row)
      if (l.kind != LinkKind::self) l.bandwidth_gbps /= 40;
  TpOptions four = merged;
  four.bands = 4, four.tail_rows = 0;
  const TpProblem p = tp(TpPattern::reduce_scatter, 2, 16384, 16384, 16384);
  const TpPlan plan = plan_tp(p, device_preset("h200"), slow, four);
  ASSERT_EQ(plan.steps.size(), 2u) << plan.describe();
  const double step1_us = plan.steps[1].predicted_us, step0_us = plan.steps[0].predicted_us;
  // The last band's partial leaves after step 0 ends and crosses the slow link (a quarter of
  // the 268 MB partial at 8 GB/s: ~8 ms); step 1's last band cannot end before it arrives.
  const double last_band_send_us = 268435456.0 / 4 / (plan.link_gbps * 1e3);
  EXPECT_GT(plan.total_us, step0_us + last_band_send_us) << plan.describe();
  EXPECT_GT(plan.total_us, step0_us + step1_us) << plan.describe();
  EXPECT_FALSE(contains(plan.explanation, " 0 us waiting for partials")) << plan.explanation;
}

TEST(TensorParallelPlan, NcclWhenAPairHasNoPeerAccess) {
  Topology t = topology_preset("pcie", 2);
  t.links[0][1].peer_access = false;
  const TpPlan plan = plan_tp(tp(TpPattern::reduce_scatter, 2, 4096, 4096, 4096), device_preset("h100-pcie"), t);
  EXPECT_EQ(plan.transport, TpTransport::nccl);
  EXPECT_EQ(plan.steps.size(), 1u);
  // The GEMM, then the collective, after the agreement across processes (160 us).
  EXPECT_NEAR(plan.total_us, plan.compute_us + plan.transfer_us + 160.0, 1e-6);
  TpOptions force;
  force.transport = TpTransport::copy_engine;
  expect_invalid([&] { plan_tp(tp(TpPattern::reduce_scatter, 2, 4096, 4096, 4096), device_preset("h100-pcie"), t, force); },
                 "transport");
}

TEST(TensorParallelPlan, TheHashIsWhatEveryRankMustAgreeOn) {
  const TpProblem p = tp(TpPattern::all_gather, 4, 8192, 8192, 8192);
  TpOptions one, two;
  one.bands = 1, two.bands = 2;
  EXPECT_EQ(plan_on_h200(p, one).hash(), plan_on_h200(p, one).hash());
  EXPECT_NE(plan_on_h200(p, one).hash(), plan_on_h200(p, two).hash());
  TpProblem q = p;
  q.k = 4096;
  EXPECT_NE(plan_on_h200(p, one).hash(), plan_on_h200(q, one).hash());
}

TEST(TensorParallelPlan, BandsAreWholeGranulesAndCoverTheChunk) {
  for (int64_t rows : {64, 200, 1024, 4096, 4100})
    for (int bands : {1, 2, 4, 8}) {
      const auto cut = multi::tp_bands(rows, bands);
      ASSERT_FALSE(cut.empty());
      EXPECT_EQ(cut.front().begin, 0);
      EXPECT_EQ(cut.back().end, rows);
      for (std::size_t i = 1; i < cut.size(); ++i) EXPECT_EQ(cut[i].begin, cut[i - 1].end);
      for (std::size_t i = 0; i + 1 < cut.size(); ++i) EXPECT_EQ(cut[i].size() % multi::kTpBandGranule, 0);
    }
}

TEST(TensorParallelPlan, AThinLastBandShortensTheExposedCopy) {
  // The cut: 4 even bands of 1024 rows, the last one's final 256 rows apart.
  const auto cut = multi::tp_bands(4096, 4, 256);
  ASSERT_EQ(cut.size(), 5u);
  EXPECT_EQ(cut[3], (multi::Range{3072, 3840}));
  EXPECT_EQ(cut[4], (multi::Range{3840, 4096}));
  EXPECT_EQ(multi::tp_bands(128, 1, 128).size(), 1u);  // no thicker than the tail: not cut
  // All-reduce 8192 x 28672 x 8192 on 2 H200s: the last finished band of D (235 MB / 4 at
  // ~320 GB/s, ~180 us) trails the last GEMM; a 256-row band trails by ~45 us.
  const TpProblem p = tp(TpPattern::all_reduce, 2, 8192, 28672, 8192);
  TpOptions even;
  even.tail_rows = 0;
  const TpPlan planned = plan_on_h200(p), flat = plan_on_h200(p, even);
  EXPECT_GT(planned.tail_rows, 0) << planned.describe();
  EXPECT_EQ(flat.tail_rows, 0);
  EXPECT_LT(planned.total_us, 0.99 * flat.total_us) << planned.describe() << flat.describe();
  EXPECT_LT(planned.exposed_us, flat.exposed_us);
  EXPECT_NE(planned.hash(), flat.hash());
  EXPECT_TRUE(contains(planned.explanation, "/" + std::to_string(planned.tail_rows) + " rows"))
      << planned.explanation;
  // The executor reads the cut from the plan; the launches cover it.
  const auto read = multi::tp_plan_bands(planned);
  ASSERT_EQ(int(read.size()), planned.bands);
  EXPECT_EQ(read.back().size(), planned.tail_rows);
  EXPECT_EQ(read.back().end, multi::tp_chunk_rows(p));
  expect_launches_cover(planned, 2);
  TpPlan garbled = planned;
  garbled.band_rows.back() += 128;
  expect_invalid([&] { multi::tp_plan_bands(garbled); }, "plan.band_rows");
  // Forced tails: whole granules only.
  TpOptions odd;
  odd.tail_rows = 100;
  expect_invalid([&] { plan_on_h200(p, odd); }, "tail_rows");
  odd.tail_rows = 128;
  EXPECT_EQ(plan_on_h200(p, odd).tail_rows, 128);
}

TEST(TensorParallelPlan, WorkspaceLayoutAndFlagsDoNotOverlap) {
  const TpProblem p = tp(TpPattern::all_reduce, 4, 4096, 1000, 4096);
  const multi::TpLayout l = multi::tp_layout(p, TpTransport::copy_engine);
  EXPECT_EQ(l.part_bytes, 1024 * 1000 * 2);
  EXPECT_GE(l.recv, l.send + 3 * l.part_bytes);
  EXPECT_GE(l.d_slots, l.recv + 3 * l.part_bytes);
  EXPECT_GE(l.total, l.d_slots + 4 * l.part_bytes);
  const multi::TpFlags f{4, 3};
  std::set<int64_t> seen;
  for (int s = 0; s < 4; ++s)
    for (int b = 0; b < 3; ++b) {
      seen.insert(f.a_ready(s, b));
      seen.insert(f.part_ready(s, b));
      seen.insert(f.d_ready(s, b));
      seen.insert(f.band_done(s, b));
      EXPECT_TRUE(f.is_counter(*seen.insert(f.band_counter(s, b)).first));
      EXPECT_FALSE(f.is_counter(f.band_done(s, b)));
    }
  for (int q = 0; q < 4; ++q) seen.insert(f.done(q)), seen.insert(f.d_free(q));
  EXPECT_EQ(int64_t(seen.size()), f.count());
  EXPECT_EQ(*seen.rbegin(), f.count() - 1);
  // NCCL's reduce-scatter needs the whole [M, N] partial in one piece.
  EXPECT_GE(multi::tp_layout(p, TpTransport::nccl).total, 4096 * 1000 * 2);
}

// One process drives every rank: all_reduce's and gather's finished bands go straight into the
// receivers' D where D is packed (no workspace slots for them), priced without the local
// copies; across processes, with padded D rows, for the other patterns or over NCCL they are
// staged as before. The plans differ in their hash, so ranks of different modes never agree.
TEST(TensorParallelPlan, OneProcessWritesFinishedBandsStraightIntoD) {
  TpOptions one;
  one.one_process = true;
  for (TpPattern pattern : {TpPattern::all_reduce, TpPattern::gather}) {
    const TpProblem p = tp(pattern, 2, 8192, 28672, 8192);
    TpOptions same_cut;  // the same bands either way (the search keeps a cut within 1%)
    same_cut.bands = 4, same_cut.tail_rows = 256;
    TpOptions one_same = same_cut;
    one_same.one_process = true;
    const TpPlan direct = plan_on_h200(p, one_same), staged = plan_on_h200(p, same_cut);
    EXPECT_TRUE(direct.d_direct);
    EXPECT_FALSE(staged.d_direct);
    EXPECT_NE(direct.hash(), staged.hash());
    EXPECT_TRUE(contains(direct.describe(), "straight into"));
    EXPECT_LT(direct.total_us, staged.total_us);  // no local copy after the last band
    EXPECT_EQ(multi::tp_layout(p, TpTransport::copy_engine, true).d_slots, 0);
    EXPECT_LT(multi::tp_layout(p, TpTransport::copy_engine, true).total,
              multi::tp_layout(p, TpTransport::copy_engine, false).total);
  }
  TpProblem padded = tp(TpPattern::all_reduce, 2, 8192, 28672, 8192);
  padded.ldd = 28672 + 64;
  EXPECT_FALSE(plan_on_h200(padded, one).d_direct);
  EXPECT_FALSE(plan_on_h200(tp(TpPattern::reduce_scatter, 2, 8192, 28672, 8192), one).d_direct);
  EXPECT_FALSE(plan_on_h200(tp(TpPattern::all_gather, 2, 8192, 28672, 8192), one).d_direct);
  TpOptions nccl = one;
  nccl.transport = TpTransport::nccl;
  EXPECT_FALSE(plan_on_h200(tp(TpPattern::all_reduce, 2, 8192, 28672, 8192), nccl).d_direct);
}

// Across processes every call agrees on its plan; over NCCL before its first GEMM, on copy engines
// while its first launch runs: the same start for every candidate of a transport (the same plan
// either way), added to the predicted and the exposed time.
TEST(TensorParallelPlan, AcrossProcessesTheCallStartsAfterTheAgreement) {
  TpOptions one;
  one.one_process = true;
  for (TpTransport transport : {TpTransport::copy_engine, TpTransport::nccl})
    for (TpPattern pattern : {TpPattern::all_gather, TpPattern::reduce_scatter}) {
      TpOptions each, one_each = one;
      each.transport = one_each.transport = transport;
      const TpProblem p = tp(pattern, 2, 8192, 28672, 8192);
      const TpPlan across = plan_on_h200(p, each), here = plan_on_h200(p, one_each);
      EXPECT_EQ(across.hash(), here.hash()) << to_string(pattern);
      const bool nccl = transport == TpTransport::nccl;
      const double start_us = nccl ? 160.0 : 30.0;
      EXPECT_NEAR(across.total_us - here.total_us, start_us, 1e-6) << to_string(pattern);
      EXPECT_NEAR(across.exposed_us - here.exposed_us, start_us, 1e-6) << to_string(pattern);
      EXPECT_TRUE(contains(across.describe(), nccl ? "every process agrees on the plan first"
                                                   : "starts while the processes agree"));
      EXPECT_FALSE(contains(here.describe(), "agree"));
    }
}

// AUTOGEMM_TP_TRACE=N: N calls a timeline, 1..1000; anything else leaves the trace off.
TEST(TensorParallelTrace, CallsPerTimelineFromTheVariable) {
  using autogemm::multi::TpTrace;
  EXPECT_EQ(TpTrace::parse_calls(nullptr), 0);
  EXPECT_EQ(TpTrace::parse_calls("1"), 1);
  EXPECT_EQ(TpTrace::parse_calls("16"), 16);
  EXPECT_EQ(TpTrace::parse_calls("1000"), 1000);
  for (const char* off : {"", "0", "-3", "1001", "2x", "on", " 4"})
    EXPECT_EQ(TpTrace::parse_calls(off), 0) << '"' << off << '"';
}
