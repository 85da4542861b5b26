#pragma once
// Size lists in the CUTLASS profiler's style, shared by `autogemm plan` and `autogemm bench`:
//   --m=4096              one size
//   --m=64,128,4096       a list
//   --n=1024:8192:1024    a range start:end:step, end included
//   --k=64,1024:4096:1024 lists and ranges mixed
// Several sizes in --m/--n/--k mean their cross product.
#include <cstdint>
#include <string_view>
#include <vector>

namespace autogemm::cli {

// Most sizes one option may expand to; a range such as 1:1000000:1 is a typo, not a request.
inline constexpr std::size_t kMaxSizesPerOption = 4096;
// Most (m, n, k) shapes one command may expand to.
inline constexpr std::size_t kMaxShapes = 65536;

// Throws InvalidArgument naming the option and the bad token ("--n = 10:x: ..."). Values are
// not range-checked here (a size of 0 or -5 parses, and GemmProblem validation reports it with
// its rule); ranges need step >= 1 and end >= start.
std::vector<int64_t> parse_size_list(std::string_view option, std::string_view text);

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

// Every (m, n, k), m outermost, in the order given. Throws InvalidArgument past kMaxShapes.
std::vector<GemmShape> shape_product(const std::vector<int64_t>& m, const std::vector<int64_t>& n,
                                     const std::vector<int64_t>& k);

}  // namespace autogemm::cli
