// split_range (partition.hpp).
#include "multi/partition.hpp"

#include <algorithm>
#include <string>

#include "autogemm/errors.hpp"

namespace autogemm::multi {

std::vector<Range> split_range(Range whole, int parts, int64_t granule) {
  if (parts < 1) throw InvalidArgument("parts", std::to_string(parts), "must be >= 1");
  if (granule < 1) throw InvalidArgument("granule", std::to_string(granule), "must be >= 1");
  if (whole.end < whole.begin)
    throw InvalidArgument("range", std::to_string(whole.begin) + ".." + std::to_string(whole.end),
                          "end must not be before begin");
  const int64_t granules = (whole.size() + granule - 1) / granule;
  const int64_t base = granules / parts, extra = granules % parts;
  std::vector<Range> ranges;
  int64_t at = whole.begin;
  for (int i = 0; i < parts; ++i) {
    const int64_t count = base + (i < extra ? 1 : 0);
    const int64_t end = std::min(whole.end, at + count * granule);
    ranges.push_back({at, end});
    at = end;
  }
  return ranges;
}

}  // namespace autogemm::multi
