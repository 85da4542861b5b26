#pragma once
// AUTOGEMM_LOG=0..5 (0 silent, 1 errors, 2 warnings (default), 3 info: plans and paths,
// 4 debug: compilation and cache hits with times, 5 trace). Messages go to stderr.
#include <fmt/format.h>

#include <cstdio>

namespace autogemm {

int log_level();  // read once from AUTOGEMM_LOG

template <typename... Args>
void log(int level, fmt::format_string<Args...> f, Args&&... args) {
  if (level <= log_level())
    fmt::print(stderr, "[autogemm] {}\n", fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace autogemm
