#include "bench/weights_bench.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "bench/compare.hpp"
#include "bench/tensors.hpp"
#include "bench/timing.hpp"
#include "cuda/cuda_check.hpp"
#include "runtime/cublaslt.hpp"

namespace autogemm::bench {

namespace {

// Rows of D checked against float64 on the host (every column, the whole of K).
constexpr int64_t kCheckedRows = 4;
// The split between rows whose time is the weight's bytes and those a launch's fixed
// cost dominates: a BF16 weight of at least 64 MB.
constexpr double kLargeWeightBytes = 64.0 * 1024 * 1024;

DeviceBuffer upload_bytes(const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return DeviceBuffer();
  DeviceBuffer to(bytes.size());
  cuda_check(cudaMemcpy(to.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
             "cudaMemcpy(packed weight)");
  return to;
}

WeightsRow measure_row(const BenchCase& shape, WeightFormat format, const BenchOptions& options,
                       cudaStream_t stream, L2Flusher& flusher, uint64_t seed) {
  WeightsRow row;
  row.shape = shape;
  row.format = format;
  GemmProblem p;
  p.m = shape.m;
  p.n = shape.n;
  p.k = shape.k;
  p.weight_format = format;
  row.packed_bytes = p.b_bytes();
  try {
    validate(p);
  } catch (const InvalidArgument& e) {
    row.failure = e.what();
    return row;
  }
  const std::vector<float> w = random_weight(p.n, p.k, seed);
  const PackedWeight packed = quantize_weight(w.data(), p.n, p.k, format);
  const DeviceWeight weight = upload_weight(packed);
  DeviceBuffer a(size_t(p.m * p.k) * 2), d(size_t(p.m * p.n) * 2), d_bf16(size_t(p.m * p.n) * 2),
      d_lt(size_t(p.m * p.n) * 2), b_bf16(size_t(p.n * p.k) * 2);
  fill_random(a.get(), size_t(p.m * p.k), DType::bf16, seed + 1);
  // The BF16 GEMMs' weight: random bf16 of the same shape (their times do not depend on it).
  fill_random(b_bf16.get(), size_t(p.n * p.k), DType::bf16, seed + 2);
  fill_poison(d.get(), size_t(p.m * p.n), DType::bf16);

  GemmOperands ours;
  ours.a = a.get();
  ours.d = d.get();
  weight.set_operands(ours);
  GemmOptions gemm_options;
  gemm_options.device = options.device;
  gemm_options.config = options.config;
  gemm_options.autotune = options.autotune;
  const GemmReport report = gemm(p, ours, stream, gemm_options);
  row.config = report.config.describe();
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(weight-only call)");

  // Correct first: the first rows against float64 of A and the dequantised weight.
  const std::vector<double> got = download_as_double(d.get(), size_t(p.m * p.n), DType::bf16);
  for (double v : got) row.unwritten += std::isfinite(v) ? 0 : 1;
  row.checked_rows = std::min(p.m, kCheckedRows);
  const std::vector<double> a_host =
      download_as_double(a.get(), size_t(row.checked_rows * p.k), DType::bf16);
  const std::vector<double> want =
      weight_reference(a_host, dequantize_weight(packed), row.checked_rows, p.n, p.k);
  row.diff = gemm_diff(std::vector<double>(got.begin(), got.begin() + want.size()), want);
  if (!(row.diff < 1e-5)) row.failure = fmt::format("diff {:.3e} is not under 1e-5", row.diff);
  if (row.unwritten > 0)
    row.failure += fmt::format("{}{} outputs not written", row.failure.empty() ? "" : "; ",
                               row.unwritten);

  GemmProblem bf16 = p;
  bf16.weight_format.reset();
  GemmOperands plain;
  plain.a = a.get();
  plain.b = b_bf16.get();
  plain.d = d_bf16.get();
  GemmOptions bf16_options;
  bf16_options.device = options.device;
  GemmOperands lt = plain;
  lt.d = d_lt.get();
  std::vector<std::function<void(cudaStream_t)>> calls = {
      [&](cudaStream_t s) { gemm(p, ours, s, gemm_options); },
      [&](cudaStream_t s) { gemm(bf16, plain, s, bf16_options); }};
  bool lt_runs = options.baseline;
  if (lt_runs) {
    try {
      runtime::cublaslt_gemm(bf16, lt, stream);
      calls.push_back([&](cudaStream_t s) { runtime::cublaslt_gemm(bf16, lt, s); });
    } catch (const runtime::CublasLtRefusal&) {
      lt_runs = false;
    }
  }
  // A bare read of the packed bytes: a device copy of half of them moves as many through DRAM.
  const size_t copy_bytes = size_t(row.packed_bytes / 2) / 16 * 16;
  DeviceBuffer copy_src(copy_bytes), copy_dst(copy_bytes);
  calls.push_back([&](cudaStream_t s) {
    cuda_check(cudaMemcpyAsync(copy_dst.get(), copy_src.get(), copy_bytes,
                               cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync(read of the packed bytes)");
  });
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(first calls)");
  const auto times = time_interleaved(calls, options.warmup, options.iters, stream,
                                      options.flush_l2 ? &flusher : nullptr);
  row.time_us = median(times[0]);
  row.bf16_us = median(times[1]);
  row.cublaslt_us = lt_runs ? median(times[2]) : 0;
  row.read_us = median(times.back());
  return row;
}

}  // namespace

void DeviceWeight::set_operands(GemmOperands& operands) const {
  operands.b = q.get();
  operands.b_scales = scales.get();
  operands.b_zeros = zeros.get();   // null when the format has none
}

std::vector<float> random_weight(int64_t n, int64_t k, uint64_t seed) {
  std::vector<float> w(size_t(n * k));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& x : w) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = (float(s >> 40) / float(1ull << 24) * 2.0f - 1.0f) * 0.05f;
  }
  return w;
}

DeviceWeight upload_weight(const PackedWeight& w) {
  validate(w);
  DeviceWeight d;
  d.q = upload_bytes(w.q);
  d.scales = upload_bytes(w.scales);
  d.zeros = upload_bytes(w.zeros);
  return d;
}

std::vector<double> weight_reference(const std::vector<double>& a, const std::vector<float>& w,
                                     int64_t rows, int64_t n, int64_t k) {
  std::vector<double> want(size_t(rows * n));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += a[size_t(i * k + kk)] * double(w[size_t(j * k + kk)]);
      want[size_t(i * n + j)] = sum;
    }
  return want;
}

std::vector<WeightsRow> run_weights_bench(const std::vector<BenchCase>& cases, WeightFormat format,
                                          const BenchOptions& options) {
  cuda_check(cudaSetDevice(options.device), "cudaSetDevice");
  L2Flusher flusher;
  std::vector<WeightsRow> rows;
  uint64_t seed = options.seed;
  for (const BenchCase& c : cases) {
    rows.push_back(measure_row(c, format, options, nullptr, flusher, seed));
    seed += 7;
    const WeightsRow& r = rows.back();
    fmt::print(stderr, "  {}x{}x{} {}: {:.1f} us{}\n", c.m, c.n, c.k, to_string(format),
               r.time_us, r.failure.empty() ? "" : " (" + r.failure + ")");
  }
  return rows;
}

std::string format_weights_table(const std::vector<WeightsRow>& rows, const std::string& device) {
  std::ostringstream out;
  out << fmt::format("device {}; weight-only {} against our BF16 GEMM and cuBLASLt BF16 on the "
                     "same shape; read: a copy moving the packed bytes once; L2 flushed, medians\n\n",
                     device, rows.empty() ? "" : std::string(to_string(rows.front().format)));
  out << fmt::format("{:>6} {:>6} {:>6} {:<12} {:<22} {:>9} {:>8} {:>9} {:>7} {:>9} {:>7} {:>8} "
                     "{:>6} {:>9}\n",
                     "m", "n", "k", "tag", "config", "packed MB", "time_us", "bf16_us", "x bf16",
                     "cuBLASLt", "x lt", "read_us", "read", "diff");
  std::vector<double> all, large, lt, shares;
  int failed = 0;
  for (const WeightsRow& r : rows) {
    if (!r.failure.empty()) {
      ++failed;
      out << fmt::format("{:>6} {:>6} {:>6} {:<12} FAILED: {}\n", r.shape.m, r.shape.n, r.shape.k,
                         r.shape.tag, r.failure);
      if (r.time_us <= 0) continue;
    }
    out << fmt::format("{:>6} {:>6} {:>6} {:<12} {:<22} {:>9.2f} {:>8.2f} {:>9.2f} {:>7.3f} {:>9} "
                       "{:>7} {:>8.2f} {:>5.0f}% {:>9.2e}\n",
                       r.shape.m, r.shape.n, r.shape.k, r.shape.tag, r.config,
                       r.packed_bytes / 1e6, r.time_us, r.bf16_us, r.speedup_over_bf16(),
                       r.cublaslt_us > 0 ? fmt::format("{:.2f}", r.cublaslt_us) : "n/a",
                       r.cublaslt_us > 0 ? fmt::format("{:.3f}", r.ratio_to_cublaslt()) : "n/a",
                       r.read_us, 100 * r.read_share(), r.diff);
    if (!r.failure.empty()) continue;
    all.push_back(r.speedup_over_bf16());
    if (2.0 * r.shape.n * r.shape.k >= kLargeWeightBytes) large.push_back(r.speedup_over_bf16());
    if (r.cublaslt_us > 0) lt.push_back(r.ratio_to_cublaslt());
    shares.push_back(r.read_share());
  }
  out << fmt::format("\nspeedup over our BF16 (geomean): {:.3f} over {} rows; {:.3f} over the {} "
                     "rows with a BF16 weight of at least 64 MB\n",
                     geometric_mean(all), all.size(), geometric_mean(large), large.size());
  out << fmt::format("ratio to cuBLASLt BF16 (cuBLASLt time / ours, geomean): {:.3f} over {} rows\n",
                     geometric_mean(lt), lt.size());
  out << read_share_footer(shares, failed);
  return out.str();
}

std::string read_share_footer(const std::vector<double>& shares, int failed) {
  std::string out;
  if (!shares.empty())
    out += fmt::format("share of a bare read of the packed bytes: median {:.0f}%, lowest {:.0f}%\n",
                       100 * median(shares), 100 * *std::min_element(shares.begin(), shares.end()));
  if (failed > 0) out += fmt::format("{} rows FAILED\n", failed);
  return out;
}

std::string weights_rows_to_csv(const std::vector<WeightsRow>& rows) {
  std::ostringstream out;
  out << "m,n,k,tag,format,config,packed_bytes,time_us,bf16_us,cublaslt_us,read_us,speedup_bf16,"
         "ratio_cublaslt,read_share,diff,failure\n";
  for (const WeightsRow& r : rows)
    out << fmt::format("{},{},{},{},{},\"{}\",{:.0f},{:.3f},{:.3f},{:.3f},{:.3f},{:.4f},{:.4f},"
                       "{:.4f},{:.3e},\"{}\"\n",
                       r.shape.m, r.shape.n, r.shape.k, r.shape.tag, to_string(r.format), r.config,
                       r.packed_bytes, r.time_us, r.bf16_us, r.cublaslt_us, r.read_us,
                       r.speedup_over_bf16(), r.ratio_to_cublaslt(), r.read_share(), r.diff,
                       r.failure);
  return out.str();
}

}  // namespace autogemm::bench
