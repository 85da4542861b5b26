#pragma once
// Runs the `autogemm` command built with the tests (AUTOGEMM_CLI_PATH) and captures what it
// prints, for the command-line tests.
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace autogemm::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// `env`: `env(1)` arguments put before the command ("-u NAME", "NAME=value"); empty: none.
inline CliRun run_cli(const std::string& args, const std::string& env = "") {
  const std::string command = (env.empty() ? std::string() : "env " + env + " ") +
                              std::string(AUTOGEMM_CLI_PATH) + " " + args + " 2>&1";
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), int(buffer.size()), pipe) != nullptr) run.out += buffer.data();
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace autogemm::testing
