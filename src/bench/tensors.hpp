#pragma once
// Device buffers and test data for the bench and the GPU tests.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::bench {

// A non-blocking stream (no implicit sync with the legacy default stream), destroyed with it.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// cudaMalloc'd bytes, freed on destruction. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Uniform random values in [-1, 1) of type t, `count` elements, from `seed` (host-generated,
// uploaded). Never zeros: the matrix units run faster on zeros and zeros hide unwritten outputs.
void fill_random(void* device_ptr, std::size_t count, DType t, uint64_t seed);
// Uniform random values in [lo, hi) of type t (rounded to nearest even); FP8 block scales use
// positive ranges. Host-generated in chunks (one seeded generator per chunk, several threads
// for large tensors) so the result depends only on (count, t, seed, lo, hi).
void fill_uniform(void* device_ptr, std::size_t count, DType t, uint64_t seed, double lo,
                  double hi);
// Copies host values (converted to type t, rounded to nearest even) to the device.
void upload_from_double(void* device_ptr, const std::vector<double>& values, DType t);
// Fills and uploads are complete when these return (safe for any stream afterwards).
// Fills with a NaN bit pattern of type t so unwritten outputs are detectable.
void fill_poison(void* device_ptr, std::size_t count, DType t);
// Copies `count` elements of type t back to the host as doubles.
std::vector<double> download_as_double(const void* device_ptr, std::size_t count, DType t);

// ---- a problem's operands -------------------------------------------------------------------

// Elements operand 'A', 'B', 'C' or 'D' occupies as the problem stores it: rows (as stored)
// times the leading dimension.
std::size_t operand_elements(const GemmProblem& problem, char operand);

// FP8 inputs the way a user makes them, as `autogemm bench` and `autogemm tune` do: random BF16
// A (M x K) and B (N x K), K contiguous, quantised to e4m3 with 1 x 128 (A) and 128 x 128 (B)
// block scales by quantize.hpp.
//
// Throws InvalidArgument unless the problem is such a case: e4m3 inputs, layout nt, packed
// A and B (the quantiser writes packed rows).
void check_quantised_fp8_problem(const GemmProblem& problem);
// The BF16 data: fill_random from `seed` (A) and `seed + 1` (B), so the same seed gives the same
// values again (the float64 reference of the unquantised inputs is computed from them).
struct Fp8Sources {
  DeviceBuffer a, b;
};
Fp8Sources make_fp8_sources(int64_t m, int64_t n, int64_t k, uint64_t seed);
// The scales, sized by fp8_scale_count_1x128 (A) and fp8_scale_count_128x128 (B), or with
// block_1x128_1x128 fp8_scale_count_1x128 (B too).
struct Fp8Scales {
  DeviceBuffer a, b;
};
Fp8Scales make_fp8_scales(int64_t m, int64_t n, int64_t k,
                          Scaling scaling = Scaling::block_1x128_128x128);
// Quantises the sources into a (M x K e4m3, packed), b (N x K) and the scales, on `stream`: A
// 1 x 128, B 128 x 128 (or 1 x 128 with block_1x128_1x128).
void quantize_fp8_sources(const Fp8Sources& sources, int64_t m, int64_t n, int64_t k, void* a,
                          void* b, const Fp8Scales& scales, cudaStream_t stream,
                          Scaling scaling = Scaling::block_1x128_128x128);

// One problem's operands on random inputs: A and B as the problem stores them (fill_random from
// seed and seed + 1; block-scaled FP8: quantised BF16 sources, see above), D poisoned (NaN) so
// unwritten entries show; beta = 0. A problem that reads C gets a random C of its own and beta
// 1: the same kernel and bytes as the in-place D += A B it stands for, but a timed call may be
// repeated (gemm() tunes no call whose C is its D: each candidate would add to it again). Ready
// on the device when this returns.
struct GemmInputs {
  DeviceBuffer a, b, c, d;
  Fp8Scales scales;           // block-scaled FP8 only
  GemmOperands operands() const;
};
GemmInputs make_gemm_inputs(const GemmProblem& problem, uint64_t seed);

}  // namespace autogemm::bench
