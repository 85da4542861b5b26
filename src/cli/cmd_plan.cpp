// TEMPORARY stub: replaced by the real `autogemm plan`.
#include "autogemm/errors.hpp"
#include "cli/commands.hpp"
namespace autogemm::cli {
void add_plan_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("plan", "(not yet implemented)");
  cmd->callback([] { throw Error("autogemm plan is not implemented yet"); });
}
}  // namespace autogemm::cli
