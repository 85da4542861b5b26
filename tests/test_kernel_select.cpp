// Kernel selection per device: never an instruction the architecture lacks, our sm90a kernels
// exactly where they run, and the `autogemm kernels` command's table and JSON.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <sys/wait.h>

#include "autogemm/device.hpp"
#include "autogemm/plan.hpp"

using namespace autogemm;

namespace {

const KernelClass kAllClasses[] = {KernelClass::gemm,          KernelClass::gemv,
                                   KernelClass::quantized_gemm, KernelClass::quantized_dot,
                                   KernelClass::attention,     KernelClass::rmsnorm,
                                   KernelClass::softmax,       KernelClass::rope,
                                   KernelClass::silu,          KernelClass::elementwise};
const std::set<std::string> kPaths = {"TMA+wgmma", "wgmma", "TMA", "mma.sync",
                                      "tcgen05",   "standard", "vendor"};
const std::set<std::string> kImplementations = {"autogemm sm90a", "cuBLASLt", "none yet", "CPU"};

bool mentions(const KernelChoice& c, const std::string& word) {
  return c.implementation.find(word) != std::string::npos ||
         c.path.find(word) != std::string::npos || c.reason.find(word) != std::string::npos;
}

const KernelChoice& choice_for(const std::vector<KernelChoice>& all, KernelClass k) {
  for (const KernelChoice& c : all)
    if (c.kernel_class == k) return c;
  throw std::runtime_error("no choice for " + std::string(to_string(k)));
}

// The architecture rules every selection must respect, whatever the device.
void expect_respects_architecture(const GpuInfo& d) {
  const std::vector<KernelChoice> choices = select_kernels(d);
  ASSERT_EQ(choices.size(), std::size(kAllClasses)) << d.name;
  const bool hopper = d.cc.major == 9 && d.cc.minor == 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    const KernelChoice& c = choices[i];
    const std::string where = d.name + " / " + std::string(to_string(c.kernel_class));
    EXPECT_EQ(c.kernel_class, kAllClasses[i]) << where;
    EXPECT_TRUE(kPaths.count(c.path)) << where << ": path " << c.path;
    EXPECT_TRUE(kImplementations.count(c.implementation)) << where << ": " << c.implementation;
    EXPECT_FALSE(c.reason.empty()) << where;
    EXPECT_EQ(c.reason.find('\n'), std::string::npos) << where << ": reason is one line";
    if (!hopper) EXPECT_FALSE(mentions(c, "wgmma")) << where << ": " << c.reason;
    if (!d.caps.tcgen05) EXPECT_FALSE(mentions(c, "tcgen05")) << where << ": " << c.reason;
    if (!d.caps.tma) EXPECT_FALSE(mentions(c, "TMA")) << where << ": " << c.reason;
    if (c.implementation == "autogemm sm90a") EXPECT_TRUE(hopper && d.caps.wgmma) << where;
    if (c.implementation == "none yet")
      EXPECT_NE(c.reason.find("no kernel of ours yet"), std::string::npos) << where;
  }
  const KernelChoice& q = choice_for(choices, KernelClass::quantized_gemm);
  if (!d.caps.fp8_tensor_cores) {
    EXPECT_NE(q.implementation, "autogemm sm90a") << d.name;
    EXPECT_EQ(q.reason.find("FP8 matmul"), std::string::npos) << d.name << ": " << q.reason;
  }
}

// A device described only by its compute capability and the capability row for it.
GpuInfo device_with(ComputeCapability cc, const std::string& name) {
  GpuInfo d;
  d.name = name;
  d.cc = cc;
  if (auto caps = arch_capabilities(cc)) d.caps = *caps;
  return d;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout only
};

CommandResult run_cli(const std::string& args) {
  const std::string command = std::string(AUTOGEMM_CLI_PATH) + " " + args + " 2>/dev/null";
  CommandResult r;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return r;
  std::array<char, 4096> buffer{};
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0) r.out.append(buffer.data(), n);
  const int status = pclose(pipe.release());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

TEST(KernelSelect, ClassNames) {
  std::set<std::string> names;
  for (KernelClass k : kAllClasses) names.insert(std::string(to_string(k)));
  EXPECT_EQ(names.size(), std::size(kAllClasses));
  EXPECT_EQ(to_string(KernelClass::quantized_gemm), "quantized_gemm");
  EXPECT_EQ(to_string(KernelClass::elementwise), "elementwise");
}

TEST(KernelSelect, EveryPresetRespectsItsArchitecture) {
  const std::vector<std::string> presets = device_preset_names();
  ASSERT_FALSE(presets.empty());
  for (const std::string& name : presets) {
    SCOPED_TRACE(name);
    expect_respects_architecture(device_preset(name));
  }
}

TEST(KernelSelect, EveryKnownArchitectureRespectsItsCapabilities) {
  for (ComputeCapability cc : {ComputeCapability{7, 0}, ComputeCapability{7, 5},
                               ComputeCapability{8, 0}, ComputeCapability{8, 6},
                               ComputeCapability{8, 9}, ComputeCapability{9, 0},
                               ComputeCapability{10, 0}, ComputeCapability{10, 3},
                               ComputeCapability{12, 0}, ComputeCapability{12, 1},
                               ComputeCapability{99, 0}}) {
    SCOPED_TRACE(cc.as_int());
    expect_respects_architecture(device_with(cc, "cc " + std::to_string(cc.as_int())));
  }
}

TEST(KernelSelect, HopperUsesOurKernelsForGemmAndFp8) {
  for (const char* preset : {"h100-sxm", "h100-pcie", "h200"}) {
    const auto choices = select_kernels(device_preset(preset));
    const KernelChoice& gemm = choice_for(choices, KernelClass::gemm);
    EXPECT_EQ(gemm.implementation, "autogemm sm90a") << preset;
    EXPECT_EQ(gemm.path, "TMA+wgmma") << preset;
    const KernelChoice& fp8 = choice_for(choices, KernelClass::quantized_gemm);
    EXPECT_EQ(fp8.implementation, "autogemm sm90a") << preset;
    EXPECT_EQ(choice_for(choices, KernelClass::gemv).implementation, "autogemm sm90a") << preset;
    EXPECT_EQ(choice_for(choices, KernelClass::attention).implementation, "none yet") << preset;
  }
}

// The gemv line says what plan_gemm does with one row: it said cuBLASLt ("tensor cores do not
// help") where the planner picks our decode family.
TEST(KernelSelect, GemvSaysWhatThePlannerPicksForOneRow) {
  for (const std::string& preset : device_preset_names()) {
    const GpuInfo device = device_preset(preset);
    GemmProblem one_row;
    one_row.m = 1, one_row.n = 4096, one_row.k = 4096;
    const Instruction picked = plan_gemm(one_row, device).best().config.instruction;
    const KernelChoice gemv = choice_for(select_kernels(device), KernelClass::gemv);
    EXPECT_EQ(gemv.implementation, picked == Instruction::vendor ? "cuBLASLt" : "autogemm sm90a")
        << preset;
    EXPECT_EQ(gemv.path, picked == Instruction::mma      ? "mma.sync"
                         : picked == Instruction::vendor ? "vendor"
                                                         : "TMA+wgmma")
        << preset;
    EXPECT_EQ(gemv.reason.find("do not help"), std::string::npos) << gemv.reason;
  }
}

TEST(KernelSelect, B200GemmIsVendorNeverWgmma) {
  const GpuInfo b200 = device_preset("b200");
  ASSERT_TRUE(b200.caps.tcgen05);
  const auto choices = select_kernels(b200);
  const KernelChoice& gemm = choice_for(choices, KernelClass::gemm);
  EXPECT_EQ(gemm.implementation, "cuBLASLt");
  EXPECT_FALSE(mentions(gemm, "wgmma"));
  EXPECT_NE(gemm.reason.find("tcgen05"), std::string::npos) << gemm.reason;  // names what it has
  EXPECT_EQ(choice_for(choices, KernelClass::attention).path, "tcgen05");
}

TEST(KernelSelect, A100HasNoTmaAndNoFp8) {
  const GpuInfo a100 = device_preset("a100-80g");
  ASSERT_FALSE(a100.caps.tma);
  const auto choices = select_kernels(a100);
  for (const KernelChoice& c : choices) EXPECT_FALSE(mentions(c, "TMA")) << c.reason;
  EXPECT_EQ(choice_for(choices, KernelClass::gemm).implementation, "cuBLASLt");
  EXPECT_EQ(choice_for(choices, KernelClass::attention).path, "mma.sync");
  const KernelChoice& q = choice_for(choices, KernelClass::quantized_gemm);
  EXPECT_NE(q.reason.find("INT8"), std::string::npos) << q.reason;
}

TEST(KernelSelect, UnknownArchitectureFallsBackToVendor) {
  GpuInfo unknown;
  unknown.name = "future GPU";
  unknown.cc = {42, 0};
  const auto choices = select_kernels(unknown);
  EXPECT_EQ(choice_for(choices, KernelClass::gemm).implementation, "cuBLASLt");
  EXPECT_EQ(choice_for(choices, KernelClass::gemm).path, "vendor");
  expect_respects_architecture(unknown);
}

TEST(KernelsCommand, JsonListsEveryClassForAPreset) {
  const CommandResult r = run_cli("kernels --device a100-80g --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json list = nlohmann::json::parse(r.out);
  ASSERT_TRUE(list.is_array());
  ASSERT_EQ(list.size(), std::size(kAllClasses));
  const auto expected = select_kernels(device_preset("a100-80g"));
  for (size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(list[i].at("class"), std::string(to_string(expected[i].kernel_class)));
    EXPECT_EQ(list[i].at("implementation"), expected[i].implementation);
    EXPECT_EQ(list[i].at("path"), expected[i].path);
    EXPECT_EQ(list[i].at("reason"), expected[i].reason);
  }
}

TEST(KernelsCommand, TableNamesDeviceAndChoices) {
  const CommandResult r = run_cli("kernels --device h100-sxm");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("9.0"), std::string::npos) << r.out;
  for (KernelClass k : kAllClasses)
    EXPECT_NE(r.out.find(std::string(to_string(k))), std::string::npos) << to_string(k);
  EXPECT_NE(r.out.find("autogemm sm90a"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TMA+wgmma"), std::string::npos) << r.out;
}

TEST(KernelsCommand, DefaultDeviceWorksWithOrWithoutGpu) {
  // Without a GPU the command falls back to the h100-sxm preset (note on stderr).
  const CommandResult r = run_cli("kernels --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json list = nlohmann::json::parse(r.out);
  EXPECT_EQ(list.size(), std::size(kAllClasses));
  if (profile_gpus().gpus.empty()) EXPECT_EQ(list[0].at("implementation"), "autogemm sm90a");
}

TEST(KernelsCommand, UnknownPresetIsAnError) {
  const CommandResult r = run_cli("kernels --device no-such-gpu");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// Issue 50: on sm_90a SiLU and per-element passes after a GEMM are the GEMM's fused epilogue;
// elsewhere they have no kernel of ours.
TEST(KernelSelect, SiluAndElementwiseServedByTheGemmEpilogue) {
  for (KernelClass k : {KernelClass::silu, KernelClass::elementwise}) {
    const KernelChoice hopper = choice_for(select_kernels(device_preset("h100-sxm")), k);
    EXPECT_EQ(hopper.implementation, "autogemm sm90a");
    EXPECT_NE(hopper.reason.find("fused into its epilogue"), std::string::npos) << hopper.reason;
    const KernelChoice ampere = choice_for(select_kernels(device_preset("a100-80g")), k);
    EXPECT_EQ(ampere.implementation, "none yet");
  }
}
