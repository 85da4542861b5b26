// One rule set (plan/rules.hpp): every token of the configuration grammar is tried at its
// limits and one step past them. A configuration the rules refuse is refused by
// make_kernel_spec with the configuration, the field and the rule; one they accept must compile
// with NVRTC (the device code's static_asserts are only a backstop). No GPU needed.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/plan.hpp"
#include "cli/cli_common.hpp"
#include "codegen/kernel_source.hpp"
#include "jit/jit.hpp"

using namespace autogemm;

namespace {

// The problems the probes run on, by name.
GemmProblem named_problem(const std::string& name) {
  if (name == "bf16") return cli::make_problem(4096, 4096, 4096, "bf16", "nt", 0, 0, 0);
  if (name == "bf16-n8") return cli::make_problem(64, 8, 4096, "bf16", "nt", 0, 0, 0);
  if (name == "bf16-n2112") return cli::make_problem(4096, 2112, 4096, "bf16", "nt", 0, 0, 0);
  if (name == "fp8") return cli::make_problem(4096, 4096, 4096, "fp8", "nt", 0, 0, 0);
  if (name == "fp8-n2112") return cli::make_problem(4096, 2112, 7168, "fp8", "nt", 0, 0, 0);
  // A weight gradient's shape: fp32 D read and written (D += dY^T X, layout tn).
  if (name == "wgrad") {
    GemmProblem p = cli::make_problem(4096, 4096, 16384, "bf16", "tn", 0, 0, 0);
    p.d_type = DType::fp32;
    p.reads_c = true;
    return p;
  }
  GemmProblem per_tensor = cli::make_problem(4096, 4096, 4096, "fp8", "nt", 0, 0, 0);
  per_tensor.scaling = Scaling::per_tensor;
  return per_tensor;   // "fp8-pt"
}

struct Probe {
  const char* problem;
  const char* config;
  bool accepted;
  const char* rule = "";   // a part of the refusal's text naming the rule
};

// Each token at its limit (accepted) and past it (refused), on a tile that is otherwise legal.
const std::vector<Probe> kProbes = {
    // The tile: block_m 64, 128 or 256; block_n 8 or a multiple of 16 up to 256; block_k one
    // 128-byte atom of K (or two for 16-bit inputs).
    {"bf16", "64x128x64 s4 c1 p g8", true},
    {"bf16", "32x128x64 s4 c1 p g8", false, "block_m = 32"},
    {"bf16", "192x128x64 s4 c1 p g8", false, "block_m = 192"},
    {"bf16", "256x128x64 s3 c2 p g8", true},
    {"bf16", "320x128x64 s2 c2 p g8", false, "block_m = 320"},
    {"bf16-n8", "64x8x64 s8 c1 p g8", true},
    {"bf16", "128x0x64 s4 c1 p g8", false, "block_n = 0"},
    {"bf16", "128x16x64 s4 c1 p g8", true},
    {"bf16", "128x24x64 s4 c1 p g8", true},
    {"bf16", "128x20x64 s4 c1 p g8", false, "block_n = 20"},
    {"bf16", "128x200x64 s4 c2 p g8", true},
    {"bf16", "128x256x64 s3 c2 p g8", true},
    {"bf16", "128x272x64 s3 c2 p g8", false, "block_n = 272"},
    {"bf16", "128x128x32 s4 c1 p g8", false, "block_k = 32"},
    {"bf16", "128x128x128 s3 c1 p g8", true},
    {"bf16", "128x128x192 s2 c1 p g8", false, "block_k = 192"},
    {"fp8", "128x128x64 s5 c2 p g8", false, "block_k = 64"},
    {"fp8", "128x128x256 s2 c2 p g8", false, "block_k = 256"},
    // Stages: at least one, no more than shared memory holds.
    {"bf16", "128x128x64 s0 c1 p g8", false, "num_stages = 0"},
    {"bf16", "128x128x64 s1 c1 p g8", true},
    {"bf16", "128x256x64 s4 c2 p g8", false, "smem"},
    {"bf16", "64x16x64 s12 c1 p g8", true},
    // Consumers: 1 or 2, each with whole m64 slabs, accumulators within the registers.
    {"bf16", "128x128x64 s4 c0 p g8", false, "num_consumers = 0"},
    {"bf16", "128x128x64 s4 c3 p g8", false, "num_consumers = 3"},
    {"bf16", "64x128x64 s4 c2 p g8", false, "64 / 2"},
    {"bf16", "128x176x64 s4 c1 p g8", true},
    {"bf16", "128x192x64 s4 c1 p g8", false, "accumulators 192 registers"},
    // Clusters: at most 2 CTAs; a multicast operand is shared along the cluster's axis.
    {"bf16", "128x128x64 s4 c1 p g8 cl2x1/b", true},
    {"bf16", "128x128x64 s4 c1 p g8 cl1x2/a", true},
    {"bf16", "128x128x64 s4 c1 p g8 cl2x1/none", true},
    {"bf16", "128x128x64 s4 c1 p g8 cl2x1/a", false, "multicast a with cluster 2x1"},
    {"bf16", "128x128x64 s4 c1 p g8 cl1x2/b", false, "multicast b with cluster 1x2"},
    {"bf16", "128x128x64 s4 c1 p g8 cl2x2/none", false, "cluster 2x2 has 4 CTAs"},
    {"bf16", "128x128x64 s4 c1 p g8 cl0x1/none", false, "cluster dimensions must be >= 1"},
    // Raster order and persistence.
    {"bf16", "128x128x64 s4 c1 p g1", true},
    {"bf16", "128x128x64 s4 c1 p g16n", true},
    {"bf16", "128x128x64 s4 c1 p g0", false, "raster_group = 0"},
    {"bf16", "128x128x64 s4 c1 g8", true},
    // Split-K: 1..32 splits (one polling lane each).
    {"bf16", "64x128x64 s4 c1 p g8 sk0", false, "split_k = 0"},
    {"bf16", "64x128x64 s4 c1 p g8 sk2", true},
    {"bf16", "64x128x64 s4 c1 p g8 sk32", true},
    {"bf16", "64x128x64 s4 c1 p g8 sk33", false, "split_k = 33"},
    // FP8 promotion: 1 or 2 temporaries, FP8 only; ordered issue for two FP8 consumers.
    {"fp8", "128x128x128 s5 c2 p g8 pb2", true},
    {"fp8", "128x128x128 s5 c2 p g8 pb3", false, "promotion_buffers = 3"},
    {"fp8", "128x128x128 s5 c2 p g8 pb0", false, "promotion_buffers = 0"},
    {"bf16", "128x128x64 s4 c2 p g8 pb2", false, "promotion_buffers = 2"},
    {"fp8", "256x128x128 s3 c2 p g8 oi", true},
    {"fp8", "128x128x128 s4 c1 p g8 oi", false, "ordered_issue with num_consumers = 1"},
    {"bf16", "128x128x64 s4 c2 p g8 oi", false, "ordered_issue with bf16"},
    // Ping-pong: two 16-bit consumers with whole tiles (one's accumulators within the
    // registers), no split K, swap or n-tail kernel.
    {"bf16", "128x128x64 s5 c2 p g8 pp", true},
    {"bf16", "64x256x64 s4 c2 p g8 pp", true},
    {"bf16", "128x192x64 s3 c2 p g8 pp", false, "accumulators 192 registers"},
    {"bf16", "128x128x64 s5 c1 p g8 pp", false, "pingpong with num_consumers = 1"},
    {"fp8", "64x128x128 s4 c2 p g8 pp", false, "pingpong with a_type = e4m3"},
    {"bf16", "128x128x64 s5 c2 p g8 sk2 pp", false, "pingpong with split_k = 2"},
    {"bf16", "128x64x64 s6 c2 p g8 swap pp", false, "pingpong with swap_ab"},
    {"bf16-n2112", "128x128x64 s4 c2 p g8 ntk pp", false, "pingpong with n_tail_kernel"},
    // Swapped operands (D^T = B^T A^T): block-scaled FP8 with block_n <= block_m (the column
    // scales take the row-scale slot), no n-tail kernel.
    {"bf16", "128x64x64 s6 c2 p g8 swap", true},
    {"fp8", "128x128x128 s5 c2 p g8 swap", true},
    {"fp8", "64x128x128 s5 c1 p g8 swap", false, "block_n = 128 > block_m = 64"},
    {"bf16", "128x128x64 s4 c2 p g8 ntk swap", false, "swap_ab with n_tail_kernel"},
    // Block scales: a tile touches at most two 128-column B scale blocks; per-tensor any.
    {"fp8", "64x144x128 s4 c1 p g8", true},
    {"fp8", "64x176x128 s4 c1 p g8", false, "block_n = 176"},
    {"fp8-pt", "64x176x128 s4 c1 p g8", true},
    // The n-tail kernel: a last column of tiles at most half full, whole-K tiles.
    {"fp8-n2112", "128x128x128 s5 c2 p g8 pb2 ntk", true},
    {"bf16-n2112", "128x128x64 s4 c2 p g8 ntk", true},
    {"fp8", "128x128x128 s5 c2 p g8 pb2 ntk", false, "it holds 0"},
    {"bf16-n2112", "128x128x64 s4 c2 p g8 sk2 ntk", false, "split_k = 2"},
    {"bf16-n2112", "128x128x64 s4 c2 g8 ntk", false, "persistent"},
    // D staged in chunks of whole 128-byte boxes: two cooperative consumers storing by TMA.
    // 128x256 fp32 D: 2 stages staging the whole tile, 4 in chunks of 64 columns.
    {"wgrad", "128x256x64 s4 c2 p g8 dc2", true},
    {"wgrad", "128x256x64 s4 c2 p g8 cl2x1/b dc2", true},
    {"wgrad", "128x256x64 s4 c2 p g8", false, "smem"},
    {"wgrad", "128x256x64 s4 c2 p g8 dc4", false, "smem"},
    {"bf16", "128x256x64 s4 c2 p g8 dc2", true},
    {"bf16", "128x256x64 s3 c2 p g8 dc4", false, "chunks must split it into two or more"},
    {"wgrad", "128x240x64 s4 c2 p g8 dc2", false, "and a tail"},
    {"wgrad", "64x256x64 s4 c1 p g8 dc2", false, "d_chunk_boxes = 2 with num_consumers = 1"},
    {"wgrad", "128x128x64 s5 c2 p g8 pp dc2", false, "d_chunk_boxes = 2 with pingpong"},
    {"bf16", "128x64x64 s6 c2 p g8 swap dc1", false, "d_chunk_boxes = 1 with swap_ab"},
    {"fp8", "128x128x128 s5 c2 p g8 dc1", true},
};

// Text the grammar itself refuses (InvalidArgument from GemmConfig::parse).
const std::vector<const char*> kUnparsable = {
    "128x128 s4", "128x128x64 s4 c1 q7", "128x128x64 s-1 c1", "128x128x64 s4 c1 sk-2",
    "128x128x64 s4 c1 cl2x1/c", "128x128x64 s4 c1 ws", "128x128x64 s4 c1 tma/tma",
    "128x128x64 s4 c1 ck4", "128x128x64 s4 c1 ts8", "128x128x64 s4 c1 ctas1",
    "128x128x64 s4 c1 pdlw", "", "s4 c1", "128x256x64 s4 c2 dc0", "128x256x64 s4 c2 dc"};

}  // namespace

TEST(ConfigRules, EveryTokenAtAndPastItsLimit) {
  const GpuInfo h100 = device_preset("h100-sxm");
  std::map<std::string, jit::KernelSource> accepted;   // by kernel name: each compiled once
  for (const Probe& probe : kProbes) {
    SCOPED_TRACE(std::string(probe.problem) + ": " + probe.config);
    const GemmProblem problem = named_problem(probe.problem);
    const GemmConfig config = GemmConfig::parse(probe.config);
    try {
      const KernelSpec spec = make_kernel_spec(problem, config, h100);
      EXPECT_TRUE(probe.accepted) << "accepted: " << spec.text;
      EXPECT_EQ(spec.text, config.describe());
      ASSERT_FALSE(spec.kernels.empty());
      for (const KernelLaunch& kernel : spec.kernels) {
        EXPECT_LE(kernel.smem_bytes, h100.smem_per_block_optin_bytes);
        EXPECT_GE(kernel.grid_ctas, 1);
        const jit::KernelSource source = codegen::gemm_kernel_source(kernel, false);
        accepted.emplace(source.name, source);
      }
    } catch (const InvalidArgument& e) {
      const std::string why = e.what();
      EXPECT_FALSE(probe.accepted) << why;
      EXPECT_NE(why.find(config.describe()), std::string::npos) << why;   // names the value
      EXPECT_NE(why.find(probe.rule), std::string::npos) << why;          // and the rule
    }
  }
  // Every accepted configuration compiles: NVRTC would stop at a device static_assert. Two at
  // a time (CI has two cores).
  std::vector<std::future<std::string>> pending;
  std::vector<std::string> failures;
  auto collect = [&] {
    for (auto& f : pending)
      if (std::string why = f.get(); !why.empty()) failures.push_back(why);
    pending.clear();
  };
  for (const auto& [name, source] : accepted) {
    pending.push_back(std::async(std::launch::async, [source = source] {
      try {
        return jit::compile_to_cubin(source).cubin.empty() ? source.name + ": empty cubin"
                                                           : std::string();
      } catch (const std::exception& e) {
        return source.name + ": " + e.what();
      }
    }));
    if (pending.size() == 2) collect();
  }
  collect();
  EXPECT_TRUE(failures.empty()) << failures.front();
  EXPECT_GE(accepted.size(), 20u);
}

TEST(ConfigRules, TheGrammarRefusesWhatIsNoField) {
  for (const char* text : kUnparsable) {
    try {
      GemmConfig::parse(text);
      ADD_FAILURE() << "parsed: '" << text << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("config"), std::string::npos) << e.what();
    }
  }
  // The vendor's configuration is text too, and makes a spec with no kernel of ours.
  const KernelSpec vendor = make_kernel_spec(named_problem("bf16"), GemmConfig::parse("cuBLASLt"),
                                             device_preset("h100-sxm"));
  EXPECT_TRUE(vendor.vendor);
  EXPECT_TRUE(vendor.kernels.empty());
}

// A field given twice is refused, naming the token, rather than the last one silently winning
// ("... p p" and "s3 s4" were accepted).
TEST(ConfigRules, EachFieldIsGivenOnce) {
  for (const char* text : {"128x256x64 s3 c2 p p", "128x256x64 s3 s4 c2", "128x256x64 s3 c1 c2",
                           "128x256x64 s3 c2 g8 g4n", "128x256x64 s3 c2 cl2x1/b cl1x2/a",
                           "128x256x64 s3 c2 sk2 sk4", "128x128x128 s5 c2 pb2 pb2",
                           "128x128x128 s5 c2 oi oi", "128x128x64 s4 c2 ntk ntk",
                           "128x128x64 s5 c2 pp pp", "128x256x64 s4 c2 dc2 dc4",
                           "64x64x64 s4 c1 swap swap", "mma 8x16x128 s3 s4", "cuBLASLt cuBLASLt"}) {
    try {
      GemmConfig::parse(text);
      ADD_FAILURE() << "parsed: '" << text << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "config");
      EXPECT_EQ(e.value(), text);
      EXPECT_NE(e.rule().find("each field is given once"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(GemmConfig::parse("128x256x64 s3 c2 p g8 cl2x1/b").describe(),
            "128x256x64 s3 c2 p g8 cl2x1/b");
}

// The forced configuration and the planner's choice go through the one function: the
// planner's spec equals the one make_kernel_spec gives for its configuration.
TEST(ConfigRules, PlannerAndForcedConfigurationsMakeTheSameSpec) {
  const GpuInfo h100 = device_preset("h100-sxm");
  for (const char* name : {"bf16", "fp8", "fp8-n2112", "bf16-n8"}) {
    const GemmProblem problem = named_problem(name);
    const Plan plan = plan_gemm(problem, h100);
    const KernelSpec forced = make_kernel_spec(problem, plan.best().config, h100);
    ASSERT_EQ(plan.spec.kernels.size(), forced.kernels.size()) << name;
    for (size_t i = 0; i < forced.kernels.size(); ++i) {
      EXPECT_EQ(plan.spec.kernels[i].identity, forced.kernels[i].identity) << name;
      EXPECT_EQ(plan.spec.kernels[i].grid_ctas, forced.kernels[i].grid_ctas) << name;
      EXPECT_EQ(plan.spec.kernels[i].smem_bytes, forced.kernels[i].smem_bytes) << name;
    }
    EXPECT_EQ(plan.spec.split_k.sync_bytes(), forced.split_k.sync_bytes()) << name;
    EXPECT_EQ(plan.spec.kernels[0].tensor_maps, forced.kernels[0].tensor_maps) << name;
    EXPECT_EQ(plan.spec.a_scales_k_block_major, forced.a_scales_k_block_major) << name;
  }
}

// The spec carries the tensor maps the launcher encodes: A and B as 128-byte swizzled atoms of
// K by the tile's rows, D in column slabs of the widest swizzle span dividing block_n, each
// consumer storing its own rows; C only when the call reads it; the operand pointers later.
TEST(ConfigRules, TheSpecCarriesTheTensorMaps) {
  GemmProblem p = named_problem("bf16");
  p.ldd = 4160;
  const KernelSpec spec =
      make_kernel_spec(p, GemmConfig::parse("128x256x64 s3 c2 p g8"), device_preset("h100-sxm"));
  const std::vector<TensorMapSpec> want = {{'A', 4096, 4096, 4096, 64, 128, 128},
                                           {'B', 4096, 4096, 4096, 64, 256, 128},
                                           {'D', 4096, 4096, 4160, 64, 64, 128}};
  EXPECT_EQ(spec.kernels.front().tensor_maps, want);
  p.reads_c = true;
  const KernelSpec with_c =
      make_kernel_spec(p, GemmConfig::parse("128x256x64 s3 c2 p g8"), device_preset("h100-sxm"));
  ASSERT_EQ(with_c.kernels.front().tensor_maps.size(), 4u);
  EXPECT_EQ(with_c.kernels.front().tensor_maps[2].operand, 'C');
}
