// TEMPORARY stub: replaced by the real `autogemm bench`.
#include "autogemm/errors.hpp"
#include "cli/commands.hpp"
namespace autogemm::cli {
void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "(not yet implemented)");
  cmd->callback([] { throw Error("autogemm bench is not implemented yet"); });
}
}  // namespace autogemm::cli
