#include "bench/grouped_weights_bench.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"
#include "bench/compare.hpp"
#include "bench/tensors.hpp"
#include "bench/timing.hpp"
#include "bench/weights_bench.hpp"
#include "cuda/cuda_check.hpp"

namespace autogemm::bench {

namespace {

// Valid rows checked against float64 in each checked group (every column, the whole of K).
constexpr int64_t kCheckedRows = 4;

// Every expert's packed weight, stacked as grouped_gemm() reads it ([groups, N, ...] values,
// scales, zeros). Three experts hold weights of their own (the first, the second, the last,
// the checked ones); the others copies of the first: the time does not depend on the values,
// and quantising hundreds of experts' weights on the host would dominate the run.
struct StackedWeight {
  DeviceBuffer q, scales, zeros;
  std::vector<std::vector<float>> dequantised;   // of weights 0, 1, 2 (experts 0, 1, last)
};

StackedWeight stack_weights(WeightFormat format, int64_t groups, int64_t n, int64_t k,
                            uint64_t seed) {
  std::vector<PackedWeight> distinct;
  StackedWeight s;
  for (int i = 0; i < 3; ++i) {
    distinct.push_back(quantize_weight(random_weight(n, k, seed + uint64_t(i)).data(), n, k, format));
    s.dequantised.push_back(dequantize_weight(distinct.back()));
  }
  const PackedWeight& first = distinct.front();
  s.q = DeviceBuffer(first.q.size() * size_t(groups));
  s.scales = DeviceBuffer(first.scales.size() * size_t(groups));
  if (!first.zeros.empty()) s.zeros = DeviceBuffer(first.zeros.size() * size_t(groups));
  for (int64_t g = 0; g < groups; ++g) {
    const PackedWeight& w = distinct[g == 0 ? 0 : g == 1 ? 1 : g == groups - 1 ? 2 : 0];
    const auto put = [&](DeviceBuffer& to, const std::vector<uint8_t>& bytes) {
      if (bytes.empty()) return;
      cuda_check(cudaMemcpy(static_cast<char*>(to.get()) + bytes.size() * size_t(g), bytes.data(),
                            bytes.size(), cudaMemcpyHostToDevice),
                 "cudaMemcpy(stacked packed weight)");
    };
    put(s.q, w.q);
    put(s.scales, w.scales);
    put(s.zeros, w.zeros);
  }
  return s;
}

GroupedWeightsRow measure_row(const GroupedCase& shape, WeightFormat format,
                              const BenchOptions& options, L2Flusher& flusher, uint64_t seed) {
  GroupedWeightsRow row;
  row.shape = shape;
  row.format = format;
  GemmProblem p;
  p.grouping = Grouping::masked;
  p.num_groups = shape.groups;
  // max_m: the group's rows rounded up to the masked layout's alignment.
  p.m = row.max_m = (shape.m_per_group + kMaskedMaxMAlignment - 1) / kMaskedMaxMAlignment *
                    kMaskedMaxMAlignment;
  p.expected_m = shape.m_per_group;
  p.n = shape.n;
  p.k = shape.k;
  p.weight_format = format;
  row.packed_bytes = double(shape.groups) * p.b_bytes();
  try {
    if (shape.kind != Grouping::masked)
      throw InvalidArgument("kind", std::string(to_string(shape.kind)),
                            "--weights rows are MoE decode steps: the masked layout");
    validate(p);
  } catch (const InvalidArgument& e) {
    row.failure = e.what();
    return row;
  }
  const int64_t groups = p.num_groups, n = p.n, k = p.k, stored = groups * p.m;
  const StackedWeight weight = stack_weights(format, groups, n, k, seed);
  DeviceBuffer a(size_t(stored * k) * 2), d(size_t(stored * n) * 2), d_bf16(size_t(stored * n) * 2),
      b_bf16(size_t(groups * n * k) * 2), counts(size_t(groups) * sizeof(int32_t));
  fill_random(a.get(), size_t(stored * k), DType::bf16, seed + 5);
  // The BF16 grouped GEMM's experts: random bf16 of the same shape (its time does not depend on
  // the values).
  fill_random(b_bf16.get(), size_t(groups * n * k), DType::bf16, seed + 6);
  fill_poison(d.get(), size_t(stored * n), DType::bf16);
  const std::vector<int32_t> rows(size_t(groups), int32_t(shape.m_per_group));
  cuda_check(cudaMemcpy(counts.get(), rows.data(), rows.size() * sizeof(int32_t),
                        cudaMemcpyHostToDevice),
             "cudaMemcpy(masked_m)");

  GroupedOperands ours;
  ours.a = a.get();
  ours.b = weight.q.get();
  ours.b_scales = weight.scales.get();
  ours.b_zeros = weight.zeros.get();
  ours.d = d.get();
  ours.masked_m = static_cast<const int32_t*>(counts.get());
  GemmOptions gemm_options;
  gemm_options.device = options.device;
  gemm_options.config = options.config;
  try {
    row.config = grouped_gemm(p, ours, nullptr, gemm_options).config.describe();
  } catch (const InvalidArgument& e) {
    row.failure = e.what();
    return row;
  }
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(grouped weight-only call)");

  // Correct first: the checked groups' first rows against float64, and no row past masked_m
  // written (the poison's bits, compared as the doubles they download as).
  const std::vector<double> got = download_as_double(d.get(), size_t(stored * n), DType::bf16);
  const std::vector<double> poison_row = [&] {
    DeviceBuffer one(size_t(n) * 2);
    fill_poison(one.get(), size_t(n), DType::bf16);
    return download_as_double(one.get(), size_t(n), DType::bf16);
  }();
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t r = shape.m_per_group; r < p.m; ++r)
      for (int64_t c = 0; c < n; ++c)
        if (std::memcmp(&got[size_t((g * p.m + r) * n + c)], &poison_row[size_t(c)], sizeof(double)) != 0)
          ++row.rows_touched;
  const int64_t checked = std::min(shape.m_per_group, kCheckedRows);
  const std::vector<double> all_a = download_as_double(a.get(), size_t(stored * k), DType::bf16);
  for (const auto& [g, w] : {std::pair<int64_t, int>{0, 0}, {1, 1}, {groups - 1, 2}}) {
    if (g < 0 || g >= groups || (g == groups - 1 && groups <= 2)) continue;
    const auto a_first = all_a.begin() + std::ptrdiff_t(g * p.m * k);
    const std::vector<double> a_g(a_first, a_first + std::ptrdiff_t(checked * k));
    const std::vector<double> want = weight_reference(a_g, weight.dequantised[size_t(w)], checked, n, k);
    const auto got_first = got.begin() + std::ptrdiff_t(g * p.m * n);
    row.diff = std::max(row.diff, gemm_diff(std::vector<double>(got_first, got_first + std::ptrdiff_t(want.size())), want));
  }
  if (!(row.diff < 1e-5)) row.failure = fmt::format("diff {:.3e} is not under 1e-5", row.diff);
  if (row.rows_touched > 0)
    row.failure += fmt::format("{}{} outputs past masked_m written", row.failure.empty() ? "" : "; ",
                               row.rows_touched);

  GemmProblem bf16 = p;
  bf16.weight_format.reset();
  GroupedOperands plain = ours;
  plain.b = b_bf16.get();
  plain.b_scales = plain.b_zeros = nullptr;
  plain.d = d_bf16.get();
  GemmOptions bf16_options;
  bf16_options.device = options.device;
  // A bare read of the packed bytes: a device copy of half of them moves as many through DRAM.
  const size_t copy_bytes = size_t(row.packed_bytes / 2) / 16 * 16;
  DeviceBuffer copy_src(copy_bytes), copy_dst(copy_bytes);
  const std::vector<std::function<void(cudaStream_t)>> calls = {
      [&](cudaStream_t s) { grouped_gemm(p, ours, s, gemm_options); },
      [&](cudaStream_t s) { grouped_gemm(bf16, plain, s, bf16_options); },
      [&](cudaStream_t s) {
        cuda_check(cudaMemcpyAsync(copy_dst.get(), copy_src.get(), copy_bytes,
                                   cudaMemcpyDeviceToDevice, s),
                   "cudaMemcpyAsync(read of the packed bytes)");
      }};
  const auto times = time_interleaved(calls, options.warmup, options.iters, nullptr,
                                      options.flush_l2 ? &flusher : nullptr);
  row.time_us = median(times[0]);
  row.bf16_us = median(times[1]);
  row.read_us = median(times[2]);
  return row;
}

}  // namespace

std::vector<GroupedWeightsRow> run_grouped_weights_bench(const std::vector<GroupedCase>& cases,
                                                         WeightFormat format,
                                                         const BenchOptions& options) {
  cuda_check(cudaSetDevice(options.device), "cudaSetDevice");
  L2Flusher flusher;
  std::vector<GroupedWeightsRow> rows;
  uint64_t seed = options.seed;
  for (const GroupedCase& c : cases) {
    rows.push_back(measure_row(c, format, options, flusher, seed));
    seed += 11;
    const GroupedWeightsRow& r = rows.back();
    fmt::print(stderr, "  {} x ({} x {} x {}) {}: {:.1f} us{}\n", c.groups, c.m_per_group, c.n,
               c.k, to_string(format), r.time_us, r.failure.empty() ? "" : " (" + r.failure + ")");
  }
  return rows;
}

std::string format_grouped_weights_table(const std::vector<GroupedWeightsRow>& rows,
                                         const std::string& device) {
  std::ostringstream out;
  out << fmt::format("device {}; grouped weight-only {} (masked: each expert m_per_group valid "
                     "rows of max_m) against our BF16 grouped GEMM on the same groups; read: a "
                     "copy moving every expert's packed bytes once; L2 flushed, medians\n\n",
                     device, rows.empty() ? "" : std::string(to_string(rows.front().format)));
  out << fmt::format("{:>6} {:>5} {:>5} {:>6} {:>6} {:<14} {:<22} {:>9} {:>8} {:>9} {:>7} {:>8} "
                     "{:>6} {:>9}\n",
                     "groups", "m/g", "max_m", "n", "k", "tag", "config", "packed MB", "time_us",
                     "bf16_us", "x bf16", "read_us", "read", "diff");
  std::vector<double> speedups, shares;
  int failed = 0;
  for (const GroupedWeightsRow& r : rows) {
    const GroupedCase& s = r.shape;
    if (!r.failure.empty()) {
      ++failed;
      out << fmt::format("{:>6} {:>5} {:>5} {:>6} {:>6} {:<14} FAILED: {}\n", s.groups,
                         s.m_per_group, r.max_m, s.n, s.k, s.tag, r.failure);
      if (r.time_us <= 0) continue;
    }
    out << fmt::format("{:>6} {:>5} {:>5} {:>6} {:>6} {:<14} {:<22} {:>9.2f} {:>8.2f} {:>9.2f} "
                       "{:>7.3f} {:>8.2f} {:>5.0f}% {:>9.2e}\n",
                       s.groups, s.m_per_group, r.max_m, s.n, s.k, s.tag, r.config,
                       r.packed_bytes / 1e6, r.time_us, r.bf16_us, r.speedup_over_bf16(),
                       r.read_us, 100 * r.read_share(), r.diff);
    if (!r.failure.empty()) continue;
    speedups.push_back(r.speedup_over_bf16());
    shares.push_back(r.read_share());
  }
  out << fmt::format("\nspeedup over our BF16 grouped GEMM (geomean): {:.3f} over {} rows\n",
                     geometric_mean(speedups), speedups.size());
  out << read_share_footer(shares, failed);
  return out.str();
}

std::string grouped_weights_rows_to_csv(const std::vector<GroupedWeightsRow>& rows) {
  std::ostringstream out;
  out << "kind,groups,m_per_group,max_m,n,k,tag,format,config,packed_bytes,time_us,bf16_us,"
         "read_us,speedup_bf16,read_share,diff,failure\n";
  for (const GroupedWeightsRow& r : rows)
    out << fmt::format("{},{},{},{},{},{},{},{},\"{}\",{:.0f},{:.3f},{:.3f},{:.3f},{:.4f},{:.4f},"
                       "{:.3e},\"{}\"\n",
                       to_string(r.shape.kind), r.shape.groups, r.shape.m_per_group, r.max_m,
                       r.shape.n, r.shape.k, r.shape.tag, to_string(r.format), r.config,
                       r.packed_bytes, r.time_us, r.bf16_us, r.read_us, r.speedup_over_bf16(),
                       r.read_share(), r.diff, r.failure);
  return out.str();
}

}  // namespace autogemm::bench
