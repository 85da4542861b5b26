// Comparing a multi-GPU result with the single-GPU one (result_match.hpp).
#include "multi/result_match.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "autogemm/errors.hpp"
#include "bench/compare.hpp"
#include "bench/number_formats.hpp"
#include "cuda/cuda_check.hpp"

namespace autogemm::multi {

ResultMatch match_results(const std::vector<unsigned char>& got,
                          const std::vector<unsigned char>& want, DType t) {
  if (got.size() != want.size())
    throw InvalidArgument("got", fmt::format("{} bytes", got.size()),
                          fmt::format("must be as long as the reference ({} bytes)", want.size()));
  ResultMatch match;
  match.bitwise = got == want;
  const std::size_t width = std::size_t(dtype_bytes(t));
  std::vector<double> x(got.size() / width), y(want.size() / width);
  for (std::size_t i = 0; i < x.size(); ++i) {
    uint32_t a = 0, b = 0;
    std::memcpy(&a, got.data() + i * width, width);
    std::memcpy(&b, want.data() + i * width, width);
    x[i] = bench::decode_to_double(a, t);
    y[i] = bench::decode_to_double(b, t);
    match.finite = match.finite && std::isfinite(x[i]);
  }
  if (!match.bitwise) match.diff = match.finite ? bench::gemm_diff(x, y) : 1.0;
  return match;
}

std::vector<unsigned char> download_bytes(const void* device, std::size_t bytes) {
  std::vector<unsigned char> host(bytes);
  if (bytes > 0)
    cuda_check(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDefault), "cudaMemcpy(download result)");
  return host;
}

}  // namespace autogemm::multi
