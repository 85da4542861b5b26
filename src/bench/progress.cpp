#include "bench/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "bench/bench_report.hpp"

namespace autogemm::bench {

std::string progress_line(std::size_t done, std::size_t total, const BenchItem* current,
                          double elapsed_s) {
  std::string line = progress_text(done, total, current, 20);
  if (current != nullptr && !current->tag.empty()) line += " " + current->tag;
  const std::size_t percent = total == 0 ? 100 : done * 100 / total;
  line += fmt::format(" {}%, {:.0f} s", percent, std::floor(std::max(elapsed_s, 0.0)));
  return line;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

ProgressReporter::ProgressReporter(std::ostream& out, bool is_terminal, Clock clock,
                                   double delay_s)
    : out_(out),
      enabled_(is_terminal),
      clock_(std::move(clock)),
      delay_s_(delay_s),
      start_s_(clock_()) {}

ProgressReporter::~ProgressReporter() {
  if (shown_) out_ << '\n' << std::flush;
}

void ProgressReporter::update(std::size_t done, std::size_t total, const BenchItem* current) {
  if (!enabled_) return;
  // \r returns to the line start, \x1b[K (ANSI "erase in line") clears what a longer previous
  // text left behind.
  if (done >= total) {
    if (shown_) out_ << "\r\x1b[K" << std::flush;
    shown_ = false;
    return;
  }
  const double elapsed = clock_() - start_s_;
  if (!shown_ && elapsed < delay_s_) return;
  out_ << '\r' << progress_line(done, total, current, elapsed) << "\x1b[K" << std::flush;
  shown_ = true;
}

}  // namespace autogemm::bench
