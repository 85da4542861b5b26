// TEMPORARY stub: replaced by the real `autogemm warmup`.
#include "autogemm/errors.hpp"
#include "cli/commands.hpp"
namespace autogemm::cli {
void add_warmup_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("warmup", "(not yet implemented)");
  cmd->callback([] { throw Error("autogemm warmup is not implemented yet"); });
}
}  // namespace autogemm::cli
