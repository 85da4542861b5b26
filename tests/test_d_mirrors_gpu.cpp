// GPU tests of D's mirrors (GemmProblem::d_mirrors; skipped without a Hopper GPU): every tile
// is stored into each mirror (poisoned before) exactly as into D, and D itself matches the
// float64 reference (guard rows, padded leading dimensions), with and without C and band
// signals, over an N tail, with clusters and ping-pong consumers; with two GPUs a mirror in the
// other GPU's memory (peer access), as the tensor-parallel all-reduce uses them (whose GPU
// tests run FP8 inputs mirrored too: test_tensor_parallel_gpu.cpp).
// Bad mirror arguments are refused naming the argument, before any launch.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "autogemm/gemm.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "error_test_util.hpp"
#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;

namespace {

// D's M x N elements (rows ldd apart) as bytes, from whichever GPU holds them.
std::vector<char> download_rows(const void* d, const GemmProblem& q) {
  const std::size_t row = std::size_t(q.n * dtype_bytes(q.d_type));
  std::vector<char> out(row * std::size_t(q.m));
  cuda_check(cudaMemcpy2D(out.data(), row, d, std::size_t(q.ldd_or_packed() * dtype_bytes(q.d_type)),
                          row, std::size_t(q.m), cudaMemcpyDefault),
             "cudaMemcpy2D(D rows)");
  return out;
}

// The GEMM through `config` with `mirrors` mirrors (the first on GPU `peer_device` when >= 0),
// bands `ends` signalled when not empty, called twice: after each call every mirror holds D.
void expect_mirrored(GemmProblem p, const char* config, int mirrors, float beta,
                     const std::vector<int64_t>& ends = {}, int peer_device = -1) {
  p.d_mirrors = mirrors;
  p.signal_bands = int(ends.size());
  GemmOptions options;
  options.config = GemmConfig::parse(config);
  const std::string label = fmt::format("{} {}x{}x{} {} mirrors {}{}{}", config, p.m, p.n, p.k,
                                        to_string(p.a_type), mirrors, ends.empty() ? "" : " bands",
                                        peer_device >= 0 ? " (one on the peer GPU)" : "");
  const auto check = autogemm::testing::run_call_and_check(
      p, 0.5f, beta, 13, true, nullptr,
      [&](const GemmProblem& q, const GemmOperands& ops_in, cudaStream_t s) {
        const std::size_t bytes = std::size_t(q.m * q.ldd_or_packed() * dtype_bytes(q.d_type));
        std::vector<bench::DeviceBuffer> buffers;
        for (int i = 0; i < mirrors; ++i) {
          const bool on_peer = i == 0 && peer_device >= 0;
          if (on_peer) cuda_check(cudaSetDevice(peer_device), "cudaSetDevice(peer)");
          buffers.emplace_back(bytes);
          if (on_peer) cuda_check(cudaSetDevice(0), "cudaSetDevice(0)");
        }
        bench::DeviceBuffer words(std::max<std::size_t>(1, ends.size()) * 8);
        GemmOperands ops = ops_in;
        for (int i = 0; i < mirrors; ++i) ops.d_mirror[i] = buffers[std::size_t(i)].get();
        if (!ends.empty()) {
          ops.band_ends = ends.data();
          ops.band_counters = static_cast<uint32_t*>(words.get());
          ops.band_flags = ops.band_counters + ends.size();
        }
        GemmReport r;
        for (int call = 0; call < 2; ++call) {
          for (auto& b : buffers) bench::fill_poison(b.get(), bytes / std::size_t(dtype_bytes(q.d_type)), q.d_type);
          cuda_check(cudaMemset(words.get(), 0, std::max<std::size_t>(1, ends.size()) * 8), "words");
          cuda_check(cudaDeviceSynchronize(), "poison the mirrors");
          r = gemm(q, ops, s, options);
          cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(mirrored)");
          const std::vector<char> d = download_rows(ops.d, q);
          for (int i = 0; i < mirrors; ++i)
            EXPECT_TRUE(download_rows(ops.d_mirror[i], q) == d)
                << label << ", call " << call << ": mirror " << i << " differs from D";
          if (!ends.empty()) {
            std::vector<uint32_t> w(2 * ends.size());
            cuda_check(cudaMemcpy(w.data(), words.get(), w.size() * 4, cudaMemcpyDeviceToHost), "words");
            std::vector<uint32_t> want(2 * ends.size(), 1u);
            std::fill(want.begin(), want.begin() + std::ptrdiff_t(ends.size()), 0u);
            EXPECT_EQ(w, want) << label << ": counters back to 0, every band flagged";
          }
        }
        return r;
      });
  EXPECT_FALSE(check.used_vendor);
  AUTOGEMM_EXPECT_GEMM_OK(check, label);
}

}  // namespace

TEST(DMirrorsGpu, EveryMirrorHoldsDAndDIsExact) {
  AUTOGEMM_REQUIRE_GPU();
  const GemmProblem bf16 = autogemm::testing::problem(1024, 1000, 512);
  // 2 x 1 clusters with C and bands; an N tail (1000 = 3 x 256 + 232: the tail box); three
  // mirrors; ping-pong consumers; no cluster, 224-column tiles.
  expect_mirrored(bf16, "128x256x64 s3 c2 p g8 cl2x1/b", 1, 1.0f, {256, 768, 1024});
  expect_mirrored(bf16, "128x256x64 s3 c2 p g8 cl2x1/b", 3, 0.0f);
  expect_mirrored(bf16, "128x128x64 s4 c2 p g8 pp", 2, 1.0f, {384, 1024});
  expect_mirrored(autogemm::testing::problem(640, 1792, 704), "128x224x64 s3 c2 p g8", 1, 0.0f);
}

TEST(DMirrorsGpu, AMirrorInTheOtherGpusMemory) {
  AUTOGEMM_REQUIRE_GPU();
  int count = 0, can = 0;
  cuda_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count < 2) GTEST_SKIP() << "one GPU: the peer mirror needs two";
  cuda_check(cudaDeviceCanAccessPeer(&can, 0, 1), "cudaDeviceCanAccessPeer");
  if (!can) GTEST_SKIP() << "GPU 0 has no peer access to GPU 1";
  cuda_check(cudaSetDevice(0), "cudaSetDevice(0)");
  if (const cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
      e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
    cuda_check(e, "cudaDeviceEnablePeerAccess(0 -> 1)");
  (void)cudaGetLastError();
  const GemmProblem p = autogemm::testing::problem(2048, 4096, 1024);
  expect_mirrored(p, "128x256x64 s3 c2 p g8 cl2x1/b", 1, 1.0f, {1024, 2048}, 1);
  expect_mirrored(p, "128x256x64 s3 c2 p g8 cl2x1/b", 2, 0.0f, {}, 1);
}

TEST(DMirrorsGpu, BadMirrorsAreRefusedNamingTheArgument) {
  AUTOGEMM_REQUIRE_GPU();
  GemmProblem p = autogemm::testing::problem(1024, 1024, 256);
  bench::DeviceBuffer a(1024 * 256 * 2), b(1024 * 256 * 2), d(1024 * 1024 * 2), m0(1024 * 1024 * 2 + 16);
  GemmOperands ops;
  ops.a = a.get(), ops.b = b.get(), ops.d = d.get();
  GemmOptions options;
  options.config = GemmConfig::parse("128x256x64 s3 c2 p g8 cl2x1/b");
  auto call = [&] { gemm(p, ops, nullptr, options); };
  using autogemm::testing::expect_invalid;
  p.d_mirrors = 1;
  expect_invalid(call, "d_mirror[0]");  // null
  ops.d_mirror[0] = static_cast<char*>(m0.get()) + 8;
  expect_invalid(call, "d_mirror[0]");  // not 16-byte aligned
  ops.d_mirror[0] = m0.get();
  ops.d_mirror[1] = m0.get();
  expect_invalid(call, "d_mirror[1]");  // past d_mirrors
  ops.d_mirror[1] = nullptr;
  p.d_mirrors = 4;
  expect_invalid(call, "d_mirrors");
  p.d_mirrors = 1;
  options.config = GemmConfig::parse("128x256x64 s3 c2 p g8 sk2");
  expect_invalid(call, "options.config");  // split-K pieces are summed before one store
}
