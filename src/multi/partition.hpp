#pragma once
// Cutting one dimension of a GEMM into parts of whole granules (the splitter's parts, a part's
// chunks, split K's row shards). Pure.
#include <cstdint>
#include <vector>

namespace autogemm::multi {

struct Range {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
  friend bool operator==(const Range&, const Range&) = default;
};

// [begin, end) cut into `parts` ranges of whole granules, in order, sizes differing by at most
// one granule (the earlier ranges take the extra ones; the last ends at `end` and so may hold a
// partial granule). Ranges are empty when there are fewer granules than parts. InvalidArgument
// for parts < 1, granule < 1 or end < begin.
std::vector<Range> split_range(Range whole, int parts, int64_t granule);

}  // namespace autogemm::multi
