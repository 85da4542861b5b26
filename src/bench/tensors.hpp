#pragma once
// Device buffers and test data for the bench and the GPU tests.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "autogemm/problem.hpp"

namespace autogemm::bench {

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

}  // namespace autogemm::bench
