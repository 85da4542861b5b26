// profile_cpu: the host CPU through libcpuinfo, memory through /proc/meminfo.
#include <cpuinfo.h>
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "autogemm/device.hpp"

#if CPUINFO_ARCH_X86_64
#include <cpuid.h>
#endif

namespace autogemm {
namespace {

const char* vendor_name(cpuinfo_vendor vendor) {
  switch (vendor) {
    case cpuinfo_vendor_intel: return "Intel";
    case cpuinfo_vendor_amd: return "AMD";
    case cpuinfo_vendor_hygon: return "Hygon";
    case cpuinfo_vendor_arm: return "ARM";
    case cpuinfo_vendor_nvidia: return "NVIDIA";
    case cpuinfo_vendor_qualcomm: return "Qualcomm";
    case cpuinfo_vendor_apple: return "Apple";
    case cpuinfo_vendor_samsung: return "Samsung";
    case cpuinfo_vendor_cavium: return "Cavium";
    case cpuinfo_vendor_huawei: return "Huawei";
    case cpuinfo_vendor_apm: return "Applied Micro";
    case cpuinfo_vendor_broadcom: return "Broadcom";
    case cpuinfo_vendor_marvell: return "Marvell";
    case cpuinfo_vendor_ibm: return "IBM";
    case cpuinfo_vendor_via: return "VIA";
    default: return "unknown";
  }
}

#if CPUINFO_ARCH_X86_64
// AMX is newer than Debian 12's libcpuinfo (2022-06), so ask CPUID directly: leaf 7
// subleaf 0 EDX bits 22 (AMX-BF16), 24 (AMX-TILE), 25 (AMX-INT8) (Intel SDM vol. 2A, CPUID).
// The tile state must also be enabled by the OS: XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA),
// readable with XGETBV only when CPUID.1:ECX.OSXSAVE (bit 27) is set.
void add_amx_features(std::vector<std::string>& features) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) return;
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  const unsigned tile_state = (1u << 17) | (1u << 18);
  if ((xcr0_low & tile_state) != tile_state) return;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return;
  if (edx & (1u << 24)) features.emplace_back("amx_tile");
  if (edx & (1u << 22)) features.emplace_back("amx_bf16");
  if (edx & (1u << 25)) features.emplace_back("amx_int8");
}
#endif

std::vector<std::string> isa_features() {
  std::vector<std::string> features;
  auto add = [&](bool present, const char* name) {
    if (present) features.emplace_back(name);
  };
#if CPUINFO_ARCH_X86_64
  add(cpuinfo_has_x86_avx(), "avx");
  add(cpuinfo_has_x86_fma3(), "fma3");
  add(cpuinfo_has_x86_f16c(), "f16c");
  add(cpuinfo_has_x86_avx2(), "avx2");
  add(cpuinfo_has_x86_avx512f(), "avx512f");
  add(cpuinfo_has_x86_avx512cd(), "avx512cd");
  add(cpuinfo_has_x86_avx512dq(), "avx512dq");
  add(cpuinfo_has_x86_avx512bw(), "avx512bw");
  add(cpuinfo_has_x86_avx512vl(), "avx512vl");
  add(cpuinfo_has_x86_avx512ifma(), "avx512ifma");
  add(cpuinfo_has_x86_avx512vbmi(), "avx512vbmi");
  add(cpuinfo_has_x86_avx512vbmi2(), "avx512vbmi2");
  add(cpuinfo_has_x86_avx512bitalg(), "avx512bitalg");
  add(cpuinfo_has_x86_avx512vpopcntdq(), "avx512vpopcntdq");
  add(cpuinfo_has_x86_avx512vnni(), "avx512vnni");
  add(cpuinfo_has_x86_avx512bf16(), "avx512bf16");
  add_amx_features(features);
#elif CPUINFO_ARCH_ARM64
  add(cpuinfo_has_arm_neon(), "neon");
  add(cpuinfo_has_arm_neon_fp16_arith(), "neon_fp16");
  add(cpuinfo_has_arm_neon_dot(), "neon_dot");
  add(cpuinfo_has_arm_bf16(), "bf16");
  add(cpuinfo_has_arm_sve(), "sve");
  add(cpuinfo_has_arm_sve2(), "sve2");
  add(cpuinfo_has_arm_svebf16(), "sve_bf16");
#endif
  return features;
}

const char* architecture_name() {
#if CPUINFO_ARCH_X86_64
  return "x86_64";
#elif CPUINFO_ARCH_ARM64
  return "aarch64";
#else
  return "unknown";
#endif
}

// One entry per distinct (level, type, size): big.LITTLE parts have two L2 sizes.
void add_caches(std::vector<CacheLevel>& out, int level, const char* fixed_type,
                const cpuinfo_cache* caches, uint32_t count) {
  std::map<std::tuple<std::string, int64_t>, int> grouped;
  for (uint32_t i = 0; i < count; ++i) {
    const std::string type = fixed_type != nullptr                        ? fixed_type
                             : (caches[i].flags & CPUINFO_CACHE_UNIFIED) ? "unified"
                                                                          : "data";
    ++grouped[{type, static_cast<int64_t>(caches[i].size)}];
  }
  for (const auto& [key, instances] : grouped)
    out.push_back({level, std::get<0>(key), std::get<1>(key), instances});
}

std::vector<CacheLevel> cache_levels() {
  std::vector<CacheLevel> caches;
  add_caches(caches, 1, "instruction", cpuinfo_get_l1i_caches(), cpuinfo_get_l1i_caches_count());
  add_caches(caches, 1, "data", cpuinfo_get_l1d_caches(), cpuinfo_get_l1d_caches_count());
  add_caches(caches, 2, nullptr, cpuinfo_get_l2_caches(), cpuinfo_get_l2_caches_count());
  add_caches(caches, 3, nullptr, cpuinfo_get_l3_caches(), cpuinfo_get_l3_caches_count());
  add_caches(caches, 4, nullptr, cpuinfo_get_l4_caches(), cpuinfo_get_l4_caches_count());
  return caches;
}

// MemTotal and MemAvailable from /proc/meminfo (proc(5): values in KiB).
void read_meminfo(CpuInfo& cpu) {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (!(fields >> key >> kib)) continue;
    if (key == "MemTotal:") cpu.memory_total_bytes = kib * 1024;
    if (key == "MemAvailable:") cpu.memory_available_bytes = kib * 1024;
  }
}

}  // namespace

CpuInfo profile_cpu() {
  CpuInfo cpu;
  cpu.architecture = architecture_name();
  read_meminfo(cpu);
  if (!cpuinfo_initialize()) {
    cpu.model = "unknown (libcpuinfo could not initialise)";
    cpu.vendor = "unknown";
    return cpu;
  }
  const uint32_t packages = cpuinfo_get_packages_count();
  cpu.model = packages > 0 ? cpuinfo_get_package(0)->name : "";
  if (cpu.model.empty()) cpu.model = "unknown";
  if (packages > 1) cpu.model = fmt::format("{} x {}", packages, cpu.model);
  const cpuinfo_core* core = cpuinfo_get_cores_count() > 0 ? cpuinfo_get_core(0) : nullptr;
  cpu.vendor = core != nullptr ? vendor_name(core->vendor) : "unknown";
  cpu.logical_cores = static_cast<int>(cpuinfo_get_processors_count());
  cpu.physical_cores = static_cast<int>(cpuinfo_get_cores_count());
  cpu.features = isa_features();
  cpu.caches = cache_levels();
  return cpu;
}

}  // namespace autogemm
