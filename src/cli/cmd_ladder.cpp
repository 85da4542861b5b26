// TEMPORARY stub: replaced by the real `autogemm ladder`.
#include "autogemm/errors.hpp"
#include "cli/commands.hpp"
namespace autogemm::cli {
void add_ladder_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ladder", "(not yet implemented)");
  cmd->callback([] { throw Error("autogemm ladder is not implemented yet"); });
}
}  // namespace autogemm::cli
