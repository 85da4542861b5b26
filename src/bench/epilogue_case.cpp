#include "bench/epilogue_case.hpp"

#include "bench/unfused_epilogue.hpp"

namespace autogemm::bench {

EpilogueCase make_epilogue_case(const GemmProblem& problem, GemmOperands& ours, uint64_t seed) {
  const Epilogue& e = problem.epilogue;
  EpilogueCase c;
  c.plain = problem;
  c.plain.epilogue = Epilogue{};
  c.plain_ops = ours;
  c.plain_ops.bias = nullptr;
  c.plain_ops.row_scale = c.plain_ops.col_scale = nullptr;
  const std::size_t d_count = operand_elements(problem, 'D');
  c.d_unfused = DeviceBuffer(d_count * dtype_bytes(problem.d_type));
  fill_poison(c.d_unfused.get(), d_count, problem.d_type);
  c.plain_ops.d = c.d_unfused.get();
  if (e.bias) {
    c.bias = DeviceBuffer(std::size_t(problem.n) * dtype_bytes(*e.bias));
    fill_random(c.bias.get(), std::size_t(problem.n), *e.bias, seed + 4);
    c.host.bias = download_as_double(c.bias.get(), std::size_t(problem.n), *e.bias);
    ours.bias = c.bias.get();
  }
  if (e.row_scale) {
    c.row_scale = DeviceBuffer(std::size_t(problem.m) * sizeof(float));
    fill_uniform(c.row_scale.get(), std::size_t(problem.m), DType::fp32, seed + 5, 0.5, 1.5);
    c.host.row_scale = download_as_double(c.row_scale.get(), std::size_t(problem.m), DType::fp32);
    ours.row_scale = static_cast<const float*>(c.row_scale.get());
  }
  if (e.col_scale) {
    c.col_scale = DeviceBuffer(std::size_t(problem.n) * sizeof(float));
    fill_uniform(c.col_scale.get(), std::size_t(problem.n), DType::fp32, seed + 6, 0.5, 1.5);
    c.host.col_scale = download_as_double(c.col_scale.get(), std::size_t(problem.n), DType::fp32);
    ours.col_scale = static_cast<const float*>(c.col_scale.get());
  }
  return c;
}

void run_plain(const EpilogueCase& c, const GemmOptions& options, cudaStream_t stream) {
  gemm(c.plain, c.plain_ops, stream, options);
}

void run_unfused(const EpilogueCase& c, const GemmProblem& problem, const GemmOptions& options,
                 cudaStream_t stream) {
  run_plain(c, options, stream);
  GemmOperands vectors = c.plain_ops;
  vectors.bias = c.bias.get();
  vectors.row_scale = static_cast<const float*>(c.row_scale.get());
  vectors.col_scale = static_cast<const float*>(c.col_scale.get());
  unfused_epilogue(problem, vectors, stream);
}

void apply_epilogue_to_reference(const GemmProblem& problem, const EpilogueCase& c, int64_t rows,
                                 std::vector<double>& product) {
  apply_epilogue_reference(problem.epilogue, c.host, rows, problem.n, 1.0, 0.0, {}, 0, product);
}

}  // namespace autogemm::bench
