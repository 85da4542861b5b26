// The bench's timing loop on the GPU (skipped without a Hopper GPU): the same call in both seats
// of time_interleaved must time alike, or every ratio the bench prints carries the seat's bias.
// Call by call, the first seat ran 20-25% behind on 6-8 us calls, and after a 5-round warm-up
// up to 11% on the first shape (bench/timing.cpp).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"
#include "bench/tensors.hpp"
#include "bench/timing.hpp"
#include "gpu_test_util.hpp"
#include "runtime/cublaslt.hpp"

using namespace autogemm;

TEST(BenchTimingGpu, LikeCallsTimeAlikeInEitherSeat) {
  AUTOGEMM_REQUIRE_GPU();
  // Small calls, where the seat mattered most (1649 x 16 x 12: 0.80 call by call), and one of
  // ~30 us.
  for (const auto& [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1649, 16, 16}, {512, 512, 512}, {2048, 2048, 2048}}) {
    GemmProblem p;
    p.m = m;
    p.n = n;
    p.k = k;
    bench::DeviceBuffer a(std::size_t(m * k) * 2), b(std::size_t(n * k) * 2),
        d(std::size_t(m * n) * 2);
    bench::fill_random(a.get(), std::size_t(m * k), DType::bf16, 1);
    bench::fill_random(b.get(), std::size_t(n * k), DType::bf16, 2);
    GemmOperands o;
    o.a = a.get();
    o.b = b.get();
    o.d = d.get();
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    const std::function<void(cudaStream_t)> call = [&](cudaStream_t s) {
      runtime::cublaslt_gemm(p, o, s);
    };
    bench::L2Flusher flusher;
    const auto times = bench::time_interleaved({call, call}, 5, 100, stream, &flusher);
    cudaStreamDestroy(stream);
    const double first = bench::summarize(times[0]).median_us;
    const double second = bench::summarize(times[1]).median_us;
    std::printf("seats %lldx%lldx%lld: %.2f / %.2f us = %.3f\n", (long long)m, (long long)n,
                (long long)k, first, second, first / second);
    // Blocks of 10 after the warm-up kept the seats within 7.4% on an H200 at 50 calls a seat (30
    // shapes timed, mean 1.00), 0.99-1.05 at 100 (6 shapes); call by call 0.80-0.96.
    EXPECT_NEAR(first / second, 1.0, 0.08) << m << "x" << n << "x" << k << ": " << first
                                           << " us against " << second << " us";
  }
}
