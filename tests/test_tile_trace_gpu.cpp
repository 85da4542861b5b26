// Tile trace end to end (AUTOGEMM_TRACE_TILES, trace/tile_trace.hpp): a traced `autogemm
// bench` of a tail-split FP8 GEMM writes one record per work item, and the records account for
// every k-block of every tile exactly once, with sane times and SM ids.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_util.hpp"
#include "gpu_test_util.hpp"

namespace {

// Splits one CSV line; the config field is quoted and has no commas.
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') quoted = !quoted;
    else if (ch == ',' && !quoted) out.push_back(std::move(field)), field.clear();
    else field += ch;
  }
  out.push_back(field);
  return out;
}

}  // namespace

TEST(TileTraceGpu, RecordsEveryKBlockOfEveryTileOnce) {
  AUTOGEMM_REQUIRE_GPU();
  char path[] = "/tmp/autogemm_tile_trace_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::remove(path);   // the writer adds the header to a new file
  // 1000 x 1000 tiles of 128 x 128: 64 tiles, 16 k-blocks; sk4 splits each into 4 K ranges,
  // of which all but the last to arrive hand their sums over instead of storing ("partial").
  const int m = 1000, n = 1000, k = 2048, block = 128, k_blocks = k / 128;
  // The child inherits the variable; this process has read it (or will) as unset, since it
  // makes no GEMM call while it is set.
  setenv("AUTOGEMM_TRACE_TILES", path, 1);
  const auto r = autogemm::testing::run_cli(
      "bench --dtype fp8 --m 1000 --n 1000 --k 2048 --iters 1 --warmup 0 --no-baseline "
      "--config \"128x128x128 s5 c2 p g8 sk4 pb2\"");
  unsetenv("AUTOGEMM_TRACE_TILES");
  ASSERT_EQ(r.exit_code, 0) << r.out;

  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line.rfind("call,m,n,k,config,cta,sm,item,", 0), 0u) << line;
  std::map<int, std::vector<std::vector<std::string>>> calls;
  while (std::getline(in, line)) {
    auto f = fields(line);
    ASSERT_EQ(f.size(), 18u) << line;
    calls[std::stoi(f[0])].push_back(std::move(f));
  }
  ASSERT_FALSE(calls.empty());
  const auto& rows = calls.rbegin()->second;   // the timed call
  // (m_tile, n_tile) -> k-blocks seen; each must be seen once.
  std::map<std::pair<int, int>, std::vector<int>> seen;
  int partial = 0;
  for (const auto& f : rows) {
    const int m_tile = std::stoi(f[8]), n_tile = std::stoi(f[9]);
    const int k_first = std::stoi(f[10]), k_last = std::stoi(f[11]);
    const long long start = std::stoll(f[13]), end = std::stoll(f[14]);
    EXPECT_LT(std::stoi(f[6]), 1024) << "sm id";
    EXPECT_LE(start, end);
    EXPECT_LT(end, 1000000000LL) << "a 1 s span: the times are not one kernel's";
    // The phases in SM cycles: data ready, then the main loop's end, then the epilogue's.
    const long long first_data = std::stoll(f[15]), main_loop = std::stoll(f[16]),
                    cycles = std::stoll(f[17]);
    EXPECT_LT(0, first_data);
    EXPECT_LT(first_data, main_loop);
    EXPECT_LT(main_loop, cycles);
    EXPECT_LT(cycles, 2000000000LL) << "cycles of one work item, not a clock reading";
    ASSERT_LT(k_first, k_last);
    ASSERT_LE(k_last, k_blocks);
    partial += f[12] == "1";
    auto& blocks = seen[{m_tile, n_tile}];
    for (int kb = k_first; kb < k_last; ++kb) blocks.push_back(kb);
  }
  const int tiles_m = (m + block - 1) / block, tiles_n = (n + block - 1) / block;
  EXPECT_EQ(static_cast<int>(seen.size()), tiles_m * tiles_n);
  for (const auto& [tile, blocks] : seen) {
    EXPECT_LT(tile.first, tiles_m);
    EXPECT_LT(tile.second, tiles_n);
    const std::multiset<int> got(blocks.begin(), blocks.end());
    std::multiset<int> want;
    for (int kb = 0; kb < k_blocks; ++kb) want.insert(kb);
    EXPECT_EQ(got, want) << "tile " << tile.first << "," << tile.second;
  }
  EXPECT_EQ(partial, 3 * tiles_m * tiles_n) << "three of each tile's four splits hand over";
  std::remove(path);
}
