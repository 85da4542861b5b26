// TEMPORARY stub: replaced by the real `autogemm kernels`.
#include "autogemm/errors.hpp"
#include "cli/commands.hpp"
namespace autogemm::cli {
void add_kernels_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("kernels", "(not yet implemented)");
  cmd->callback([] { throw Error("autogemm kernels is not implemented yet"); });
}
}  // namespace autogemm::cli
