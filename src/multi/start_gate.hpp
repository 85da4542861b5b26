#pragma once
// run_gemm_schedule's start gate (schedule_run.cpp), the part that needs no GPU: whether the
// gate can be used, how much of a GPU's share is enqueued behind it, and the host-side barrier
// whose last arrival opens it.
//
// Each GPU's stream first waits (cuStreamWaitValue32) on a word of pinned, device-mapped host
// memory, then records the run's start event, then runs its share. The feeding threads enqueue
// their shares behind the closed gate; when every thread has arrived, one host store of the
// run's value opens it, so every GPU starts at the same moment with a full queue, and the
// threads' wake-up and first enqueues are no longer counted as the GPUs' idle time.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace autogemm::multi {

// What a device says about waiting on host memory (cudaDevAttrCanMapHostMemory: a stream can
// only wait on a host word the device can map).
struct GateSupport {
  int device = 0;                  // CUDA ordinal
  bool maps_host_memory = false;
};

struct GateDecision {
  bool gated = false;
  std::string note;                // why not, when not gated
};

// Gated when asked (`enabled`) and every device can map host memory; else today's start (the
// main thread records each GPU's start event before the feeding threads start) and why.
GateDecision decide_start_gate(bool enabled, const std::vector<GateSupport>& devices);

// How many GEMMs at the head of a GPU's up-front share are enqueued behind the closed gate:
// the leading ones whose launch was resolved ahead (`resolved`, in the share's order), at most
// `cap`. Only those: an unresolved GEMM goes through gemm(), which may load a kernel, plan,
// autotune (synchronising the stream) or copy from pageable memory (synchronous), any of which
// behind a closed gate would wait for ever. The cap keeps the queue far below the depth at
// which a launch blocks the host until the stream drains (about a thousand entries).
std::size_t gated_prefix(const std::vector<char>& resolved, std::size_t cap);

// At most this many GEMMs a GPU behind the closed gate: 32 GEMMs of at least ~5 us are 160 us
// or more of work queued when the gate opens, while the thread enqueues the rest of its share
// at a few microseconds each.
inline constexpr std::size_t kGatedGemmsMax = 32;

// The host half of the gate: `parties` threads arrive; the last arrival (or open(), whichever
// comes first) stores `value` into `word` once, which the streams wait on, and wakes every
// thread waiting here. Thread-safe; open() is idempotent.
class StartGate {
 public:
  StartGate(std::size_t parties, uint32_t* word, uint32_t value);
  StartGate(const StartGate&) = delete;
  StartGate& operator=(const StartGate&) = delete;

  // Counts one party (each party once); the last one opens the gate.
  void arrive();
  // Blocks until the gate is open (it never blocks once open).
  void wait_open();
  // The caller's backstop: waits up to `timeout` for the gate to open; false when it did not.
  bool wait_open_for(std::chrono::milliseconds timeout);
  // Stores the value (once) and wakes every waiter.
  void open();
  bool is_open() const;
  std::size_t arrived() const;

 private:
  void open_locked();
  mutable std::mutex mutex_;
  std::condition_variable opened_;
  std::size_t parties_, arrived_ = 0;
  uint32_t* word_;
  uint32_t value_;
  bool open_ = false;
};

// A party's arrival, made once: by arrive_and_wait(), or by the destructor when the party
// leaves early (an exception), so a failing thread still lets the gate open and no GPU is left
// waiting on it.
class GateArrival {
 public:
  explicit GateArrival(StartGate* gate) : gate_(gate) {}   // null: no gate, nothing to do
  ~GateArrival();
  GateArrival(const GateArrival&) = delete;
  GateArrival& operator=(const GateArrival&) = delete;
  void arrive_and_wait();

 private:
  StartGate* gate_;
  bool arrived_ = false;
};

}  // namespace autogemm::multi
