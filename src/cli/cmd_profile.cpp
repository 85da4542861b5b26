// `autogemm profile`: what autogemm measures about this machine (CPU and every GPU), as a
// table or as one JSON object; `--device <preset|ordinal>` prints one GPU description instead.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/topology_report.hpp"
#include "hw/device_json.hpp"

namespace autogemm::cli {
namespace {

struct ProfileOptions {
  bool json = false;
  std::string device;  // empty: measure everything
};

std::string format_bytes(int64_t bytes) {
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  const double b = static_cast<double>(bytes);
  if (b >= kGiB) return fmt::format("{:.1f} GiB", b / kGiB);
  if (b >= kMiB) return fmt::format("{:g} MiB", b / kMiB);
  if (b >= kKiB) return fmt::format("{:g} KiB", b / kKiB);
  return fmt::format("{} B", bytes);
}

const char* yes_no(bool value) { return value ? "yes" : "no"; }

void print_cpu(const CpuInfo& cpu) {
  fmt::print("CPU\n");
  fmt::print("  model        {}\n", cpu.model);
  fmt::print("  vendor       {} ({})\n", cpu.vendor, cpu.architecture);
  fmt::print("  cores        {} physical, {} logical\n", cpu.physical_cores, cpu.logical_cores);
  fmt::print("  features     {}\n",
             cpu.features.empty() ? std::string("none detected")
                                  : fmt::format("{}", fmt::join(cpu.features, " ")));
  std::vector<std::string> caches;
  for (const CacheLevel& c : cpu.caches) {
    const char* suffix = c.type == "instruction" ? "i" : c.type == "data" && c.level == 1 ? "d"
                                                                                          : "";
    caches.push_back(fmt::format("L{}{} {} x{}", c.level, suffix, format_bytes(c.size_bytes),
                                 c.count));
  }
  fmt::print("  caches       {}\n", fmt::join(caches, ", "));
  fmt::print("  memory       {} total, {} available\n", format_bytes(cpu.memory_total_bytes),
             format_bytes(cpu.memory_available_bytes));
}

std::string capability_list(const ArchCapabilities& c) {
  std::vector<std::string> names;
  if (c.mma_sync_f16_bf16) names.emplace_back("mma.sync");
  if (c.fp8_tensor_cores) names.emplace_back("fp8");
  if (c.fp4_tensor_cores) names.emplace_back("fp4");
  if (c.wgmma) names.emplace_back("wgmma");
  if (c.tcgen05) names.emplace_back("tcgen05");
  if (c.tensor_memory) names.emplace_back("tmem");
  if (c.tma) names.emplace_back("tma");
  if (c.clusters) names.emplace_back("clusters");
  if (c.setmaxnreg) names.emplace_back("setmaxnreg");
  return names.empty() ? "none known" : fmt::format("{}", fmt::join(names, " "));
}

void print_gpu(const GpuInfo& g) {
  const std::string title = g.ordinal >= 0 ? fmt::format("GPU {}", g.ordinal)
                                           : fmt::format("Preset {}", g.preset);
  const std::string where = g.pci_bus_id.empty() ? "" : ", PCI " + g.pci_bus_id;
  fmt::print("{}: {} ({}, CC {}.{}{})\n", title, g.name, g.caps.arch_name, g.cc.major,
             g.cc.minor, where);
  fmt::print("  SMs              {} @ {} MHz\n", g.sm_count, g.sm_clock_khz / 1000);
  fmt::print("  shared memory    {}/SM, {}/block, {}/block opt-in\n",
             format_bytes(g.smem_per_sm_bytes), format_bytes(g.smem_per_block_bytes),
             format_bytes(g.smem_per_block_optin_bytes));
  fmt::print("  L2               {}\n", format_bytes(g.l2_bytes));
  fmt::print("  registers        {}/SM, {}/block\n", g.regs_per_sm, g.regs_per_block);
  fmt::print("  threads          {}/SM, {}/block\n", g.max_threads_per_sm,
             g.max_threads_per_block);
  const std::string free_part =
      g.ordinal >= 0 ? fmt::format(", {} free", format_bytes(g.memory_free_bytes)) : "";
  fmt::print("  memory           {}{}; {}-bit @ {} MHz = {:.0f} GB/s\n",
             format_bytes(g.memory_total_bytes), free_part, g.memory_bus_width_bits,
             g.memory_clock_khz / 1000, g.memory_bandwidth_gbps);
  fmt::print("  clusters         launch {}, max {} ({})\n", yes_no(g.cluster_launch),
             g.max_cluster_size, g.max_cluster_size_source);
  fmt::print("  features         {}\n", capability_list(g.caps));
  fmt::print("  peak dense       {:.1f} TFLOP/s BF16, {:.1f} TFLOP/s FP8\n",
             g.peak_bf16_tflops(), g.peak_fp8_tflops());
}

void print_peer_access(const GpuProfile& profile) {
  fmt::print("Peer access (row can map column's memory)\n     ");
  for (size_t j = 0; j < profile.gpus.size(); ++j) fmt::print(" {:>3}", j);
  fmt::print("\n");
  for (size_t i = 0; i < profile.peer_access.size(); ++i) {
    fmt::print("  {:>3}", i);
    for (bool can : profile.peer_access[i]) fmt::print(" {:>3}", can ? "yes" : "no");
    fmt::print("\n");
  }
}

nlohmann::json machine_json(const CpuInfo& cpu, const GpuProfile& profile,
                            const MachineLinks& links) {
  nlohmann::json out;
  out["cpu"] = hw::to_json(cpu);
  out["gpus"] = nlohmann::json::array();
  for (const GpuInfo& g : profile.gpus) out["gpus"].push_back(hw::to_json(g));
  if (profile.gpus.empty()) out["gpu_unavailable_reason"] = profile.unavailable_reason;
  if (profile.gpus.size() > 1) out["peer_access"] = profile.peer_access;
  out["topology"] = machine_links_json(links);  // measured peer bandwidth and latency
  return out;
}

void run_profile(const ProfileOptions& options) {
  if (!options.device.empty()) {
    const GpuInfo g = resolve_device(options.device);
    if (options.json)
      fmt::print("{}\n", hw::to_json(g).dump(2));
    else
      print_gpu(g);
    return;
  }
  const CpuInfo cpu = profile_cpu();
  const GpuProfile profile = profile_gpus();
  const MachineLinks links = measure_machine_links(profile);
  if (options.json) {
    fmt::print("{}\n", machine_json(cpu, profile, links).dump(2));
    return;
  }
  print_cpu(cpu);
  fmt::print("\n");
  if (profile.gpus.empty()) {
    fmt::print("GPUs: none ({})\n{}", profile.unavailable_reason, format_machine_links(links));
    return;
  }
  for (const GpuInfo& g : profile.gpus) {
    print_gpu(g);
    fmt::print("\n");
  }
  if (profile.gpus.size() > 1) print_peer_access(profile);
  fmt::print("{}", format_machine_links(links));
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto options = std::make_shared<ProfileOptions>();
  auto* cmd = app.add_subcommand(
      "profile", "Measure this machine: CPU (model, cores, ISA, caches, memory) and every GPU");
  cmd->add_flag("--json", options->json, "Print one JSON object instead of a table");
  cmd->add_option("--device", options->device,
                  "Print one GPU instead of measuring everything: a preset (" +
                      fmt::format("{}", fmt::join(device_preset_names(), ", ")) +
                      ") or a CUDA ordinal (0, 1, ...)")
      ->check(device_name_check());
  cmd->callback([options] { run_profile(*options); });
}

}  // namespace autogemm::cli
