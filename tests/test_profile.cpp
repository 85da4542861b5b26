// The machine profile: libcpuinfo, the CUDA runtime, and `autogemm profile` end to end.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;

namespace {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout only
};

CommandResult run_cli(const std::string& args) {
  CommandResult result;
  const std::string command = std::string(AUTOGEMM_CLI_PATH) + " " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

TEST(Profile, CpuIsMeasured) {
  const CpuInfo cpu = profile_cpu();
  EXPECT_FALSE(cpu.model.empty());
  EXPECT_NE(cpu.vendor, "");
  EXPECT_TRUE(cpu.architecture == "x86_64" || cpu.architecture == "aarch64") << cpu.architecture;
  EXPECT_GT(cpu.physical_cores, 0);
  EXPECT_GE(cpu.logical_cores, cpu.physical_cores);
  ASSERT_FALSE(cpu.caches.empty());
  bool has_l1_data = false;
  for (const CacheLevel& c : cpu.caches) {
    EXPECT_GT(c.size_bytes, 0);
    EXPECT_GT(c.count, 0);
    has_l1_data |= c.level == 1 && c.type == "data";
  }
  EXPECT_TRUE(has_l1_data);
  EXPECT_GT(cpu.memory_total_bytes, 0);
  EXPECT_GT(cpu.memory_available_bytes, 0);
  EXPECT_LE(cpu.memory_available_bytes, cpu.memory_total_bytes);
#if defined(__AVX2__)
  // Built with AVX2 code generation, so the CPU running this test has it.
  EXPECT_NE(std::find(cpu.features.begin(), cpu.features.end(), "avx2"), cpu.features.end());
#endif
}

TEST(Profile, GpuListOrReasonNeverBoth) {
  const GpuProfile profile = profile_gpus();
  if (profile.gpus.empty()) {
    EXPECT_TRUE(starts_with(profile.unavailable_reason, std::string(kNoDriverOrGpu)))
        << profile.unavailable_reason;
    EXPECT_GT(profile.unavailable_reason.size(), kNoDriverOrGpu.size());
  } else {
    EXPECT_TRUE(profile.unavailable_reason.empty());
    ASSERT_EQ(profile.peer_access.size(), profile.gpus.size());
    for (size_t i = 0; i < profile.gpus.size(); ++i) {
      EXPECT_EQ(profile.gpus[i].ordinal, static_cast<int>(i));
      EXPECT_TRUE(profile.peer_access[i][i]);
    }
  }
}

TEST(Profile, ResolveOrdinalWithoutGpuThrowsNoDeviceElseChecksRange) {
  const GpuProfile profile = profile_gpus();
  if (profile.gpus.empty()) {
    try {
      resolve_device("0");
      FAIL() << "resolve_device(\"0\") returned without a GPU";
    } catch (const NoDevice& e) {
      EXPECT_TRUE(starts_with(e.what(), std::string(kNoDriverOrGpu))) << e.what();
    }
  } else {
    EXPECT_EQ(resolve_device("0").ordinal, 0);
    const std::string past_end = std::to_string(profile.gpus.size());
    try {
      resolve_device(past_end);
      FAIL() << "no error for ordinal " << past_end;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(profile.gpus.size()) + " CUDA device"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Profile, CliJsonIsOneObjectWithCpuAndGpus) {
  const CommandResult run = run_cli("profile --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const nlohmann::json j = nlohmann::json::parse(run.out);  // throws if not exactly one JSON
  ASSERT_TRUE(j.is_object());
  const nlohmann::json& cpu = j.at("cpu");
  EXPECT_FALSE(cpu.at("model").get<std::string>().empty());
  EXPECT_GT(cpu.at("logical_cores").get<int>(), 0);
  EXPECT_GT(cpu.at("physical_cores").get<int>(), 0);
  EXPECT_FALSE(cpu.at("caches").empty());
  EXPECT_GT(cpu.at("memory_total_bytes").get<int64_t>(), 0);
  ASSERT_TRUE(j.at("gpus").is_array());
  const GpuProfile in_process = profile_gpus();
  EXPECT_EQ(j.at("gpus").size(), in_process.gpus.size());
  if (in_process.gpus.empty()) {
    // This machine (and CI) has no driver: an empty list plus the runtime's reason.
    EXPECT_EQ(j.at("gpus"), nlohmann::json::array());
    EXPECT_TRUE(starts_with(j.at("gpu_unavailable_reason").get<std::string>(),
                            std::string(kNoDriverOrGpu)));
  } else {
    EXPECT_FALSE(j.contains("gpu_unavailable_reason"));
    EXPECT_EQ(j.contains("peer_access"), in_process.gpus.size() > 1);
    EXPECT_EQ(j["gpus"][0]["sm_count"], in_process.gpus[0].sm_count);
  }
}

TEST(Profile, CliTableHasCpuSectionAndGpuLine) {
  const CommandResult run = run_cli("profile");
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_TRUE(starts_with(run.out, "CPU\n")) << run.out;
  EXPECT_NE(run.out.find(profile_cpu().model), std::string::npos);
  if (profile_gpus().gpus.empty())
    EXPECT_NE(run.out.find("GPUs: none (" + std::string(kNoDriverOrGpu)), std::string::npos)
        << run.out;
  else
    EXPECT_NE(run.out.find("GPU 0: "), std::string::npos) << run.out;
}

TEST(Profile, CliDevicePrintsAPresetWithoutMeasuring) {
  const CommandResult run = run_cli("profile --device a100 --json");
  ASSERT_EQ(run.exit_code, 0);
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j.at("preset"), "a100-80g");
  EXPECT_EQ(j.at("sm_count"), device_preset("a100-80g").sm_count);
  EXPECT_EQ(j.at("compute_capability").at("major"), 8);

  const CommandResult table = run_cli("profile --device b200");
  ASSERT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("Preset b200: NVIDIA B200 (sm_100a"), std::string::npos) << table.out;

  EXPECT_EQ(run_cli("profile --device h300").exit_code, 2);  // autogemm::Error -> exit 2
}

TEST(ProfileGpu, FirstGpuIsAHopperWithItsLimits) {
  AUTOGEMM_REQUIRE_GPU();
  const GpuProfile profile = profile_gpus();
  const GpuInfo& g = profile.gpus.at(0);
  EXPECT_GT(g.sm_count, 0);
  EXPECT_EQ(g.cc, (ComputeCapability{9, 0}));
  EXPECT_EQ(g.smem_per_block_optin_bytes, 232448);
  EXPECT_EQ(g.smem_per_sm_bytes, 233472);
  EXPECT_GT(g.l2_bytes, 0);
  EXPECT_GT(g.memory_total_bytes, 0);
  EXPECT_GT(g.memory_free_bytes, 0);
  EXPECT_GT(g.memory_bandwidth_gbps, 0);
  EXPECT_GT(g.sm_clock_khz, 0);
  EXPECT_TRUE(g.cluster_launch);
  EXPECT_EQ(g.caps, *arch_capabilities(g.cc));
  EXPECT_FALSE(g.pci_bus_id.empty());
  // The occupancy query answers the hardware limit (16 on H100); the fallback is 8.
  EXPECT_GE(g.max_cluster_size, 8) << g.max_cluster_size_source;
}
