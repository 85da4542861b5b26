// `autogemm compile --m M --n N --k K [--dtype] [--config C] --out DIR`: the generated kernel
// source, its PTX, cubin and NVRTC log (ptxas registers and spills) for one problem, for reading
// the machine code (`cuobjdump -sass DIR/kernel.cubin`) without a GPU. Without --config it
// compiles the planner's choice for the device (a preset when there is no GPU).
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"
#include "codegen/kernel_source.hpp"
#include "trace/tile_trace.hpp"
#include "autogemm/kernel_spec.hpp"

namespace autogemm::cli {

namespace {

struct CompileOptions {
  ProblemOptions problem;
  EpilogueOptions epilogue;
  std::string config;
  std::string device;
  std::string out;
};

// --out is the user's path: a failure to use it is their error (exit 2), named with the
// path and the OS's reason, not an internal one.
void write_file(const std::filesystem::path& path, const void* data, std::size_t size) {
  errno = 0;
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!f.flush())
    throw InvalidArgument("--out", path.string(),
                          fmt::format("the file could not be written: {}",
                                      errno != 0 ? std::strerror(errno) : "unknown reason"));
}

void create_out_directory(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (!error && !std::filesystem::is_directory(dir, error))
    error = std::make_error_code(std::errc::not_a_directory);
  if (error)
    throw InvalidArgument("--out", dir.string(),
                          fmt::format("the folder could not be created: {}", error.message()));
}

void compile_one(const KernelLaunch& kernel, const std::string& out);

void run_compile(const CompileOptions& o) {
  const std::vector<GemmProblem> problems = o.epilogue.apply(o.problem.problems());
  if (problems.size() != 1)
    throw InvalidArgument("--m/--n/--k", fmt::format("{} problems", problems.size()),
                          "compile takes exactly one problem (no lists or ranges)");
  const GemmProblem& problem = problems.front();
  const GpuInfo gpu = resolve_cli_device(o.device);
  // The planner's spec, or the forced configuration's, made by the same function and refused
  // by the same rules as in a call.
  const KernelSpec spec =
      o.config.empty() ? plan_gemm(problem, gpu).spec : config_spec(problem, o.config, gpu);
  if (spec.vendor)
    throw InvalidArgument("--config", o.config.empty() ? "(planner's choice)" : o.config,
                          "this runs cuBLASLt: there is no kernel of ours to compile");
  // With the n-tail kernel the call launches two kernels: the main one goes to --out, the
  // tail kernel to --out/tail. The folders are made before compiling: a bad --out is
  // reported at once, not after NVRTC has run.
  std::vector<std::string> outs;
  for (size_t i = 0; i < spec.kernels.size(); ++i) {
    outs.push_back(i == 0 ? o.out : (std::filesystem::path(o.out) / "tail").string());
    create_out_directory(outs.back());
  }
  for (size_t i = 0; i < spec.kernels.size(); ++i) compile_one(spec.kernels[i], outs[i]);
}

void compile_one(const KernelLaunch& kernel, const std::string& out) {
  const jit::KernelSource source =
      codegen::gemm_kernel_source(kernel, !trace::tile_trace_path().empty());
  const jit::CompiledKernel compiled = jit::compile_to_cubin(source);

  const std::filesystem::path dir(out);
  write_file(dir / "kernel.cu", source.source.data(), source.source.size());
  write_file(dir / "kernel.ptx", compiled.ptx.data(), compiled.ptx.size());
  write_file(dir / "kernel.cubin", compiled.cubin.data(), compiled.cubin.size());
  write_file(dir / "nvrtc.log", compiled.log.data(), compiled.log.size());
  std::string resources =
      "no ptxas report: NVRTC's own compile cache (CUDA 12.9+) answered; CUDA_CACHE_DISABLE=1 "
      "makes ptxas run";
  if (!jit::parse_ptxas_functions(compiled.log).empty()) {
    const jit::PtxasUsage usage = jit::parse_ptxas_usage(compiled.log);
    resources = fmt::format("{} registers, {} B stack, spills {} B / {} B", usage.registers,
                            usage.stack_frame_bytes, usage.spill_store_bytes,
                            usage.spill_load_bytes);
  }
  fmt::print("{}  {}\n  compiled in {:.0f} ms; {}\n"
             "  {}/kernel.cu, kernel.ptx, kernel.cubin, nvrtc.log "
             "(SASS: cuobjdump -sass {}/kernel.cubin)\n",
             source.name, kernel.text, compiled.compile_ms, resources, out, out);
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto o = std::make_shared<CompileOptions>();
  auto* cmd = app.add_subcommand(
      "compile",
      "Write one problem's generated kernel source, PTX, cubin and NVRTC log (no GPU needed)");
  o->problem.add_to(*cmd);
  o->problem.add_weights_to(*cmd);
  o->epilogue.add_to(*cmd);
  cmd->add_option("--config", o->config,
                  "configuration as `autogemm plan` prints it; default: the planner's choice");
  cmd->add_option("--device", o->device, "GPU index or preset; default: GPU 0, else h100-sxm")
      ->check(device_name_check());
  cmd->add_option("--out", o->out, "folder for kernel.cu, kernel.ptx, kernel.cubin, nvrtc.log")
      ->required();
  cmd->callback([o] { run_compile(*o); });
}

}  // namespace autogemm::cli
