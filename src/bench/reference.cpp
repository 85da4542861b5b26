// The reference GEMM launcher: src/kernels/reference/reference_gemm.cuh, compiled for the
// current device (runtime/simple_launch.hpp), one 16 x 16 thread block per 16 x 16 output tile.
#include "bench/reference.hpp"

#include <fmt/format.h>

#include <string>

#include "autogemm/errors.hpp"
#include "kernels/reference/reference_params.cuh"
#include "runtime/simple_launch.hpp"

namespace autogemm::bench {

namespace {

constexpr int kTile = 16;  // must match kTile in reference_gemm.cuh

int element_code(DType t, const char* argument) {
  switch (t) {
    case DType::fp32: return kReferenceFp32;
    case DType::bf16: return kReferenceBf16;
    case DType::fp16: return kReferenceFp16;
    case DType::e4m3: return kReferenceE4m3;
    case DType::e5m2: return kReferenceE5m2;
    default: break;
  }
  throw InvalidArgument(argument, std::string(to_string(t)),
                        "the reference GEMM reads fp32, bf16, fp16, e4m3 and e5m2");
}

}  // namespace

void reference_gemm(const GemmProblem& problem, const GemmOperands& operands, double* d_ref,
                    cudaStream_t stream, double* magnitude) {
  validate(problem);
  if (operands.a == nullptr) throw InvalidArgument("operands.a", "null", "A must be given");
  if (operands.b == nullptr) throw InvalidArgument("operands.b", "null", "B must be given");
  if (d_ref == nullptr) throw InvalidArgument("d_ref", "null", "the output must be given");
  if (operands.beta != 0.0f && operands.c == nullptr)
    throw InvalidArgument("operands.c", "null", fmt::format("beta = {} reads C", operands.beta));
  if (problem.scaling != Scaling::none &&
      (operands.scale_a == nullptr || operands.scale_b == nullptr))
    throw InvalidArgument(operands.scale_a == nullptr ? "operands.scale_a" : "operands.scale_b",
                          "null", fmt::format("scaling {} needs both scales",
                                              to_string(problem.scaling)));
  // Grid y is limited to 65535 blocks (CUDA C++ Programming Guide, "Technical Specifications").
  if ((problem.m + kTile - 1) / kTile > 65535)
    throw InvalidArgument("m", std::to_string(problem.m),
                          "the reference GEMM handles M <= 65535 * 16 = 1048560");

  ReferenceGemmParams params{};
  params.m = problem.m;
  params.n = problem.n;
  params.k = problem.k;
  params.lda = problem.lda_or_packed();
  params.ldb = problem.ldb_or_packed();
  params.ldc = problem.ldc_or_packed();
  params.a = operands.a;
  params.b = operands.b;
  params.c = operands.c;
  params.d = d_ref;
  params.magnitude = magnitude;
  params.scale_a = operands.scale_a;
  params.scale_b = operands.scale_b;
  params.alpha = operands.alpha;
  params.beta = operands.beta;
  params.a_type = element_code(problem.a_type, "a_type");
  params.b_type = element_code(problem.b_type, "b_type");
  params.c_type = element_code(problem.d_type, "d_type");
  params.a_k_major = a_is_k_major(problem.layout) ? 1 : 0;
  params.b_k_major = b_is_k_major(problem.layout) ? 1 : 0;
  params.scaling = problem.scaling == Scaling::per_tensor          ? kReferenceScalePerTensor
                   : problem.scaling == Scaling::block_1x128_128x128 ? kReferenceScaleBlock
                   : problem.scaling == Scaling::rowwise             ? kReferenceScaleRowwise
                   : problem.scaling == Scaling::block_1x128_1x128   ? kReferenceScale1x128
                                                                     : kReferenceScaleNone;

  runtime::SimpleGrid grid;
  grid.grid_x = static_cast<unsigned>((problem.n + kTile - 1) / kTile);
  grid.grid_y = static_cast<unsigned>((problem.m + kTile - 1) / kTile);
  grid.block_x = kTile;
  grid.block_y = kTile;
  runtime::launch_simple_kernel(
      "reference/reference_gemm.cuh", "autogemm_reference_gemm", grid, &params, stream,
      fmt::format("reference_gemm {}x{}x{}", problem.m, problem.n, problem.k));
}

}  // namespace autogemm::bench
