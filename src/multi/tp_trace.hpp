#pragma once
// AUTOGEMM_TP_TRACE=N: tp_gemm calls record a timing event after each of their launches, waits
// and copies, on the stream that ran it; each local rank's timeline of N consecutive calls is
// printed on stderr (microseconds from the rank's first mark; the streams of one GPU share a
// clock) when call N + 1 on the workspace begins, or when the workspace goes: never inside a
// call, whose work may wait on a gate the caller opens after it returns (the CLI bench's timing
// does). N = 1 shows one call as it runs alone; N > 1 shows calls enqueued back to back, with
// the gaps between them (nothing waits for a call until the N are in).
// For finding where a plan's predicted time goes (which copy trails, which band waits), not
// for timing: printing waits for the calls, and the events cost a few us each.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace autogemm::multi {

class TpTrace {
 public:
  // AUTOGEMM_TP_TRACE's N, 1..1000 calls a timeline; 0 (off) when unset or anything else
  // (read once per process).
  static int calls_per_trace();
  static bool requested() { return calls_per_trace() > 0; }
  static int parse_calls(const char* value);  // the rule calls_per_trace() applies, for tests

  // ranks[i] (local) runs on devices[i].
  TpTrace(bool on, std::vector<int> devices, std::vector<int> ranks)
      : on_(on), devices_(std::move(devices)), ranks_(std::move(ranks)) {}
  TpTrace(const TpTrace&) = delete;
  TpTrace& operator=(const TpTrace&) = delete;
  ~TpTrace();
  bool on() const { return on_; }
  // A call begins: its number in this trace (1, 2, ...).
  int begin_call() { return ++calls_; }
  // Holds its N calls: print it before the next call is marked.
  bool full() const { return calls_ >= calls_per_trace(); }

  // A timing event on `stream` (of the current device) for rank `rank`, labelled.
  template <typename... Args>
  void mark(int rank, const char* stream_name, cudaStream_t stream,
            fmt::format_string<Args...> label, Args&&... args) {
    if (on_) record(rank, stream_name, stream, fmt::format(label, std::forward<Args>(args)...));
  }
  // The host's time since the trace's first call began.
  template <typename... Args>
  void host(int rank, fmt::format_string<Args...> label, Args&&... args) {
    if (on_) note(rank, fmt::format(label, std::forward<Args>(args)...));
  }
  // Waits for every mark and prints the timelines.
  void print();

 private:
  struct Mark {
    int rank;
    const char* stream;
    cudaEvent_t event;
    std::string label;
  };
  void record(int rank, const char* stream_name, cudaStream_t stream, std::string label);
  void note(int rank, std::string label);

  bool on_;
  int calls_ = 0;
  std::vector<int> devices_, ranks_;
  std::vector<Mark> marks_;
  std::vector<std::pair<int, std::pair<double, std::string>>> host_;
  std::chrono::steady_clock::time_point begin_ = std::chrono::steady_clock::now();
};

}  // namespace autogemm::multi
