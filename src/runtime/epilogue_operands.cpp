#include "runtime/epilogue_operands.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "autogemm/errors.hpp"

namespace autogemm::runtime {

void check_epilogue_operands(const GemmProblem& problem, const GemmOperands& o) {
  const Epilogue& e = problem.epilogue;
  const auto check = [](const char* name, const void* pointer, bool declared, int element_bytes,
                        const char* declaration) {
    const auto address = reinterpret_cast<uintptr_t>(pointer);
    if (declared && pointer == nullptr)
      throw InvalidArgument(name, "nullptr",
                            fmt::format("the problem's epilogue reads it ({})", declaration));
    if (!declared && pointer != nullptr)
      throw InvalidArgument(name, fmt::format("{:#x}", address),
                            fmt::format("given, but the problem's epilogue does not read it (set "
                                        "{})",
                                        declaration));
    // The kernels read the vectors element by element (sm90/fused_epilogue.cuh): any element
    // may start one, but a load inside an element faults (PTX ISA, "Addresses").
    if (declared && address % element_bytes != 0)
      throw InvalidArgument(name, fmt::format("{:#x}", address),
                            fmt::format("must be {}-byte aligned: a pointer to one of its "
                                        "elements",
                                        element_bytes));
  };
  check("bias", o.bias, e.bias.has_value(), e.bias && *e.bias == DType::bf16 ? 2 : 4,
        "problem.epilogue.bias");
  check("row_scale", o.row_scale, e.row_scale, 4, "problem.epilogue.row_scale");
  check("col_scale", o.col_scale, e.col_scale, 4, "problem.epilogue.col_scale");
  check("d_scale", o.d_scale, problem.d_type == DType::e4m3, 4, "problem.d_type e4m3");
}

}  // namespace autogemm::runtime
