// Comparing a multi-GPU result with the single-GPU one (result_match.hpp).
#include "multi/result_match.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

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
  if (match.bitwise) return match;
  // One pass, no float64 copies, over several threads: an all-reduce block of 16384^2 is 268 M
  // elements per rank, and two float64 vectors of it (4.3 GB) took the bench past its timeout.
  const std::size_t width = std::size_t(dtype_bytes(t));
  const std::size_t count = got.size() / width;
  const std::size_t threads =
      std::clamp<std::size_t>(count / (std::size_t(1) << 22), 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<bench::DiffSums> sums(threads);
  std::vector<char> finite(threads, 1);
  auto part = [&](std::size_t w) {
    const std::size_t begin = count * w / threads, end = count * (w + 1) / threads;
    for (std::size_t i = begin; i < end; ++i) {
      uint32_t a = 0, b = 0;
      std::memcpy(&a, got.data() + i * width, width);
      std::memcpy(&b, want.data() + i * width, width);
      const double x = bench::decode_to_double(a, t), y = bench::decode_to_double(b, t);
      if (!std::isfinite(x)) finite[w] = 0;
      sums[w].add(x, y);
    }
  };
  std::vector<std::thread> workers;
  for (std::size_t w = 1; w < threads; ++w) workers.emplace_back(part, w);
  part(0);
  for (std::thread& w : workers) w.join();
  bench::DiffSums total;
  for (const bench::DiffSums& s : sums) total.add(s);
  match.finite = std::all_of(finite.begin(), finite.end(), [](char f) { return f != 0; });
  match.diff = match.finite ? total.diff() : 1.0;
  return match;
}

std::vector<unsigned char> download_bytes(const void* device, std::size_t bytes) {
  std::vector<unsigned char> host(bytes);
  if (bytes > 0)
    cuda_check(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDefault), "cudaMemcpy(download result)");
  return host;
}

}  // namespace autogemm::multi
