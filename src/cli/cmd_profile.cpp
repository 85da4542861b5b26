// TEMPORARY stub: replaced by the real `autogemm profile`.
#include "autogemm/errors.hpp"
#include "cli/commands.hpp"
namespace autogemm::cli {
void add_profile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("profile", "(not yet implemented)");
  cmd->callback([] { throw Error("autogemm profile is not implemented yet"); });
}
}  // namespace autogemm::cli
