// TpTrace (tp_trace.hpp): timing events per stream, printed per rank.
#include "multi/tp_trace.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda/cuda_check.hpp"

namespace autogemm::multi {

int TpTrace::parse_calls(const char* value) {
  if (value == nullptr || *value < '0' || *value > '9') return 0;  // strtol would skip spaces
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  return end != value && *end == '\0' && n >= 1 && n <= 1000 ? int(n) : 0;
}

int TpTrace::calls_per_trace() {
  static const int calls = parse_calls(std::getenv("AUTOGEMM_TP_TRACE"));
  return calls;
}

TpTrace::~TpTrace() {
  for (const Mark& m : marks_) (void)cudaEventDestroy(m.event);
}

void TpTrace::record(int rank, const char* stream_name, cudaStream_t stream, std::string label) {
  cudaEvent_t e = nullptr;
  cuda_check(cudaEventCreate(&e), "cudaEventCreate(tp trace)");
  marks_.push_back({rank, stream_name, e, std::move(label)});
  cuda_check(cudaEventRecord(e, stream), "cudaEventRecord(tp trace)");
}

void TpTrace::note(int rank, std::string label) {
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin_).count();
  host_.push_back({rank, {us, std::move(label)}});
}

void TpTrace::print() {
  if (!on_) return;
  const std::vector<int>& devices = devices_;
  const std::vector<int>& ranks = ranks_;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    cuda_check(cudaSetDevice(devices[i]), "cudaSetDevice(tp trace)");
    const Mark* first = nullptr;
    std::vector<std::pair<double, const Mark*>> timeline;
    for (const Mark& m : marks_) {
      if (m.rank != ranks[i]) continue;
      cuda_check(cudaEventSynchronize(m.event), "cudaEventSynchronize(tp trace)");
      if (!first) first = &m;
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, first->event, m.event), "cudaEventElapsedTime(tp trace)");
      timeline.push_back({double(ms) * 1000.0, &m});
    }
    std::stable_sort(timeline.begin(), timeline.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    // Every line names its rank: the ranks of several processes share one terminal.
    std::fprintf(stderr, "[autogemm] tp trace r%d: GPU %d, us from the rank's first mark\n",
                 ranks[i], devices[i]);
    for (const auto& [us, m] : timeline)
      std::fprintf(stderr, "[autogemm] tp trace r%d %9.1f %-6s %s\n", ranks[i], us, m->stream,
                   m->label.c_str());
    for (const auto& [rank, note] : host_)
      if (rank == ranks[i])
        std::fprintf(stderr, "[autogemm] tp trace r%d host %9.1f us after the first call began: %s\n",
                     ranks[i], note.first, note.second.c_str());
  }
}

}  // namespace autogemm::multi
