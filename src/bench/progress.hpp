#pragma once
// The bench's progress line: one terminal line, rewritten in place (\r) before each row, shown
// only once the run has taken longer than a delay (2 s) and only on a terminal, so short runs
// and redirected or piped stderr stay silent. The clock and the terminal test are injected, so
// the behaviour is tested without waiting or a terminal.
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

#include "bench/bench_runner.hpp"

namespace autogemm::bench {

// "[=====>        ] 6/20 4096x7168x16384 prefill 30%, 12 s": the bar and count of
// progress_text (bench_report.hpp, rows done of total, the row being measured), its tag, the
// share of rows done and the seconds since the run began.
std::string progress_line(std::size_t done, std::size_t total, const BenchItem* current,
                          double elapsed_s);

// Seconds of std::chrono::steady_clock (the reporter's default clock).
double steady_seconds();

// True when stderr is a terminal (isatty).
bool stderr_is_terminal();

class ProgressReporter {
 public:
  using Clock = std::function<double()>;  // monotonic seconds
  static constexpr double kDefaultDelaySeconds = 2.0;

  // The delay counts from construction. Nothing is ever written unless `is_terminal`.
  ProgressReporter(std::ostream& out, bool is_terminal, Clock clock = steady_seconds,
                   double delay_s = kDefaultDelaySeconds);
  // A line still shown (the run stopped with an error) is ended with a newline, so what is
  // printed next starts on its own line.
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // run_bench's progress hook: before each row (current set) and once at the end (done ==
  // total, current null). Rewrites the line once the delay has passed; the final call erases
  // a shown line, leaving the terminal as it was for the report that follows.
  void update(std::size_t done, std::size_t total, const BenchItem* current);

  bool shown() const { return shown_; }  // a line is on the terminal now

 private:
  std::ostream& out_;
  bool enabled_;
  Clock clock_;
  double delay_s_;
  double start_s_;
  bool shown_ = false;
};

}  // namespace autogemm::bench
