// Device buffers and test data: host-generated, uploaded; results downloaded as doubles.
#include "bench/tensors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include "autogemm/errors.hpp"
#include "autogemm/quantize.hpp"
#include "bench/number_formats.hpp"
#include "cuda/cuda_check.hpp"

namespace autogemm::bench {

Stream::Stream() {
  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}
Stream::~Stream() { (void)cudaStreamDestroy(stream_); }

// ---- DeviceBuffer -------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  cuda_check(cudaMalloc(&ptr_, bytes), "cudaMalloc(bench buffer)");
}

DeviceBuffer::~DeviceBuffer() {
  // Destructors must not throw; a failing cudaFree here means the context is already gone.
  if (ptr_ != nullptr) (void)cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

// ---- host-side generation -----------------------------------------------------------------

namespace {

constexpr std::size_t kChunkElements = std::size_t(1) << 20;
// Below this many elements one thread is faster than starting several.
constexpr std::size_t kParallelThreshold = std::size_t(1) << 22;

void check_supported(DType t) {
  if (!has_number_format(t))
    throw InvalidArgument("dtype", std::string(to_string(t)),
                          "bench tensors hold fp32, bf16, fp16, e4m3 or e5m2 values");
}

// SplitMix64 (Steele, Lea, Flood 2014): decorrelates the per-chunk seeds.
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Runs body(begin, end, chunk_index) over [0, count) in chunks of kChunkElements, on several
// threads when the range is large. Chunk boundaries never depend on the thread count.
template <typename Body>
void for_each_chunk(std::size_t count, Body body) {
  const std::size_t num_chunks = (count + kChunkElements - 1) / kChunkElements;
  auto run_chunks = [&](std::size_t first_chunk, std::size_t step) {
    for (std::size_t c = first_chunk; c < num_chunks; c += step)
      body(c * kChunkElements, std::min(count, (c + 1) * kChunkElements), c);
  };
  const std::size_t threads =
      count < kParallelThreshold
          ? 1
          : std::min<std::size_t>(num_chunks, std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 1) {
    run_chunks(0, 1);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (std::size_t t = 0; t < threads; ++t) workers.emplace_back(run_chunks, t, threads);
  for (auto& w : workers) w.join();
}

void store_bits(unsigned char* bytes, std::size_t index, uint32_t bits, int width) {
  switch (width) {
    case 1: bytes[index] = static_cast<unsigned char>(bits); break;
    case 2: {
      const uint16_t v = static_cast<uint16_t>(bits);
      std::memcpy(bytes + 2 * index, &v, 2);
      break;
    }
    default: std::memcpy(bytes + 4 * index, &bits, 4); break;
  }
}

uint32_t load_bits(const unsigned char* bytes, std::size_t index, int width) {
  switch (width) {
    case 1: return bytes[index];
    case 2: {
      uint16_t v;
      std::memcpy(&v, bytes + 2 * index, 2);
      return v;
    }
    default: {
      uint32_t v;
      std::memcpy(&v, bytes + 4 * index, 4);
      return v;
    }
  }
}

// Waits for the default stream: a pageable-memory cudaMemcpy to the device may return before
// its DMA lands, and cudaMemset is asynchronous ("API synchronization behavior", CUDA Runtime
// API); work on a non-blocking stream would not wait for either.
void finish_default_stream(const char* what) {
  cuda_check(cudaStreamSynchronize(nullptr), what);
}

void upload(void* device_ptr, const std::vector<unsigned char>& host, const char* what) {
  cuda_check(cudaMemcpy(device_ptr, host.data(), host.size(), cudaMemcpyHostToDevice), what);
  finish_default_stream(what);
}

}  // namespace

void fill_uniform(void* device_ptr, std::size_t count, DType t, uint64_t seed, double lo,
                  double hi) {
  check_supported(t);
  if (!(hi > lo))
    throw InvalidArgument("hi", std::to_string(hi), "must be greater than lo = " + std::to_string(lo));
  if (count == 0) return;
  const int width = dtype_bytes(t);
  std::vector<unsigned char> host(count * std::size_t(width));
  for_each_chunk(count, [&](std::size_t begin, std::size_t end, std::size_t chunk) {
    std::mt19937_64 rng(splitmix64(seed ^ splitmix64(chunk)));
    for (std::size_t i = begin; i < end; ++i) {
      // 53 random bits -> a double uniform in [0, 1).
      const double unit = double(rng() >> 11) * 0x1.0p-53;
      store_bits(host.data(), i, encode_from_double(lo + (hi - lo) * unit, t), width);
    }
  });
  // Never all zeros (a tiny e4m3 tensor can round every value to 0): the scan stops at the
  // first non-zero value, almost always the first.
  bool all_zero = true;
  for (std::size_t i = 0; i < count && all_zero; ++i)
    all_zero = decode_to_double(load_bits(host.data(), i, width), t) == 0.0;
  if (all_zero) store_bits(host.data(), 0, encode_from_double((hi != 0 ? hi : lo) / 2, t), width);
  upload(device_ptr, host, "cudaMemcpy(fill_uniform)");
}

void fill_random(void* device_ptr, std::size_t count, DType t, uint64_t seed) {
  fill_uniform(device_ptr, count, t, seed, -1.0, 1.0);
}

void upload_from_double(void* device_ptr, const std::vector<double>& values, DType t) {
  check_supported(t);
  if (values.empty()) return;
  const int width = dtype_bytes(t);
  std::vector<unsigned char> host(values.size() * std::size_t(width));
  for_each_chunk(values.size(), [&](std::size_t begin, std::size_t end, std::size_t) {
    for (std::size_t i = begin; i < end; ++i)
      store_bits(host.data(), i, encode_from_double(values[i], t), width);
  });
  upload(device_ptr, host, "cudaMemcpy(upload_from_double)");
}

void fill_poison(void* device_ptr, std::size_t count, DType t) {
  check_supported(t);
  if (count == 0) return;  // nothing to poison (a rank without D), maybe no pointer
  // All-ones bytes are NaN in every supported type: 0xFFFF (bf16, fp16: exponent all ones,
  // mantissa non-zero), 0xFFFFFFFF (fp32), 0xFF (e4m3: S.1111.111, e5m2: S.11111.11).
  cuda_check(cudaMemset(device_ptr, 0xFF, count * std::size_t(dtype_bytes(t))),
             "cudaMemset(fill_poison)");
  finish_default_stream("cudaStreamSynchronize(fill_poison)");
}

std::vector<double> download_as_double(const void* device_ptr, std::size_t count, DType t) {
  check_supported(t);
  std::vector<double> values(count);
  if (count == 0) return values;
  const int width = dtype_bytes(t);
  std::vector<unsigned char> host(count * std::size_t(width));
  cuda_check(cudaMemcpy(host.data(), device_ptr, host.size(), cudaMemcpyDeviceToHost),
             "cudaMemcpy(download_as_double)");
  for_each_chunk(count, [&](std::size_t begin, std::size_t end, std::size_t) {
    for (std::size_t i = begin; i < end; ++i)
      values[i] = decode_to_double(load_bits(host.data(), i, width), t);
  });
  return values;
}

// ---- a problem's operands -------------------------------------------------------------------

std::size_t operand_elements(const GemmProblem& p, char operand) {
  switch (operand) {
    case 'A': return std::size_t((a_is_k_major(p.layout) ? p.m : p.k) * p.lda_or_packed());
    case 'B': return std::size_t((b_is_k_major(p.layout) ? p.n : p.k) * p.ldb_or_packed());
    case 'C': return std::size_t(p.m * p.ldc_or_packed());
    case 'D': return std::size_t(p.m * p.ldd_or_packed());
    default: break;
  }
  throw InvalidArgument("operand", std::string(1, operand), "expected A, B, C or D");
}

void check_quantised_fp8_problem(const GemmProblem& problem) {
  if (problem.a_type != DType::e4m3 || problem.b_type != DType::e4m3)
    throw InvalidArgument("a_type", std::string(to_string(problem.a_type)),
                          "the bench makes FP8 inputs by quantising BF16 data to e4m3 "
                          "(quantize.hpp); both inputs must be e4m3");
  if (problem.layout != Layout::nt)
    throw InvalidArgument("layout", std::string(to_string(problem.layout)),
                          "FP8 inputs are quantised along K, which must be contiguous in both: nt");
  if (problem.lda_or_packed() != problem.k || problem.ldb_or_packed() != problem.k)
    throw InvalidArgument(problem.lda_or_packed() != problem.k ? "lda" : "ldb",
                          std::to_string(problem.lda_or_packed() != problem.k
                                             ? problem.lda_or_packed()
                                             : problem.ldb_or_packed()),
                          fmt::format("quantised FP8 operands are packed: must be K = {}",
                                      problem.k));
}

Fp8Sources make_fp8_sources(int64_t m, int64_t n, int64_t k, uint64_t seed) {
  const int bytes = dtype_bytes(DType::bf16);
  Fp8Sources s{DeviceBuffer(std::size_t(m * k) * bytes), DeviceBuffer(std::size_t(n * k) * bytes)};
  fill_random(s.a.get(), std::size_t(m * k), DType::bf16, seed);
  fill_random(s.b.get(), std::size_t(n * k), DType::bf16, seed + 1);
  return s;
}

Fp8Scales make_fp8_scales(int64_t m, int64_t n, int64_t k, Scaling scaling) {
  const int64_t b_scales = scaling == Scaling::block_1x128_1x128 ? fp8_scale_count_1x128(n, k)
                                                                 : fp8_scale_count_128x128(n, k);
  return {DeviceBuffer(std::size_t(fp8_scale_count_1x128(m, k)) * sizeof(float)),
          DeviceBuffer(std::size_t(b_scales) * sizeof(float))};
}

void quantize_fp8_sources(const Fp8Sources& sources, int64_t m, int64_t n, int64_t k, void* a,
                          void* b, const Fp8Scales& scales, cudaStream_t stream, Scaling scaling) {
  quantize_fp8_1x128(sources.a.get(), DType::bf16, m, k, k, a, static_cast<float*>(scales.a.get()),
                     stream);
  if (scaling == Scaling::block_1x128_1x128)
    quantize_fp8_1x128(sources.b.get(), DType::bf16, n, k, k, b,
                       static_cast<float*>(scales.b.get()), stream);
  else
    quantize_fp8_128x128(sources.b.get(), DType::bf16, n, k, k, b,
                         static_cast<float*>(scales.b.get()), stream);
}

GemmOperands GemmInputs::operands() const {
  GemmOperands o;
  o.a = a.get();
  o.b = b.get();
  o.d = d.get();
  o.scale_a = static_cast<const float*>(scales.a.get());
  o.scale_b = static_cast<const float*>(scales.b.get());
  if (c.get()) {
    o.c = c.get();
    o.beta = 1.0f;
  }
  return o;
}

GemmInputs make_gemm_inputs(const GemmProblem& problem, uint64_t seed) {
  GemmInputs in;
  const int in_bytes = dtype_bytes(problem.a_type);
  in.a = DeviceBuffer(operand_elements(problem, 'A') * in_bytes);
  in.b = DeviceBuffer(operand_elements(problem, 'B') * in_bytes);
  in.d = DeviceBuffer(operand_elements(problem, 'D') * dtype_bytes(problem.d_type));
  if (problem.scaling == Scaling::block_1x128_128x128) {
    check_quantised_fp8_problem(problem);
    const Fp8Sources sources = make_fp8_sources(problem.m, problem.n, problem.k, seed);
    in.scales = make_fp8_scales(problem.m, problem.n, problem.k);
    quantize_fp8_sources(sources, problem.m, problem.n, problem.k, in.a.get(), in.b.get(),
                         in.scales, nullptr);
    cuda_check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize(FP8 quantisation)");
  } else {
    fill_random(in.a.get(), operand_elements(problem, 'A'), problem.a_type, seed);
    fill_random(in.b.get(), operand_elements(problem, 'B'), problem.b_type, seed + 1);
  }
  if (problem.reads_c) {
    in.c = DeviceBuffer(operand_elements(problem, 'D') * dtype_bytes(problem.d_type));
    fill_random(in.c.get(), operand_elements(problem, 'D'), problem.d_type, seed + 7);
  }
  fill_poison(in.d.get(), operand_elements(problem, 'D'), problem.d_type);
  return in;
}

}  // namespace autogemm::bench
