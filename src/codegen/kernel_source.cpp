#include "runtime/kernel_source.hpp"

#include <fmt/format.h>

#include "autogemm/errors.hpp"
#include "plan/cluster_split.hpp"
#include "plan/n_tail.hpp"
#include "plan/tail_split.hpp"
#include "runtime/fp8_source.hpp"
#include "runtime/tile_trace.hpp"

namespace autogemm::runtime {

namespace {

// setmaxnreg targets (multiples of 8 in 24..256): the producer keeps 40, each consumer takes
// 232; 128 x 40 + 256 x 232 = 64512 <= 65536 registers per SM (hopper-facts.md 5, CUTLASS).
constexpr int kProducerRegisters = 40;
constexpr int kConsumerRegisters = 232;

int out_kind(DType t) {
  switch (t) {
    case DType::bf16: return 0;
    case DType::fp16: return 1;
    case DType::fp32: return 2;
    default:
      throw InvalidArgument("d_type", std::string(to_string(t)), "output must be bf16, fp16 or fp32");
  }
}

}  // namespace

void check_kernel_config(const GemmProblem& p, const GemmConfig& c) {
  out_kind(p.d_type);
  auto bad = [](const char* field, int value, const char* rule) {
    throw InvalidArgument(fmt::format("config.{}", field), std::to_string(value), rule);
  };
  if (c.instruction != Instruction::wgmma)
    throw InvalidArgument("config.instruction", std::string(to_string(c.instruction)),
                          "the sm90 kernel family issues wgmma");
  check_input_type_rules(p, c);   // bf16/fp16, or FP8 with its own rules (fp8_source.cpp)
  const int k_bytes = c.block_k * dtype_bytes(p.a_type);
  if (k_bytes != 128 && !(k_bytes == 256 && dtype_bytes(p.a_type) == 2 && c.load_path == LoadPath::tma))
    bad("block_k", c.block_k,
        "must be one 128-byte swizzle atom of K (64 bf16/fp16, 128 fp8), or two for 16-bit "
        "inputs loaded by TMA");
  if (c.num_consumers < 1 || c.num_consumers > 2) bad("num_consumers", c.num_consumers, "must be 1 or 2");
  if (c.block_m % (64 * c.num_consumers) != 0)
    bad("block_m", c.block_m, "must be a multiple of 64 x num_consumers (whole m64 slabs)");
  if (c.block_n < 8 || c.block_n > 256 || c.block_n % 8 != 0)
    bad("block_n", c.block_n, "must be a multiple of 8 in 8..256 (wgmma N)");
  if (c.num_stages < 1) bad("num_stages", c.num_stages, "must be >= 1");
  if (c.cluster_m * c.cluster_n > 2 || c.cluster_m < 1 || c.cluster_n < 1)
    bad("cluster_m * cluster_n", c.cluster_m * c.cluster_n, "clusters of 1 or 2 CTAs");
  if (c.multicast == Multicast::a && c.cluster_n != 2)
    bad("cluster_n", c.cluster_n, "multicast of A needs cluster_n = 2 (CTAs sharing A rows)");
  if (c.multicast == Multicast::b && c.cluster_m != 2)
    bad("cluster_m", c.cluster_m, "multicast of B needs cluster_m = 2 (CTAs sharing B columns)");
  if (c.cluster_m * c.cluster_n > 1 && !c.warp_specialized)
    bad("cluster_m * cluster_n", c.cluster_m * c.cluster_n, "clusters need warp_specialized");
  if (c.load_path == LoadPath::threads) {
    if (c.warp_specialized) bad("warp_specialized", 1, "the threads load path has no producer");
    if (p.layout != Layout::nt)
      throw InvalidArgument("layout", std::string(to_string(p.layout)),
                            "the threads load path (ladder steps) is written for layout nt");
  }
  if (!a_is_k_major(p.layout) && c.block_m % 64 != 0)
    bad("block_m", c.block_m, "MN-major A is loaded in 64-row slabs");
  if (!b_is_k_major(p.layout) && c.block_n % 64 != 0)
    bad("block_n", c.block_n, "MN-major B is loaded in 64-column slabs");
  if (c.raster_group < 1) bad("raster_group", c.raster_group, "must be >= 1");
  if (c.split_k < 1) bad("split_k", c.split_k, "must be >= 1");
  if (auto why = plan::tail_split_violation(c); !why.empty())
    throw InvalidArgument("config.tail_split", std::to_string(c.tail_split), why);
  if (auto why = plan::cluster_k_violation(p, c); !why.empty())
    throw InvalidArgument("config.cluster_k", std::to_string(c.cluster_k), why);
}


std::vector<std::pair<GemmProblem, GemmConfig>> gemm_kernels(const GemmProblem& p,
                                                            const GemmConfig& c) {
  if (!c.n_tail_kernel) return {{p, c}};
  const plan::NTailSplit split = plan::split_n_tail(p, c);
  return {{split.main_problem, split.main_config}, {split.tail_problem, split.tail_config}};
}

int gemm_threads_per_cta(const GemmConfig& c) {
  return 128 * (c.num_consumers + (c.warp_specialized ? 1 : 0));
}

jit::KernelSource gemm_kernel_source(const GemmProblem& p, const GemmConfig& c) {
  check_kernel_config(p, c);
  const int out = out_kind(p.d_type);
  const int out_bytes = dtype_bytes(p.d_type);
  const bool a_mn = !a_is_k_major(p.layout), b_mn = !b_is_k_major(p.layout);
  // in_bytes, scaling and the wgmma wrapper (k16, or k32 with scale-d for FP8).
  const std::string mma = input_type_members(p, c);
  jit::KernelSource src;
  src.name = fmt::format("gemm_sm90_{}_{}_{}_n{}_k{}_{}x{}x{}_s{}_c{}{}{}_cl{}x{}{}_g{}{}_{}{}",
                         to_string(p.a_type), to_string(p.d_type), to_string(p.layout), p.n, p.k,
                         c.block_m, c.block_n, c.block_k, c.num_stages, c.num_consumers,
                         c.warp_specialized ? "_ws" : "", c.persistent ? "_p" : "", c.cluster_m,
                         c.cluster_n, to_string(c.multicast), c.raster_group,
                         c.raster_order == RasterOrder::along_n ? "n" : "m",
                         to_string(c.load_path), to_string(c.store_path)) +
             (c.cluster_k > 1 ? fmt::format("_ck{}", c.cluster_k) : std::string()) +
             (c.split_k > 1 ? fmt::format("_sk{}", c.split_k) : std::string()) +
             (c.tail_split > 1 ? fmt::format("_ts{}", c.tail_split) : std::string()) +
             (c.n_tail_kernel ? "_ntk" : "") + (c.waits_for_primary ? "_pdlw" : "");
  src.name += input_type_name_suffix(p, c);   // FP8: B type and scaling; empty for 16-bit
  const bool traced = !tile_trace_path().empty();
  if (traced) src.name += "_trace";
  src.source = fmt::format(
      "// Generated by autogemm (src/runtime/kernel_source.cpp) for {name}\n"
      "{trace}"
      "#include \"sm90/gemm_kernel.cuh\"\n"
      "namespace autogemm::sm90::generated {{\n"
      "struct Config {{\n"
      "  static constexpr int block_m = {bm}, block_n = {bn}, block_k = {bk};\n"
      "  static constexpr int num_stages = {stages}, num_consumers = {consumers};\n"
      "  static constexpr bool warp_specialized = {ws}, persistent = {persistent};\n"
      "  static constexpr int cluster_m = {cm}, cluster_n = {cn}, multicast = {mc};\n"
      "  static constexpr int cluster_k = {ck};\n"
      "  static constexpr int raster_group = {group};\n"
      "  static constexpr bool raster_along_n = {along_n};\n"
      "  static constexpr bool tma_load = {tma_load}, tma_store = {tma_store};\n"
      "  static constexpr bool a_k_major = {akm}, b_k_major = {bkm}, in_fp16 = {fp16};\n"
      "  static constexpr int out_kind = {out}, out_bytes = {out_bytes};\n"
      "  static constexpr int n = {n}, k = {k}, split_k = {split_k}, tail_split = {tail_split};\n"
      "  static constexpr int producer_regs = {preg}, consumer_regs = {creg};\n"
      "  static constexpr bool launch_dependents = {launch_dependents};\n"
      "  static constexpr bool waits_for_primary = {waits_for_primary};\n"
      "{mma}"
      "}};\n"
      "}}  // namespace autogemm::sm90::generated\n",
      fmt::arg("name", src.name),
      fmt::arg("trace", traced ? "#define AUTOGEMM_TILE_TRACE 1   // AUTOGEMM_TRACE_TILES\n" : ""),
      fmt::arg("bm", c.block_m), fmt::arg("bn", c.block_n),
      fmt::arg("bk", c.block_k), fmt::arg("stages", c.num_stages),
      fmt::arg("consumers", c.num_consumers), fmt::arg("ws", c.warp_specialized),
      fmt::arg("persistent", c.persistent), fmt::arg("cm", c.cluster_m),
      fmt::arg("cn", c.cluster_n), fmt::arg("ck", c.cluster_k),
      fmt::arg("mc", c.multicast == Multicast::none ? 0 : c.multicast == Multicast::a ? 1 : 2),
      fmt::arg("group", c.raster_group),
      fmt::arg("along_n", c.raster_order == RasterOrder::along_n),
      fmt::arg("tma_load", c.load_path == LoadPath::tma),
      fmt::arg("tma_store", c.store_path == StorePath::tma), fmt::arg("akm", !a_mn),
      fmt::arg("bkm", !b_mn), fmt::arg("fp16", p.a_type == DType::fp16), fmt::arg("out", out),
      fmt::arg("out_bytes", out_bytes), fmt::arg("n", p.n), fmt::arg("k", p.k),
      fmt::arg("split_k", c.split_k), fmt::arg("tail_split", c.tail_split),
      fmt::arg("preg", kProducerRegisters), fmt::arg("creg", kConsumerRegisters),
      fmt::arg("launch_dependents", c.n_tail_kernel),
      fmt::arg("waits_for_primary", c.waits_for_primary), fmt::arg("mma", mma));
  src.kernel_name = "autogemm::sm90::gemm_kernel<autogemm::sm90::generated::Config>";
  src.arch = "sm_90a";
  return src;
}

}  // namespace autogemm::runtime
