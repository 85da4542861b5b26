#include "bench/plot_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "bench/copy_bandwidth.hpp"
#include "plan/swap_ab.hpp"

namespace autogemm::bench {

namespace {

// Geometry, in SVG user units (pixels).
constexpr double kWidth = 960;
constexpr double kLabelRight = 250;   // labels end here (text-anchor end)
constexpr double kPlotLeft = 262;
constexpr double kPlotRight = 870;    // room for the value text to the right
constexpr double kRowHeight = 22;
constexpr double kBarHeight = 14;
constexpr double kAxisHeight = 20;    // tick labels above the first row of a panel
constexpr double kHeadingHeight = 26;

const char* const kFaster = "#2e7d32";
const char* const kSlower = "#c62828";
const char* const kShare = "#1565c0";
const char* const kGrid = "#d9d9d9";
const char* const kMuted = "#666666";

// A tick step of 1, 2, 2.5 or 5 times a power of ten giving at most about `ticks` intervals.
double nice_step(double range, int ticks) {
  const double raw = range / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (f * power >= raw) return f * power;
  return 10 * power;
}

// Decimals that show every multiple of `step` exactly (0.05: 2, 0.025: 3).
int decimals(double step) {
  int d = 0;
  for (double scaled = step; d < 6 && std::abs(scaled - std::round(scaled)) > 1e-6; ++d)
    scaled *= 10;
  return d;
}

struct Axis {
  double lo = 0, hi = 1, step = 0.1;
  double x(double v) const {
    return kPlotLeft + (std::clamp(v, lo, hi) - lo) / (hi - lo) * (kPlotRight - kPlotLeft);
  }
};

Axis ratio_axis(const std::vector<PlotRow>& rows) {
  double lo = 0.95, hi = 1.05;  // 1.0 is always inside, with room on both sides
  for (const PlotRow& r : rows)
    if (r.ratio && std::isfinite(*r.ratio)) {
      lo = std::min(lo, *r.ratio);
      hi = std::max(hi, *r.ratio);
    }
  lo = std::max(lo, 0.0);
  Axis a;
  a.step = nice_step(hi - lo, 8);
  a.lo = std::floor(lo / a.step + 1e-9) * a.step;
  a.hi = std::ceil(hi / a.step - 1e-9) * a.step;
  return a;
}

Axis share_axis(const std::vector<const PlotRow*>& rows) {
  Axis a{0, 1, 0.25};  // 0-100%, wider only for a share above 100%
  for (const PlotRow* r : rows)
    if (r->copy_share && std::isfinite(*r->copy_share))
      a.hi = std::max(a.hi, std::ceil(*r->copy_share / a.step) * a.step);
  return a;
}

std::string text(double x, double y, const std::string& content, const std::string& attrs) {
  return fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" {}>{}</text>\n", x, y, attrs,
                     xml_escape(content));
}

// Grid lines and their labels for one panel, rows from `top` to `bottom`.
std::string grid(const Axis& a, double top, double bottom, bool percent) {
  std::string out = "<g class=\"grid\">\n";
  const int steps = int(std::lround((a.hi - a.lo) / a.step));
  for (int i = 0; i <= steps; ++i) {
    const double v = a.lo + i * a.step;
    const double x = a.x(v);
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
                       "stroke=\"{3}\" stroke-width=\"1\"/>\n",
                       x, top - 4, bottom, kGrid);
    const std::string label = percent ? fmt::format("{:.0f}%", v * 100)
                                      : fmt::format("{:.{}f}", v, decimals(a.step));
    out += text(x, top - 7, label, fmt::format("text-anchor=\"middle\" fill=\"{}\"", kMuted));
  }
  return out + "</g>\n";
}

// Light stripes behind every other row, and the row labels.
std::string row_frame(const std::string& label, std::size_t index, double y) {
  std::string out;
  if (index % 2 == 1)
    out += fmt::format("<rect x=\"0\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.0f}\" "
                       "fill=\"#f4f4f4\"/>\n", y, kWidth, kRowHeight);
  out += text(kLabelRight, y + kRowHeight / 2 + 4, label,
              "class=\"label\" text-anchor=\"end\"");
  return out;
}

std::string ratio_panel(const std::vector<PlotRow>& rows, double top) {
  const Axis a = ratio_axis(rows);
  const double first = top + kHeadingHeight + kAxisHeight;
  const double bottom = first + kRowHeight * double(rows.size());
  std::string out = "<g class=\"panel\" id=\"ratio\">\n";
  out += text(16, top + 16,
              "ratio = cuBLASLt time / ours (> 1, green: autogemm faster; red: slower)",
              "font-weight=\"bold\"");
  for (std::size_t i = 0; i < rows.size(); ++i)
    out += row_frame(rows[i].label, i, first + kRowHeight * double(i));
  out += grid(a, first, bottom, false);
  const double one = a.x(1.0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const PlotRow& r = rows[i];
    const double y = first + kRowHeight * double(i);
    const double text_y = y + kRowHeight / 2 + 4;
    if (!r.ratio || !std::isfinite(*r.ratio) || *r.ratio <= 0) {
      out += text(one + 6, text_y, "n/a (no cuBLASLt baseline)",
                  fmt::format("class=\"na\" fill=\"{}\" font-style=\"italic\"", kMuted));
      continue;
    }
    const double end = a.x(*r.ratio);
    const double left = std::min(one, end);
    const double width = std::max(std::abs(end - one), 1.0);
    out += fmt::format("<rect class=\"ratio-bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                       "height=\"{:.0f}\" fill=\"{}\"><title>{}: {:.3f}</title></rect>\n",
                       left, y + (kRowHeight - kBarHeight) / 2, width, kBarHeight,
                       *r.ratio >= 1.0 ? kFaster : kSlower, xml_escape(r.label), *r.ratio);
    out += text(std::max(one, end) + 6, text_y, fmt::format("{:.3f}", *r.ratio),
                "class=\"value\"");
  }
  out += fmt::format("<line class=\"one\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
                     "y2=\"{2:.1f}\" stroke=\"#000000\" stroke-width=\"1.5\"/>\n",
                     one, first - 4, bottom);
  return out + "</g>\n";
}

std::string memory_panel(const std::vector<const PlotRow*>& rows, double top, double copy_gbps) {
  const Axis a = share_axis(rows);
  const double first = top + kHeadingHeight + kAxisHeight;
  const double bottom = first + kRowHeight * double(rows.size());
  std::string out = "<g class=\"panel\" id=\"memory-bound\">\n";
  out += text(16, top + 16,
              fmt::format("memory-bound rows (M <= {}, or <= {} with B {:.0f}% of the bytes): share "
                          "of the device copy bandwidth{}",
                          kMemoryBoundMaxM, plan::kWeightBoundMaxM, 100 * plan::kWeightBoundMinShare,
                          copy_gbps > 0 ? fmt::format(" ({:.0f} GB/s)", copy_gbps) : ""),
              "font-weight=\"bold\"");
  for (std::size_t i = 0; i < rows.size(); ++i)
    out += row_frame(rows[i]->label, i, first + kRowHeight * double(i));
  out += grid(a, first, bottom, true);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const PlotRow& r = *rows[i];
    const double y = first + kRowHeight * double(i);
    const double text_y = y + kRowHeight / 2 + 4;
    if (!r.copy_share || !std::isfinite(*r.copy_share)) {
      out += text(kPlotLeft + 6, text_y, "n/a",
                  fmt::format("class=\"na\" fill=\"{}\" font-style=\"italic\"", kMuted));
      continue;
    }
    const double end = a.x(*r.copy_share);
    out += fmt::format("<rect class=\"share-bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                       "height=\"{:.0f}\" fill=\"{}\"><title>{}: {:.0f}%</title></rect>\n",
                       kPlotLeft, y + (kRowHeight - kBarHeight) / 2,
                       std::max(end - kPlotLeft, 1.0), kBarHeight, kShare, xml_escape(r.label),
                       *r.copy_share * 100);
    out += text(std::max(end, kPlotLeft) + 6, text_y,
                fmt::format("{:.0f}%", *r.copy_share * 100), "class=\"value\"");
  }
  return out + "</g>\n";
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<PlotRow> plot_rows(const std::vector<BenchRow>& rows, double copy_gbps) {
  std::vector<PlotRow> out;
  out.reserve(rows.size());
  for (const BenchRow& r : rows) {
    PlotRow p;
    p.label = fmt::format("{} x {} x {}", r.problem.m, r.problem.n, r.problem.k);
    if (!r.tag.empty()) p.label += " " + r.tag;
    if (r.baseline && r.ratio > 0) p.ratio = r.ratio;
    p.memory_bound = is_memory_bound(r);
    if (p.memory_bound && copy_gbps > 0) p.copy_share = copy_share(r, copy_gbps);
    out.push_back(std::move(p));
  }
  return out;
}


namespace {

// The document's start: the canvas, a white background, the title and the subtitle.
std::string svg_opening(double height, const PlotOptions& options) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" "
                     "height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
                     "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
                     kWidth, height);
  out += "<title>" + xml_escape(options.title) + "</title>\n";
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" "
                     "fill=\"#ffffff\"/>\n", kWidth, height);
  out += text(16, 26, options.title, "class=\"title\" font-size=\"16\" font-weight=\"bold\"");
  if (!options.subtitle.empty())
    out += text(16, 46, options.subtitle, fmt::format("class=\"subtitle\" fill=\"{}\"", kMuted));
  return out;
}

}  // namespace

std::string plot_svg(const std::vector<PlotRow>& rows, const PlotOptions& options) {
  std::vector<const PlotRow*> memory;
  bool any_share = false;
  for (const PlotRow& r : rows)
    if (r.memory_bound) {
      memory.push_back(&r);
      any_share = any_share || r.copy_share.has_value();
    }
  if (!any_share) memory.clear();

  const double title_height = options.subtitle.empty() ? 40 : 58;
  const auto panel_height = [](std::size_t n) {
    return kHeadingHeight + kAxisHeight + kRowHeight * double(n) + 16;
  };
  const double memory_top = title_height + panel_height(rows.size());
  const double height = memory_top + (memory.empty() ? 0 : panel_height(memory.size())) + 8;

  std::string out = svg_opening(height, options);
  out += ratio_panel(rows, title_height);
  if (!memory.empty()) out += memory_panel(memory, memory_top, options.copy_gbps);
  return out + "</svg>\n";
}

namespace {

constexpr double kLaneHeight = 26;
const char* const kMigrated = "#ef6c00";

std::string timeline_panel(const TimelinePanel& panel, const Axis& a, double top) {
  const double first = top + kHeadingHeight + kAxisHeight;
  const double bottom = first + kLaneHeight * double(panel.lanes.size());
  std::string out = "<g class=\"panel timeline\">\n";
  out += text(16, top + 16, panel.heading, "font-weight=\"bold\"");
  for (std::size_t i = 0; i < panel.lanes.size(); ++i)
    out += row_frame(panel.lanes[i].label, i, first + kLaneHeight * double(i));
  out += grid(a, first, bottom, false);
  for (std::size_t i = 0; i < panel.lanes.size(); ++i) {
    const double y = first + kLaneHeight * double(i);
    for (const TimelineBar& b : panel.lanes[i].bars)
      out += fmt::format("<rect class=\"gemm\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" "
                         "height=\"{:.0f}\" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"0.3\">"
                         "<title>{}: {:.1f}-{:.1f} us</title></rect>\n",
                         a.x(b.start_us), y + (kLaneHeight - kBarHeight) / 2 - 2,
                         std::max(a.x(b.end_us) - a.x(b.start_us), 0.5), kBarHeight,
                         b.migrated ? kMigrated : kShare, xml_escape(b.label), b.start_us, b.end_us);
    for (const auto& [start, length] : panel.lanes[i].gaps)
      out += fmt::format("<rect class=\"gap\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" "
                         "height=\"3\" fill=\"{}\"><title>idle {:.1f} us</title></rect>\n",
                         a.x(start), y + kLaneHeight - 6, std::max(a.x(start + length) - a.x(start), 0.5),
                         kSlower, length);
  }
  return out + "</g>\n";
}

}  // namespace

std::string timeline_svg(const std::vector<TimelinePanel>& panels, const PlotOptions& options) {
  // One time axis for every panel, so strategies compare by eye.
  double end = 1;
  for (const TimelinePanel& p : panels)
    for (const TimelineLane& l : p.lanes)
      for (const TimelineBar& b : l.bars) end = std::max(end, b.end_us);
  Axis a;
  a.lo = 0;
  a.step = nice_step(end, 8);
  a.hi = std::ceil(end / a.step - 1e-9) * a.step;
  const double title_height = options.subtitle.empty() ? 40 : 58;
  double height = title_height;
  std::vector<double> tops;
  for (const TimelinePanel& p : panels) {
    tops.push_back(height);
    height += kHeadingHeight + kAxisHeight + kLaneHeight * double(p.lanes.size()) + 16;
  }
  height += 24;
  std::string out = svg_opening(height, options);
  for (std::size_t i = 0; i < panels.size(); ++i) out += timeline_panel(panels[i], a, tops[i]);
  out += text(kPlotLeft, height - 10,
              "us from the run's start; blue: a GPU's own GEMMs, orange: migrated to it, red: "
              "idle longer than 20 us",
              fmt::format("fill=\"{}\"", kMuted));
  return out + "</svg>\n";
}

}  // namespace autogemm::bench
