// `autogemm compile`: one kernel's source, PTX, cubin and NVRTC log written for reading its
// machine code, without a GPU (a preset plans it), and its argument errors.
#include <gtest/gtest.h>

#include "cli_test_util.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using autogemm::testing::CliRun;
using autogemm::testing::run_cli;

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   (name + "-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  return dir;
}

// `autogemm compile ARGS` into a fresh folder `name`: the run and the folder it wrote.
struct Compiled {
  CliRun run;
  std::filesystem::path dir;
};
Compiled compile_into(const std::string& name, const std::string& args) {
  const auto dir = fresh_dir(name);
  return {run_cli("compile " + args + " --out " + dir.string()), dir};
}

// How many times `what` occurs in `text`.
int occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(CompileCli, WritesSourcePtxCubinAndLogForAForcedFp8Config) {
  const auto dir = fresh_dir("autogemm-compile-fp8");
  const CliRun run = run_cli("compile --m 4096 --n 7168 --k 16384 --dtype fp8 --device h100-sxm "
                             "--config \"128x128x128 s5 c2 p g8 cl2x1/b pb2\" --out " +
                             dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("128x128x128 s5 c2 p g8 cl2x1/b pb2"), std::string::npos) << run.out;
  const std::string source = read_file(dir / "kernel.cu");
  EXPECT_NE(source.find("block_m = 128, block_n = 128"), std::string::npos) << source;
  EXPECT_NE(read_file(dir / "kernel.ptx").find("wgmma.mma_async.sync.aligned.m64n128k32"),
            std::string::npos);
  EXPECT_NE(read_file(dir / "kernel.ptx").find("cp.async.mbarrier.arrive.noinc"), std::string::npos);
  const std::string cubin = read_file(dir / "kernel.cubin");
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF"));
  std::filesystem::remove_all(dir);
}

// AUTOGEMM_TRACE_TILES compiles the tile trace's recorder in (sm90/tile_trace.cuh): the
// traced kernel (the FP8 prefill tile with a multicast pair) must still compile, with
// %globaltimer reads and without spills.
TEST(CompileCli, TileTraceKernelCompiles) {
  const auto dir = fresh_dir("autogemm-compile-trace");
  // The child inherits the variable; this process makes no GEMM call while it is set.
  setenv("AUTOGEMM_TRACE_TILES", (dir.string() + "-trace.csv").c_str(), 1);
  const CliRun run = run_cli("compile --m 4096 --n 2112 --k 7168 --dtype fp8 --device h100-sxm "
                             "--config \"128x128x128 s5 c2 p g8 cl2x1/b pb2\" --out " +
                             dir.string());
  unsetenv("AUTOGEMM_TRACE_TILES");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("_trace"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("spills 0 B / 0 B"), std::string::npos) << run.out;
  EXPECT_NE(read_file(dir / "kernel.cu").find("#define AUTOGEMM_TILE_TRACE 1"), std::string::npos);
  EXPECT_NE(read_file(dir / "kernel.ptx").find("%globaltimer"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// D rows TMA cannot store (N = 5953 bf16, ldd odd): the staged store compiles without spills
// into 16-byte global stores (st.global.v4) beside the edge elements' 2-byte ones, and no TMA
// store.
TEST(CompileCli, StagedStoreKernelCompiles) {
  const auto [run, dir] = compile_into("autogemm-compile-staged",
                                       "--m 2545 --n 5953 --k 64 --device h200 "
                                       "--config \"128x256x64 s2 c2 p g8\"");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("staged-store"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("spills 0 B / 0 B"), std::string::npos) << run.out;
  EXPECT_NE(read_file(dir / "kernel.cu").find("staged_store = true"), std::string::npos);
  const std::string ptx = read_file(dir / "kernel.ptx");
  EXPECT_NE(ptx.find("st.global.v4.u32"), std::string::npos);
  EXPECT_NE(ptx.find("st.global.u16"), std::string::npos);
  EXPECT_EQ(ptx.find("cp.async.bulk.tensor.2d.global.shared"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// D leaves a 240-column tile in three 128-byte boxes and one 96-byte tail box
// (kernels/sm90/gemm_layout.cuh d_main_boxes): four TMA stores, not fifteen of 16 columns, and
// C comes in through the same four boxes.
TEST(CompileCli, TailBoxKernelStoresFourBoxes) {
  const auto [run, dir] = compile_into("autogemm-compile-tail-box",
                                       "--m 5000 --n 3000 --k 1000 --device h200 "
                                       "--config \"128x240x64 s3 c2 p g8\"");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("spills 0 B / 0 B"), std::string::npos) << run.out;
  const std::string ptx = read_file(dir / "kernel.ptx");
  EXPECT_EQ(occurrences(ptx, "cp.async.bulk.tensor.2d.global.shared"), 4);
  // A and B by the producer, C's four boxes in the epilogue.
  EXPECT_EQ(occurrences(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global"), 6);
  std::filesystem::remove_all(dir);
}

TEST(CompileCli, PlannersChoiceWithoutConfig) {
  const auto dir = fresh_dir("autogemm-compile-plan");
  const CliRun run = run_cli("compile --m 64 --n 2112 --k 7168 --device h100-sxm --out " + dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "kernel.cubin"));
  EXPECT_TRUE(std::filesystem::exists(dir / "nvrtc.log"));
  std::filesystem::remove_all(dir);
}

TEST(CompileCli, IllegalConfigAndListsAreErrorsNamingTheRule) {
  const auto dir = fresh_dir("autogemm-compile-bad");
  CliRun run = run_cli("compile --m 4096 --n 7168 --k 7168 --dtype fp8 --device h100-sxm "
                       "--config \"64x96x128 s8 c1 p g8 pb2\" --out " + dir.string());
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.out.find("promotion_buffers = 1"), std::string::npos) << run.out;
  run = run_cli("compile --m 64,128 --n 2112 --k 7168 --device h100-sxm --out " + dir.string());
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.out.find("exactly one problem"), std::string::npos) << run.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "kernel.cubin"));
}

// An --out that cannot be created is the user's error (exit 2), named with the path and the
// OS's reason, not an internal error.
TEST(CompileCli, UnwritableOutIsAUserErrorWithTheOsReason) {
  const auto dir = fresh_dir("autogemm-compile-unwritable");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a_file") << "not a directory";
  const std::string out = (dir / "a_file" / "kernel").string();
  const CliRun run =
      run_cli("compile --m 64 --n 2112 --k 7168 --device h100-sxm --out " + out);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--out = " + out), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Not a directory"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("internal error"), std::string::npos) << run.out;
  std::filesystem::remove_all(dir);
}
