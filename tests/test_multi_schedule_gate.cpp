// run_gemm_schedule's start gate and launches resolved ahead, the parts that need no GPU
// (multi/start_gate.hpp, runtime/launch.hpp resolve_ahead_violation): when the gate is used,
// how much of a share waits behind it, that the last arrival (or a failing thread's) opens it
// exactly once, and which calls can be resolved before the run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "autogemm/kernel_spec.hpp"
#include "multi/start_gate.hpp"
#include "plan_test_util.hpp"
#include "runtime/launch.hpp"

using namespace autogemm;
using autogemm::testing::block_fp8_problem;
using autogemm::testing::hopper;
using autogemm::testing::problem;

TEST(MultiScheduleGate, UsedOnlyWhenAskedAndEveryDeviceMapsHostMemory) {
  const multi::GateDecision all = multi::decide_start_gate(true, {{0, true}, {1, true}, {2, true}});
  EXPECT_TRUE(all.gated);
  EXPECT_EQ(all.note, "");

  const multi::GateDecision one = multi::decide_start_gate(true, {{0, true}, {3, false}});
  EXPECT_FALSE(one.gated);
  EXPECT_NE(one.note.find("device 3 cannot map host memory"), std::string::npos) << one.note;
  EXPECT_NE(one.note.find("cudaDevAttrCanMapHostMemory"), std::string::npos) << one.note;

  const multi::GateDecision two = multi::decide_start_gate(true, {{1, false}, {2, true}, {5, false}});
  EXPECT_FALSE(two.gated);
  EXPECT_NE(two.note.find("devices 1, 5 cannot"), std::string::npos) << two.note;

  const multi::GateDecision off = multi::decide_start_gate(false, {{0, true}});
  EXPECT_FALSE(off.gated);
  EXPECT_NE(off.note.find("ScheduleOptions::start_gate = false"), std::string::npos) << off.note;
}

TEST(MultiScheduleGate, OnlyTheResolvedHeadOfAShareWaitsBehindIt) {
  EXPECT_EQ(multi::gated_prefix({}, multi::kGatedGemmsMax), 0u);
  EXPECT_EQ(multi::gated_prefix({1, 1, 0, 1}, multi::kGatedGemmsMax), 2u);   // stops at gemm()'s
  EXPECT_EQ(multi::gated_prefix({0, 1, 1}, multi::kGatedGemmsMax), 0u);
  EXPECT_EQ(multi::gated_prefix({1, 1, 1}, 2), 2u);                          // at most the cap
  EXPECT_EQ(multi::gated_prefix(std::vector<char>(100, 1), multi::kGatedGemmsMax),
            multi::kGatedGemmsMax);
}

TEST(MultiScheduleGate, TheLastArrivalOpensItWithOneStore) {
  uint32_t word = 41;
  multi::StartGate gate(3, &word, 42);
  gate.arrive();
  gate.arrive();
  EXPECT_FALSE(gate.is_open());
  EXPECT_EQ(word, 41u);
  EXPECT_FALSE(gate.wait_open_for(std::chrono::milliseconds(1)));
  gate.arrive();
  EXPECT_TRUE(gate.is_open());
  EXPECT_EQ(word, 42u);
  EXPECT_EQ(gate.arrived(), 3u);
  // Opened once: a later arrival or open() stores nothing more.
  word = 7;
  gate.arrive();
  gate.open();
  EXPECT_EQ(word, 7u);
  EXPECT_EQ(gate.arrived(), 3u);
  gate.wait_open();   // returns at once
}

TEST(MultiScheduleGate, ThreadsWaitForEachOtherAndAFailingThreadStillOpensIt) {
  constexpr int kThreads = 4;
  uint32_t word = 0;
  multi::StartGate gate(kThreads, &word, 1);
  std::atomic<int> passed{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        multi::GateArrival arrival(&gate);
        if (t == 2) throw std::runtime_error("enqueue failed");   // leaves without arriving
        std::this_thread::sleep_for(std::chrono::milliseconds(5 * t));
        arrival.arrive_and_wait();
        // Open only once every thread has arrived, the failed one included.
        EXPECT_EQ(gate.arrived(), std::size_t(kThreads));
        EXPECT_EQ(std::atomic_ref<uint32_t>(word).load(), 1u);
        ++passed;
      } catch (const std::runtime_error&) {
        ++failed;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(passed.load(), kThreads - 1);
  EXPECT_EQ(failed.load(), 1);
  EXPECT_TRUE(gate.is_open());
}

TEST(MultiScheduleGate, TheCallersBackstopOpensItWhenAThreadNeverArrives) {
  uint32_t word = 0;
  multi::StartGate gate(2, &word, 9);
  std::thread waiting([&] {
    multi::GateArrival arrival(&gate);
    arrival.arrive_and_wait();   // the other party never comes
  });
  EXPECT_FALSE(gate.wait_open_for(std::chrono::milliseconds(20)));
  gate.open();
  waiting.join();
  EXPECT_EQ(word, 9u);
  // No gate: an arrival does nothing.
  multi::GateArrival none(nullptr);
  none.arrive_and_wait();
}

// Which calls run_gemm_schedule can resolve before the run: those whose launch allocates and
// copies nothing per call.
TEST(MultiScheduleResolve, CallsThatAllocatePerCallAreNotResolvedAhead) {
  const GpuInfo h = hopper();
  const KernelSpec plain =
      make_kernel_spec(problem(4096, 4096, 4096), GemmConfig::parse("128x256x64 s3 c2 p g8"), h);
  EXPECT_EQ(runtime::resolve_ahead_violation(plain), "");
  // Split-K is: the stream's workspace is looked up when it is enqueued.
  const KernelSpec split =
      make_kernel_spec(problem(64, 1024, 8192), GemmConfig::parse("64x128x64 s4 c1 p g8 sk2"), h);
  ASSERT_GT(split.split_k.counters, 0);
  EXPECT_EQ(runtime::resolve_ahead_violation(split), "");
  // So is the decode family.
  const KernelSpec decode =
      make_kernel_spec(problem(8, 4096, 1024), GemmConfig::parse("mma 16x32x128 s3 sk4"), h);
  EXPECT_EQ(runtime::resolve_ahead_violation(decode), "");

  GemmConfig vendor;
  vendor.instruction = Instruction::vendor;
  const KernelSpec lt = make_kernel_spec(problem(4096, 4096, 4096), vendor, h);
  ASSERT_TRUE(lt.vendor);
  EXPECT_NE(runtime::resolve_ahead_violation(lt).find("cuBLASLt"), std::string::npos);

  const KernelSpec copied =
      make_kernel_spec(problem(2049, 2049, 2049), GemmConfig::parse("128x128x64 s4 c2 p g8"), h);
  ASSERT_TRUE(copied.copy_a.active() && copied.copy_b.active());
  EXPECT_NE(runtime::resolve_ahead_violation(copied).find("A and B copied"), std::string::npos);

  GemmProblem fp8 = block_fp8_problem(4096, 7168, 8192);
  const KernelSpec relaid = make_kernel_spec(fp8, GemmConfig::parse("128x128x128 s5 c2 p g8 pb2"), h);
  ASSERT_TRUE(relaid.a_scales_k_block_major);
  EXPECT_NE(runtime::resolve_ahead_violation(relaid).find("k-block-major"), std::string::npos);
}
