// The `autogemm` command: profile, plan, kernels, bench, ladder, warmup, compile, fuzz, advise,
// tune.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "autogemm/errors.hpp"
#include "autogemm/version.hpp"
#include "cli/commands.hpp"
#include "cli/parse_errors.hpp"

int main(int argc, char** argv) {
  CLI::App app{"autogemm: fast matrix multiplication on NVIDIA GPUs, planned and explained",
               "autogemm"};
  app.set_version_flag("--version", "autogemm " + autogemm::version());
  app.require_subcommand(1);
  autogemm::cli::add_profile_command(app);
  autogemm::cli::add_plan_command(app);
  autogemm::cli::add_kernels_command(app);
  autogemm::cli::add_bench_command(app);
  autogemm::cli::add_ladder_command(app);
  autogemm::cli::add_warmup_command(app);
  autogemm::cli::add_compile_command(app);
  autogemm::cli::add_fuzz_command(app);
  autogemm::cli::add_advise_command(app);
  autogemm::cli::add_tune_command(app);
  autogemm::cli::add_fit_cost_command(app);
  if (const std::string unknown = autogemm::cli::unknown_command_text(app, argc, argv);
      !unknown.empty()) {
    fmt::print(stderr, "autogemm: error: {}\n", unknown);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();   // a command's own exit code (fuzz: 1 when a case failed)
  } catch (const CLI::ParseError& e) {
    // Help and version are no errors (0); a bad command line is a user error like any other
    // (exit 2), said in the same form.
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "autogemm: error: {}\n", autogemm::cli::parse_error_text(app, e));
    return 2;
  } catch (const autogemm::Error& e) {
    fmt::print(stderr, "autogemm: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "autogemm: internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}
