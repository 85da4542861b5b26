#pragma once
// `autogemm bench --plot FILE.svg`: ours against cuBLASLt per row as an SVG picture, written as
// plain text (no dependency). One panel of horizontal bars of the ratio (cuBLASLt time / ours)
// drawn from a line at 1.0, rows without a baseline marked n/a; when memory-bound rows
// (is_memory_bound) have a share of the device copy bandwidth, a second panel of that share.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_runner.hpp"

namespace autogemm::bench {

// What the picture shows of one row.
struct PlotRow {
  std::string label;                  // "4096 x 7168 x 16384 prefill": the shape and tag
  std::optional<double> ratio;        // cuBLASLt time / ours; none: no baseline (n/a)
  bool memory_bound = false;          // is_memory_bound(row)
  std::optional<double> copy_share;   // memory-bound rows: gbps / copy bandwidth (1.0 = 100%)
};

// The rows' labels and ratios; memory-bound rows get copy_share(row, copy_gbps) when
// copy_gbps > 0 (0: not known, e.g. a CSV read back without --copy-gbps).
std::vector<PlotRow> plot_rows(const std::vector<BenchRow>& rows, double copy_gbps);

struct PlotOptions {
  std::string title = "autogemm against cuBLASLt";
  std::string subtitle;               // one line under the title; empty: none
  double copy_gbps = 0;               // named in the memory-bound panel's heading when > 0
};

// The SVG document (UTF-8 text). Labels and titles are escaped (& < > " '). The memory-bound
// panel is drawn only when some memory-bound row has a copy_share.
std::string plot_svg(const std::vector<PlotRow>& rows, const PlotOptions& options = {});

// `bench --gpus N --suite ... --plot FILE.svg`: each strategy's run as a timeline, one lane per
// GPU, one bar per GEMM (migrated ones in another colour), idle gaps longer than the report's
// threshold marked under the lane. Times in microseconds from the run's start.
struct TimelineBar {
  double start_us = 0, end_us = 0;
  bool migrated = false;
  std::string label;                  // the hover text: "GEMM 12: 4096 x 7168 x 16384"
};
struct TimelineLane {
  std::string label;                  // "GPU 0"
  std::vector<TimelineBar> bars;
  std::vector<std::pair<double, double>> gaps;   // (start, length)
};
struct TimelinePanel {
  std::string heading;                // "load: makespan 2010 us, 1.02x the ideal"
  std::vector<TimelineLane> lanes;
};
std::string timeline_svg(const std::vector<TimelinePanel>& panels, const PlotOptions& options);

// "1 &amp; 2 &lt; 3": text made safe for SVG element content and attribute values.
std::string xml_escape(const std::string& text);

}  // namespace autogemm::bench
