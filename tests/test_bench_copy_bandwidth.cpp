// The copy-bandwidth reference of `autogemm bench`: GB/s arithmetic, buffer sizing, the
// memory-bound rows' share of it (line and JSON), and on a GPU the measurement itself.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "autogemm/errors.hpp"
#include "bench/bench_report.hpp"
#include "bench/copy_bandwidth.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;
constexpr std::size_t kGiB = std::size_t(1) << 30;

// A measured row of m x n x k whose GB/s is `gbps` (the other fields do not matter here).
BenchRow row_with_gbps(int64_t m, int64_t n, int64_t k, double gbps) {
  BenchRow r;
  r.problem.m = m;
  r.problem.n = n;
  r.problem.k = k;
  r.config = "test";
  r.ours = summarize({100.0});
  r.gbps = gbps;
  return r;
}

CopyBandwidth copy_of(double gbps) {
  CopyBandwidth c;
  c.bytes = kGiB;
  c.stats = summarize({1.0});
  c.gbps = gbps;
  return c;
}

}  // namespace

TEST(BenchCopyBandwidth, GbpsCountsReadAndWrite) {
  // 1 GiB read + 1 GiB written in 1 ms: 2 * 1073741824 B / 1e-3 s = 2147.483648e9 B/s.
  EXPECT_NEAR(copy_gbps(kGiB, 1000.0), 2147.483648, 1e-9);
  EXPECT_EQ(copy_gbps(kGiB, 0.0), 0.0);
}

TEST(BenchCopyBandwidth, BufferSizeIsOneGibOrAQuarterOfFreeMemory) {
  EXPECT_EQ(copy_buffer_bytes(80 * kGiB), kGiB);
  EXPECT_EQ(copy_buffer_bytes(4 * kGiB), kGiB);
  EXPECT_EQ(copy_buffer_bytes(2 * kGiB), 512 * kMiB);
  // A quarter of 2 GiB + 3 MiB is 512.75 MiB: rounded down to the 2 MiB granule.
  EXPECT_EQ(copy_buffer_bytes(2 * kGiB + 3 * kMiB), 512 * kMiB);
  EXPECT_EQ(copy_buffer_bytes(kGiB + 12 * kMiB), 258 * kMiB);
  EXPECT_EQ(copy_buffer_bytes(kGiB), 256 * kMiB);
  // A quarter of just under 1 GiB rounds down to 254 MiB, under the 256 MiB floor.
  EXPECT_THROW(copy_buffer_bytes(kGiB - 1), InvalidArgument);
  EXPECT_THROW(copy_buffer_bytes(0), InvalidArgument);
  try {
    copy_buffer_bytes(600 * kMiB);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.value(), "600 MiB");
    EXPECT_NE(e.rule().find("256 MiB"), std::string::npos) << e.what();
  }
}

TEST(BenchCopyBandwidth, BufferSizeText) {
  EXPECT_EQ(format_buffer_size(kGiB), "1 GiB");
  EXPECT_EQ(format_buffer_size(2 * kGiB), "2 GiB");
  EXPECT_EQ(format_buffer_size(512 * kMiB), "512 MiB");
  EXPECT_EQ(format_buffer_size(kGiB + 2 * kMiB), "1026 MiB");
}

TEST(BenchCopyBandwidth, SummaryCoversSmallMAndWeightBoundMiddleRows) {
  const std::vector<BenchRow> rows = {
      row_with_gbps(64, 7168, 16384, 2400),   // 80%
      row_with_gbps(128, 7168, 16384, 2700),  // 90%
      row_with_gbps(200, 7168, 16384, 2550),  // 85%: B is 97% of the bytes
      row_with_gbps(200, 1024, 1024, 600),    // B 71% of the bytes: not counted
      row_with_gbps(257, 7168, 16384, 600),   // past the weight-bound middle: not counted
      row_with_gbps(4096, 7168, 16384, 100),  // not counted either
  };
  const MemoryBoundSummary s = memory_bound_summary(rows, 3000);
  EXPECT_EQ(s.rows, 3);
  EXPECT_DOUBLE_EQ(s.min_share, 0.8);
  EXPECT_EQ(s.min_shape, "64x7168x16384");
  EXPECT_NEAR(s.geomean_share, std::cbrt(0.8 * 0.9 * 0.85), 1e-12);
  EXPECT_TRUE(is_memory_bound(rows[1]));
  EXPECT_TRUE(is_memory_bound(rows[2]));
  EXPECT_FALSE(is_memory_bound(rows[3]));
  EXPECT_FALSE(is_memory_bound(rows[4]));
  EXPECT_DOUBLE_EQ(copy_share(rows[4], 3000), 0.2);
}

TEST(BenchCopyBandwidth, SummaryWithoutMemoryBoundRowsIsEmpty) {
  const MemoryBoundSummary s =
      memory_bound_summary({row_with_gbps(4096, 4096, 4096, 900)}, 3000);
  EXPECT_EQ(s.rows, 0);
  EXPECT_EQ(s.min_share, 0.0);
  EXPECT_EQ(s.geomean_share, 0.0);
  EXPECT_TRUE(s.min_shape.empty());
}

TEST(BenchCopyBandwidth, ShareNeedsAMeasuredBandwidth) {
  const std::vector<BenchRow> rows = {row_with_gbps(64, 7168, 16384, 2400)};
  EXPECT_THROW(memory_bound_summary(rows, 0), InvalidArgument);
  EXPECT_THROW(memory_bound_summary(rows, -1), InvalidArgument);
  EXPECT_THROW(memory_bound_summary(rows, std::nan("")), InvalidArgument);
  EXPECT_THROW(copy_share(rows[0], 0), InvalidArgument);
}

TEST(BenchCopyBandwidth, LineNamesTheSlowestRow) {
  const std::vector<BenchRow> rows = {row_with_gbps(128, 7168, 16384, 2700),
                                      row_with_gbps(64, 7168, 16384, 2400),
                                      row_with_gbps(4096, 7168, 16384, 700)};
  EXPECT_EQ(format_copy_bandwidth_line(copy_of(3000), rows),
            "copy bandwidth (cudaMemcpy D2D, 1 GiB): 3000 GB/s; memory-bound rows (M <= 128): "
            "min 80% (64x7168x16384), geomean 85% of it");
  EXPECT_EQ(format_copy_bandwidth_line(copy_of(2950.4), {rows[2]}),
            "copy bandwidth (cudaMemcpy D2D, 1 GiB): 2950 GB/s; no memory-bound rows (M <= 128)");
}

TEST(BenchCopyBandwidth, JsonHasCopyFieldsOnlyWhenMeasured) {
  const std::vector<BenchRow> rows = {row_with_gbps(64, 7168, 16384, 2400),
                                      row_with_gbps(4096, 7168, 16384, 700)};
  const CopyBandwidth copy = copy_of(3000);
  const auto j = nlohmann::json::parse(rows_to_json(rows, &copy));
  EXPECT_DOUBLE_EQ(j.at("copy_gbps").get<double>(), 3000);
  EXPECT_EQ(j.at("copy_bytes").get<std::size_t>(), kGiB);
  EXPECT_EQ(j.at("copy").at("samples").get<int>(), 1);
  EXPECT_DOUBLE_EQ(j.at("rows")[0].at("copy_share").get<double>(), 0.8);
  EXPECT_FALSE(j.at("rows")[1].contains("copy_share"));
  const auto& mb = j.at("memory_bound");
  EXPECT_EQ(mb.at("max_m").get<int>(), 128);
  EXPECT_EQ(mb.at("rows").get<int>(), 1);
  EXPECT_DOUBLE_EQ(mb.at("min_share").get<double>(), 0.8);
  EXPECT_EQ(mb.at("min_shape").get<std::string>(), "64x7168x16384");
  EXPECT_DOUBLE_EQ(mb.at("geomean_share").get<double>(), 0.8);

  const auto plain = nlohmann::json::parse(rows_to_json(rows));
  EXPECT_FALSE(plain.contains("copy_gbps"));
  EXPECT_FALSE(plain.contains("memory_bound"));
  EXPECT_FALSE(plain.at("rows")[0].contains("copy_share"));
}

// A memory-bound row's own-bytes copy (BenchRow::same_bytes_copy): share = copy time / GEMM
// time, summarised over the rows that have one, printed one row per line, and in the JSON.
TEST(BenchCopyBandwidth, SameBytesCopyShare) {
  std::vector<BenchRow> rows = {row_with_gbps(64, 2112, 7168, 1200),
                                row_with_gbps(64, 7168, 16384, 2400),
                                row_with_gbps(4096, 7168, 16384, 700)};
  rows[0].ours.median_us = 13.5;
  rows[0].same_bytes_copy = TimingStats{};
  rows[0].same_bytes_copy->median_us = 9.45;   // 70%
  rows[1].ours.median_us = 45.0;
  rows[1].same_bytes_copy = TimingStats{};
  rows[1].same_bytes_copy->median_us = 40.5;   // 90%
  EXPECT_NEAR(same_bytes_share(rows[0]), 0.7, 1e-12);
  EXPECT_EQ(same_bytes_share(rows[2]), 0.0);
  const MemoryBoundSummary s = memory_bound_summary(rows, 3000);
  EXPECT_EQ(s.same_bytes_rows, 2);
  EXPECT_NEAR(s.same_bytes_min_share, 0.7, 1e-12);
  EXPECT_EQ(s.same_bytes_min_shape, "64x2112x7168");
  EXPECT_NEAR(s.same_bytes_geomean_share, std::sqrt(0.7 * 0.9), 1e-12);
  const std::string line = format_copy_bandwidth_line(copy_of(3000), rows);
  EXPECT_NE(line.find("\nmemory-bound rows against a copy of their own bytes timed like them "
                      "(cudaMemcpy D2D, L2 flushed): min 70% (64x2112x7168), geomean 79% of its "
                      "speed"),
            std::string::npos)
      << line;
  const std::string table = format_same_bytes_table(rows);
  EXPECT_NE(table.find("64x2112x7168"), std::string::npos) << table;
  EXPECT_NE(table.find("13.50"), std::string::npos) << table;
  EXPECT_NE(table.find("9.45"), std::string::npos) << table;
  EXPECT_EQ(table.find("4096x7168x16384"), std::string::npos) << table;
  const CopyBandwidth copy = copy_of(3000);
  const auto j = nlohmann::json::parse(rows_to_json(rows, &copy));
  EXPECT_DOUBLE_EQ(j.at("rows")[1].at("same_bytes_copy_us").get<double>(), 40.5);
  EXPECT_FALSE(j.at("rows")[2].contains("same_bytes_share"));
  EXPECT_EQ(j.at("memory_bound").at("same_bytes_rows").get<int>(), 2);
  // Without same-bytes copies the line is the single line it was.
  EXPECT_EQ(format_copy_bandwidth_line(copy_of(3000), {row_with_gbps(64, 7168, 16384, 2400)}).find('\n'),
            std::string::npos);
}

TEST(BenchCopyBandwidthGpu, MeasuredBandwidthIsPlausible) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  const CopyBandwidth copy = measure_copy_bandwidth(gpu.ordinal, nullptr, 2, 10);
  EXPECT_GE(copy.bytes, 256 * kMiB);
  EXPECT_LE(copy.bytes, kGiB);
  EXPECT_EQ(copy.stats.samples, 10);
  EXPECT_GT(copy.stats.min_us, 0.0);
  EXPECT_NEAR(copy.gbps, copy_gbps(copy.bytes, copy.stats.median_us), 1e-9);
  // Any HBM GPU copies faster than 100 GB/s; 20 TB/s is above every memory system so far
  // (H100 3.35, H200 4.8, B200 8 TB/s peak): above it, L2 or a timing bug is being measured.
  EXPECT_GT(copy.gbps, 100.0);
  EXPECT_LT(copy.gbps, 20000.0);
}
