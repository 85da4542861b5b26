// AUTOGEMM_LOG: read once per process (docs/env-vars.md).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "jit/log.hpp"

namespace autogemm {

namespace {

constexpr int kDefaultLogLevel = 2;  // warnings
constexpr int kMaxLogLevel = 5;      // trace

int read_log_level() {
  const char* text = std::getenv("AUTOGEMM_LOG");
  if (text == nullptr || *text == '\0') return kDefaultLogLevel;
  const std::string value(text);
  // One digit 0..5 and nothing else: "3 " or "debug" are mistakes worth a warning.
  if (value.size() == 1 && value[0] >= '0' && value[0] <= '0' + kMaxLogLevel) return value[0] - '0';
  // log() cannot be used here: it calls log_level(), whose initialisation is running.
  std::fprintf(stderr,
               "[autogemm] AUTOGEMM_LOG = \"%s\": must be an integer from 0 (silent) to %d "
               "(trace); using %d (warnings)\n",
               value.c_str(), kMaxLogLevel, kDefaultLogLevel);
  return kDefaultLogLevel;
}

}  // namespace

int log_level() {
  static const int level = read_log_level();  // thread-safe one-time initialisation
  return level;
}

}  // namespace autogemm
