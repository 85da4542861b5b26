// GPU tests of row-band signals (GemmProblem::signal_bands; skipped without a Hopper GPU): the
// GEMM is checked against the float64 reference (poisoned D, guard rows, padded leading
// dimensions) while the kernel walks its bands and raises their flags; after each of two calls
// every flag is 1 and every counter back to 0; a second stream that waits for band 0's flag
// (cuStreamWaitValue32, as the tensor-parallel copies do) copies that band's finished rows while
// the GEMM runs on; C that arrives band by band while the kernel runs (band_c_ready) is waited
// for band by band. Bad band arguments are refused naming the argument, before any launch.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "autogemm/gemm.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/driver.hpp"
#include "error_test_util.hpp"
#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;

namespace {

std::vector<uint32_t> download_words(const bench::DeviceBuffer& b, std::size_t words) {
  std::vector<uint32_t> out(words);
  cuda_check(cudaMemcpy(out.data(), b.get(), words * 4, cudaMemcpyDeviceToHost), "cudaMemcpy(words)");
  return out;
}

// The GEMM through `config` with `ends` as its bands, called twice on the same operands.
void expect_signalled(int64_t m, int64_t n, int64_t k, const char* config,
                      const std::vector<int64_t>& ends, float beta) {
  GemmProblem p = autogemm::testing::problem(m, n, k);
  p.signal_bands = int(ends.size());
  const std::size_t bands = ends.size();
  bench::DeviceBuffer counters(bands * 4), flags(bands * 4);
  cuda_check(cudaMemset(counters.get(), 0, bands * 4), "cudaMemset(counters)");
  GemmOptions options;
  options.config = GemmConfig::parse(config);
  const auto check = autogemm::testing::run_call_and_check(
      p, 0.5f, beta, 7, true, nullptr,
      [&](const GemmProblem& q, const GemmOperands& ops_in, cudaStream_t s) {
        GemmOperands ops = ops_in;
        ops.band_ends = ends.data();
        ops.band_counters = static_cast<uint32_t*>(counters.get());
        ops.band_flags = static_cast<uint32_t*>(flags.get());
        GemmReport r;
        for (int call = 0; call < 2; ++call) {
          cuda_check(cudaMemset(flags.get(), 0, bands * 4), "cudaMemset(flags)");
          r = gemm(q, ops, s, options);
          cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(band signals)");
          EXPECT_EQ(download_words(flags, bands), std::vector<uint32_t>(bands, 1u))
              << config << " call " << call << ": every band's flag raised";
          EXPECT_EQ(download_words(counters, bands), std::vector<uint32_t>(bands, 0u))
              << config << " call " << call << ": every counter left at 0";
        }
        return r;
      });
  EXPECT_FALSE(check.used_vendor);
  AUTOGEMM_EXPECT_GEMM_OK(check, config << " " << m << "x" << n << "x" << k << " beta " << beta);
}

}  // namespace

TEST(BandSignalsGpu, EveryBandFlaggedAndTheResultExact) {
  AUTOGEMM_REQUIRE_GPU();
  // 2 x 1 clusters: bands of whole 256-row cluster tiles, a thin last one; one band; N with a
  // tile tail (1000 = 3 x 256 + 232); 1 x 2 clusters over 15 tiles along N (a partner past the
  // edge stores nothing and counts nothing).
  expect_signalled(1536, 1000, 1024, "128x256x64 s3 c2 p g8 cl2x1/b", {512, 1024, 1280, 1536}, 0.0f);
  expect_signalled(1536, 4096, 512, "128x256x64 s3 c2 p g8 cl2x1/b", {1536}, 1.0f);
  expect_signalled(1024, 1904, 704, "128x128x64 s4 c2 p g8 cl1x2/a", {128, 256, 1024}, 1.0f);
  // No cluster: 128-row bands; ping-pong consumers (one store per tile); eight bands.
  expect_signalled(1024, 3000, 512, "128x224x64 s3 c2 p g8", {384, 768, 896, 1024}, 1.0f);
  expect_signalled(1024, 3000, 512, "128x128x64 s4 c2 p g8 pp",
                   {128, 256, 384, 512, 640, 768, 896, 1024}, 0.0f);
}

TEST(BandSignalsGpu, AStreamWaitingForABandCopiesItsFinishedRows) {
  AUTOGEMM_REQUIRE_GPU();
  const int64_t m = 2048, n = 8192, k = 4096;
  GemmProblem p = autogemm::testing::problem(m, n, k);
  p.signal_bands = 2;
  const std::vector<int64_t> ends = {256, 2048};
  bench::DeviceBuffer a(std::size_t(m * k * 2)), b(std::size_t(n * k * 2)), d(std::size_t(m * n * 2));
  bench::DeviceBuffer copy(std::size_t(256 * n * 2)), words(4 * 4);
  bench::fill_random(a.get(), std::size_t(m * k), DType::bf16, 3);
  bench::fill_random(b.get(), std::size_t(n * k), DType::bf16, 4);
  cuda_check(cudaMemset(words.get(), 0, 16), "cudaMemset(words)");
  auto* counters = static_cast<uint32_t*>(words.get());
  uint32_t* flags = counters + 2;
  GemmOperands ops;
  ops.a = a.get(), ops.b = b.get(), ops.d = d.get();
  ops.band_ends = ends.data(), ops.band_counters = counters, ops.band_flags = flags;
  GemmOptions options;
  options.config = GemmConfig::parse("128x256x64 s3 c2 p g8 cl2x1/b");
  cudaStream_t gemm_stream = nullptr, copy_stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&gemm_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_check(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const driver::Api& api = driver::api();
  // Once first, so that the kernel is loaded before a stream waits on a flag: loading a module
  // can wait for the whole GPU to go idle (CUDA's lazy loading), which a waiting stream never
  // does (tp_exec.cpp prepares every kernel before it enqueues anything, for the same reason).
  gemm(p, ops, gemm_stream, options);
  cuda_check(cudaStreamSynchronize(gemm_stream), "sync");
  cuda_check(cudaMemset(flags, 0, 8), "clear the flags");
  for (int call = 0; call < 3; ++call) {
    cuda_check(cudaMemsetAsync(d.get(), 0xff, std::size_t(m * n * 2), gemm_stream), "poison D");
    cuda_check(cudaMemsetAsync(copy.get(), 0, std::size_t(256 * n * 2), gemm_stream), "clear");
    cuda_check(cudaStreamSynchronize(gemm_stream), "sync");
    driver::check(api.cuStreamWaitValue32(copy_stream, CUdeviceptr(flags), 1, CU_STREAM_WAIT_VALUE_EQ),
                  "cuStreamWaitValue32");
    driver::check(api.cuStreamWriteValue32(copy_stream, CUdeviceptr(flags), 0, CU_STREAM_WRITE_VALUE_DEFAULT),
                  "cuStreamWriteValue32");
    cuda_check(cudaMemcpyAsync(copy.get(), d.get(), std::size_t(256 * n * 2), cudaMemcpyDeviceToDevice,
                               copy_stream), "copy band 0");
    gemm(p, ops, gemm_stream, options);
    cuda_check(cudaStreamSynchronize(copy_stream), "sync copy");
    cuda_check(cudaStreamSynchronize(gemm_stream), "sync gemm");
    std::vector<uint16_t> got(std::size_t(256 * n)), want(std::size_t(256 * n));
    cuda_check(cudaMemcpy(got.data(), copy.get(), got.size() * 2, cudaMemcpyDeviceToHost), "down");
    cuda_check(cudaMemcpy(want.data(), d.get(), want.size() * 2, cudaMemcpyDeviceToHost), "down");
    EXPECT_EQ(got, want) << "call " << call << ": band 0 copied after its flag, as D holds it";
    std::vector<uint32_t> w(4);
    cuda_check(cudaMemcpy(w.data(), words.get(), 16, cudaMemcpyDeviceToHost), "down");
    EXPECT_EQ(w, (std::vector<uint32_t>{0, 0, 0, 1})) << "counters 0, band 0's flag taken, band 1's up";
    cuda_check(cudaMemset(flags + 1, 0, 4), "take band 1's flag");
  }
  cudaStreamDestroy(gemm_stream);
  cudaStreamDestroy(copy_stream);
}

// C arrives band by band after the GEMM was enqueued (a tensor-parallel partial from another
// GPU, tp_exec.cpp): C's buffer is poisoned, the GEMM is enqueued, and a copy stream held at a
// gate copies C in one band at a time and raises each band's word after its copy. While the
// gate is shut no band can finish (every band's epilogue waits for its C); once it opens, D is
// checked against the reference with the real C, and the kernel left the words raised.
void expect_c_waited_for(int64_t m, int64_t n, int64_t k, const char* config,
                         const std::vector<int64_t>& ends) {
  GemmProblem p = autogemm::testing::problem(m, n, k);
  p.signal_bands = int(ends.size());
  const std::size_t bands = ends.size();
  bench::DeviceBuffer words(bands * 3 * 4 + 4);  // counters, done flags, ready words, the gate
  GemmOptions options;
  options.config = GemmConfig::parse(config);
  const driver::Api& api = driver::api();
  const auto check = autogemm::testing::run_call_and_check(
      p, 0.5f, 1.0f, 11, true, nullptr,
      [&](const GemmProblem& q, const GemmOperands& ops_in, cudaStream_t) {
        GemmOperands ops = ops_in;
        auto* counters = static_cast<uint32_t*>(words.get());
        uint32_t* done = counters + bands;
        uint32_t* ready = done + bands;
        uint32_t* gate = ready + bands;
        const int out_bytes = dtype_bytes(q.d_type);
        const std::size_t c_bytes = std::size_t(q.m * q.ldc_or_packed() * out_bytes);
        bench::DeviceBuffer held(c_bytes);
        auto* c = static_cast<char*>(const_cast<void*>(ops.c));
        cuda_check(cudaMemcpy(held.get(), c, c_bytes, cudaMemcpyDeviceToDevice), "hold C");
        bench::fill_poison(c, std::size_t(q.m * q.ldc_or_packed()), q.d_type);
        cuda_check(cudaMemset(words.get(), 0, bands * 3 * 4 + 4), "clear the words");
        ops.band_ends = ends.data();
        ops.band_counters = counters;
        ops.band_flags = done;
        ops.band_c_ready = ready;
        cudaStream_t gemm_stream = nullptr, copy_stream = nullptr, side = nullptr;
        for (cudaStream_t* st : {&gemm_stream, &copy_stream, &side})
          cuda_check(cudaStreamCreateWithFlags(st, cudaStreamNonBlocking), "cudaStreamCreate");
        GemmReport r = gemm(q, ops, gemm_stream, options);
        driver::check(api.cuStreamWaitValue32(copy_stream, CUdeviceptr(gate), 1, CU_STREAM_WAIT_VALUE_EQ),
                      "cuStreamWaitValue32(gate)");
        const std::size_t row_bytes = std::size_t(q.ldc_or_packed() * out_bytes);
        for (std::size_t b = 0; b < bands; ++b) {
          const int64_t begin = b > 0 ? ends[b - 1] : 0;
          cuda_check(cudaMemcpyAsync(c + begin * row_bytes, static_cast<char*>(held.get()) + begin * row_bytes,
                                     std::size_t(ends[b] - begin) * row_bytes, cudaMemcpyDeviceToDevice,
                                     copy_stream), "copy a band of C");
          driver::check(api.cuStreamWriteValue32(copy_stream, CUdeviceptr(ready + b), 1,
                                                 CU_STREAM_WRITE_VALUE_DEFAULT), "raise a band's word");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        std::vector<uint32_t> early(bands);
        cuda_check(cudaMemcpyAsync(early.data(), done, bands * 4, cudaMemcpyDeviceToHost, side), "read");
        cuda_check(cudaStreamSynchronize(side), "sync side");
        EXPECT_EQ(early, std::vector<uint32_t>(bands, 0u)) << config << ": no band finished before its C";
        driver::check(api.cuStreamWriteValue32(side, CUdeviceptr(gate), 1, CU_STREAM_WRITE_VALUE_DEFAULT),
                      "open the gate");
        for (cudaStream_t st : {side, copy_stream, gemm_stream})
          cuda_check(cudaStreamSynchronize(st), "sync");
        std::vector<uint32_t> w(bands * 3);
        cuda_check(cudaMemcpy(w.data(), words.get(), w.size() * 4, cudaMemcpyDeviceToHost), "down");
        std::vector<uint32_t> want(bands, 0u);
        want.resize(bands * 3, 1u);
        EXPECT_EQ(w, want) << config << ": counters 0, every band flagged, the ready words left raised";
        for (cudaStream_t st : {gemm_stream, copy_stream, side}) cudaStreamDestroy(st);
        return r;
      });
  EXPECT_FALSE(check.used_vendor);
  AUTOGEMM_EXPECT_GEMM_OK(check, config << " " << m << "x" << n << "x" << k << ", C band by band");
}

TEST(BandSignalsGpu, CArrivingBandByBandIsWaitedFor) {
  AUTOGEMM_REQUIRE_GPU();
  expect_c_waited_for(1536, 1000, 1024, "128x256x64 s3 c2 p g8 cl2x1/b", {512, 1024, 1280, 1536});
  expect_c_waited_for(1024, 3000, 512, "128x128x64 s4 c2 p g8 pp",
                      {128, 256, 384, 512, 640, 768, 896, 1024});
}

TEST(BandSignalsGpu, BadBandsAreRefusedNamingTheArgument) {
  AUTOGEMM_REQUIRE_GPU();
  GemmProblem p = autogemm::testing::problem(1024, 1024, 256);
  p.signal_bands = 2;
  bench::DeviceBuffer a(1024 * 256 * 2), b(1024 * 256 * 2), d(1024 * 1024 * 2), words(16);
  GemmOperands ops;
  ops.a = a.get(), ops.b = b.get(), ops.d = d.get();
  ops.band_counters = static_cast<uint32_t*>(words.get());
  ops.band_flags = ops.band_counters + 2;
  GemmOptions options;
  options.config = GemmConfig::parse("128x256x64 s3 c2 p g8 cl2x1/b");
  auto call = [&] { gemm(p, ops, nullptr, options); };
  using autogemm::testing::expect_invalid;
  expect_invalid(call, "band_ends");  // null
  const std::vector<int64_t> not_whole = {384, 1024}, short_of_m = {256, 768}, backwards = {512, 256};
  ops.band_ends = not_whole.data();
  EXPECT_NE(expect_invalid(call, "band_ends[0]").find("256 rows"), std::string::npos);
  ops.band_ends = short_of_m.data();
  expect_invalid(call, "band_ends[1]");
  ops.band_ends = backwards.data();
  expect_invalid(call, "band_ends[1]");
  // Waiting for C where the kernel reads none.
  const std::vector<int64_t> ends = {256, 1024};
  ops.band_ends = ends.data();
  ops.band_c_ready = ops.band_counters;
  expect_invalid(call, "band_c_ready");
  ops.band_c_ready = nullptr;
  ops.band_ends = backwards.data();
  p.signal_bands = 0;
  expect_invalid(call, "band_ends");  // pointers without bands
  p.signal_bands = 17;
  expect_invalid(call, "signal_bands");
}
