// The `autogemm` command: profile, plan, kernels, bench, ladder, warmup, compile, fuzz, advise,
// tune.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "autogemm/errors.hpp"
#include "autogemm/version.hpp"
#include "cli/commands.hpp"

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
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();   // a command's own exit code (fuzz: 1 when a case failed)
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the option, its value and the check; a bad command line is a user error
    // like any other (exit 2), help and version are not (0).
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const autogemm::Error& e) {
    fmt::print(stderr, "autogemm: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "autogemm: internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}
