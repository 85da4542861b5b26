// run_gemm_schedule's start gate, host side (start_gate.hpp).
#include "multi/start_gate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

namespace autogemm::multi {

GateDecision decide_start_gate(bool enabled, const std::vector<GateSupport>& devices) {
  if (!enabled) return {false, "off (ScheduleOptions::start_gate = false)"};
  std::string cannot;
  for (const GateSupport& d : devices)
    if (!d.maps_host_memory) cannot += fmt::format("{}{}", cannot.empty() ? "" : ", ", d.device);
  if (!cannot.empty())
    return {false, fmt::format("off: device{} {} cannot map host memory "
                               "(cudaDevAttrCanMapHostMemory = 0), so no stream can wait on a "
                               "host word; each GPU's start is recorded before its thread starts",
                               cannot.find(',') == std::string::npos ? "" : "s", cannot)};
  return {true, {}};
}

std::size_t gated_prefix(const std::vector<char>& resolved, std::size_t cap) {
  std::size_t n = 0;
  while (n < resolved.size() && n < cap && resolved[n]) ++n;
  return n;
}

StartGate::StartGate(std::size_t parties, uint32_t* word, uint32_t value)
    : parties_(parties), word_(word), value_(value) {}

void StartGate::open_locked() {
  if (open_) return;
  // The one host write the streams wait on (pinned memory the GPUs read over PCIe; the release
  // orders it after everything this thread wrote before).
  std::atomic_ref<uint32_t>(*word_).store(value_, std::memory_order_release);
  open_ = true;
  opened_.notify_all();
}

void StartGate::arrive() {
  std::lock_guard<std::mutex> lock(mutex_);
  arrived_ = std::min(parties_, arrived_ + 1);
  if (arrived_ == parties_) open_locked();
}

void StartGate::wait_open() {
  std::unique_lock<std::mutex> lock(mutex_);
  opened_.wait(lock, [&] { return open_; });
}

bool StartGate::wait_open_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return opened_.wait_for(lock, timeout, [&] { return open_; });
}

void StartGate::open() {
  std::lock_guard<std::mutex> lock(mutex_);
  open_locked();
}

bool StartGate::is_open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_;
}

std::size_t StartGate::arrived() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return arrived_;
}

GateArrival::~GateArrival() {
  if (gate_ != nullptr && !arrived_) gate_->arrive();
}

void GateArrival::arrive_and_wait() {
  if (gate_ == nullptr) return;
  if (!arrived_) {
    arrived_ = true;
    gate_->arrive();
  }
  gate_->wait_open();
}

}  // namespace autogemm::multi
