#include "codegen/wgmma_asm.hpp"

#include <fmt/format.h>

#include "autogemm/errors.hpp"

namespace autogemm::codegen {

namespace {

void check_wgmma_n(int n) {
  if (n < 8 || n > 256 || n % 8 != 0)
    throw InvalidArgument("wgmma n", std::to_string(n), "must be a multiple of 8 in 8..256");
}

// The accumulator operands of an m64nN f32 wgmma: "%0, %1, ..." in the instruction and
// "+f"(d[0]), ... as asm operands (N/2 registers per thread, hopper-facts.md 2.3).
struct AccumulatorOperands {
  std::string outs, operands;
};
AccumulatorOperands accumulator_operands(int regs) {
  AccumulatorOperands a;
  for (int i = 0; i < regs; ++i) {
    a.outs += fmt::format("{}%{}", i ? ", " : "", i);
    a.operands += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  }
  return a;
}

const char* fp8_ptx_type(DType t) {
  switch (t) {
    case DType::e4m3: return "e4m3";
    case DType::e5m2: return "e5m2";
    default:
      throw InvalidArgument("input type", std::string(to_string(t)),
                            "this wrapper is for FP8 wgmma (e4m3 or e5m2, k32)");
  }
}

}  // namespace

std::string wgmma_mma_function(int n, DType input, bool a_mn_major, bool b_mn_major) {
  if (input != DType::bf16 && input != DType::fp16)
    throw InvalidArgument("input type", std::string(to_string(input)),
                          "this wrapper is for 16-bit wgmma (k16)");
  check_wgmma_n(n);
  const int regs = n / 2;
  const char* type = input == DType::bf16 ? "bf16" : "f16";
  const auto [outs, operands] = accumulator_operands(regs);
  // scale-d is a predicate (D = A*B + D when true); CUTLASS sets it with setp from an
  // immediate. imm-scale-a/b = 1 (no negation).
  return fmt::format(
      "  static __device__ __forceinline__ void mma(float (&d)[{regs}], unsigned long long desc_a,\n"
      "                                             unsigned long long desc_b) {{\n"
      "    asm volatile(\n"
      "        \"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{pred}, 0;\\n\"\n"
      "        \"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{type}.{type} \"\n"
      "        \"{{{outs}}}, %{da}, %{db}, p, 1, 1, {ta}, {tb};\\n}}\\n\"\n"
      "        : {operands}\n"
      "        : \"l\"(desc_a), \"l\"(desc_b), \"n\"(1));\n"
      "  }}\n",
      fmt::arg("regs", regs), fmt::arg("n", n), fmt::arg("type", type), fmt::arg("outs", outs),
      fmt::arg("operands", operands), fmt::arg("da", regs), fmt::arg("db", regs + 1),
      fmt::arg("pred", regs + 2), fmt::arg("ta", a_mn_major ? 1 : 0),
      fmt::arg("tb", b_mn_major ? 1 : 0));
}

std::string wgmma_fp8_mma_function(int n, DType a_type, DType b_type) {
  const char* a = fp8_ptx_type(a_type);
  const char* b = fp8_ptx_type(b_type);
  check_wgmma_n(n);
  const int regs = n / 2;
  const auto [outs, operands] = accumulator_operands(regs);
  // FP8 wgmma has no imm-trans operands: both operands are K-major (PTX ISA, hopper-facts.md
  // 2.2). scale-d comes from a register so the first k32 step of a k-block can overwrite D.
  return fmt::format(
      "  static __device__ __forceinline__ void mma(float (&d)[{regs}], unsigned long long desc_a,\n"
      "                                             unsigned long long desc_b, int accumulate) {{\n"
      "    asm volatile(\n"
      "        \"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{pred}, 0;\\n\"\n"
      "        \"wgmma.mma_async.sync.aligned.m64n{n}k32.f32.{a}.{b} \"\n"
      "        \"{{{outs}}}, %{da}, %{db}, p, 1, 1;\\n}}\\n\"\n"
      "        : {operands}\n"
      "        : \"l\"(desc_a), \"l\"(desc_b), \"r\"(accumulate));\n"
      "  }}\n",
      fmt::arg("regs", regs), fmt::arg("n", n), fmt::arg("a", a), fmt::arg("b", b),
      fmt::arg("outs", outs), fmt::arg("operands", operands), fmt::arg("da", regs),
      fmt::arg("db", regs + 1), fmt::arg("pred", regs + 2));
}

}  // namespace autogemm::codegen
