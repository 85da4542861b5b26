#include "bench/epilogue_reference.hpp"

#include <cmath>

namespace autogemm::bench {

double activation_reference(Activation a, double x) {
  switch (a) {
    case Activation::none: return x;
    case Activation::relu: return x > 0 ? x : 0.0;
    case Activation::gelu_tanh:
      return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Activation::gelu_erf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::silu: return x / (1 + std::exp(-x));
  }
  return x;
}

void apply_epilogue_reference(const Epilogue& e, const EpilogueVectors& v, int64_t m, int64_t n,
                              double alpha, double beta, const std::vector<double>& c, int64_t ldc,
                              std::vector<double>& d) {
  // Before the activation (and, gated, before the gate meets up), in place.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double x = alpha * d[size_t(i * n + j)];
      if (e.row_scale) x *= v.row_scale[size_t(i)];
      if (e.col_scale) x *= v.col_scale[size_t(j)];
      if (e.bias) x += v.bias[size_t(j)];
      d[size_t(i * n + j)] = e.gated ? x : activation_reference(e.activation, x);
    }
  // Gated: column c of D from gate column 16 (c / 8) + c % 8 and the up column 8 after it.
  const int64_t d_cols = e.gated ? n / 2 : n;
  std::vector<double> out(size_t(m * d_cols));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < d_cols; ++j) {
      double x = d[size_t(i * n + j)];
      if (e.gated) {
        const int64_t gate = 2 * kGateRun * (j / kGateRun) + j % kGateRun;
        x = activation_reference(e.activation, d[size_t(i * n + gate)]) *
            d[size_t(i * n + gate + kGateRun)];
      }
      if (beta != 0) x += beta * c[size_t(i * ldc + j)];
      out[size_t(i * d_cols + j)] = x;
    }
  d = std::move(out);
}

}  // namespace autogemm::bench
