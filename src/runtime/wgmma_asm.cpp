#include "runtime/wgmma_asm.hpp"

#include <fmt/format.h>

#include "autogemm/errors.hpp"

namespace autogemm::runtime {

std::string wgmma_mma_function(int n, DType input, bool a_mn_major, bool b_mn_major) {
  if (input != DType::bf16 && input != DType::fp16)
    throw InvalidArgument("input type", std::string(to_string(input)),
                          "this wrapper is for 16-bit wgmma (k16)");
  if (n < 8 || n > 256 || n % 8 != 0)
    throw InvalidArgument("wgmma n", std::to_string(n), "must be a multiple of 8 in 8..256");
  const int regs = n / 2;
  const char* type = input == DType::bf16 ? "bf16" : "f16";
  std::string outs, operands;
  for (int i = 0; i < regs; ++i) {
    outs += fmt::format("{}%{}", i ? ", " : "", i);
    operands += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  }
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

}  // namespace autogemm::runtime
