// Parser of the ptxas -v resource report in an NVRTC log (format: jit/ptxas_usage.hpp).
#include "jit/ptxas_usage.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>
#include <string_view>

#include "autogemm/errors.hpp"

namespace autogemm::jit {

namespace {

// The integer written right before `suffix` in `line` ("12 bytes spill stores" -> 12).
std::optional<int> number_before(std::string_view line, std::string_view suffix) {
  const auto at = line.find(suffix);
  if (at == std::string_view::npos) return std::nullopt;
  auto begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == at) return std::nullopt;
  return std::stoi(std::string(line.substr(begin, at - begin)));
}

// The integer written right after `prefix` ("Used 10 registers" with "Used " -> 10).
std::optional<int> number_after(std::string_view line, std::string_view prefix) {
  const auto at = line.find(prefix);
  if (at == std::string_view::npos) return std::nullopt;
  auto begin = at + prefix.size(), end = begin;
  while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
  if (begin == end) return std::nullopt;
  return std::stoi(std::string(line.substr(begin, end - begin)));
}

// The text after `prefix` up to `terminator` (or the end of the line).
std::optional<std::string> text_after(std::string_view line, std::string_view prefix,
                                      char terminator) {
  const auto at = line.find(prefix);
  if (at == std::string_view::npos) return std::nullopt;
  auto rest = line.substr(at + prefix.size());
  auto end = rest.find(terminator);
  auto name = rest.substr(0, end);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
    name.remove_suffix(1);
  return std::string(name);
}

}  // namespace

std::vector<PtxasUsage> parse_ptxas_functions(const std::string& log) {
  std::vector<PtxasUsage> functions;
  std::string properties_of;  // function named by the last "Function properties for" line
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (auto entry = text_after(line, "Compiling entry function '", '\'')) {
      functions.push_back(PtxasUsage{.function = *entry});
      continue;
    }
    if (auto name = text_after(line, "Function properties for ", '\n')) {
      properties_of = *name;
      continue;
    }
    const auto stack = number_before(line, " bytes stack frame");
    const auto stores = number_before(line, " bytes spill stores");
    const auto loads = number_before(line, " bytes spill loads");
    if (stack || stores || loads) {
      // A non-inlined callee reports its own frame and spills; they run as part of the entry
      // being compiled, so they count against it (worst case, not sum: frames are reused).
      if (functions.empty()) functions.push_back(PtxasUsage{.function = properties_of});
      PtxasUsage& f = functions.back();
      f.stack_frame_bytes = std::max(f.stack_frame_bytes, stack.value_or(0));
      f.spill_store_bytes = std::max(f.spill_store_bytes, stores.value_or(0));
      f.spill_load_bytes = std::max(f.spill_load_bytes, loads.value_or(0));
      continue;
    }
    if (auto registers = number_after(line, "Used ");
        registers && line.find(" registers") != std::string::npos) {
      if (functions.empty()) functions.push_back(PtxasUsage{.function = properties_of});
      PtxasUsage& f = functions.back();
      f.registers = *registers;
      f.static_smem_bytes = number_before(line, " bytes smem").value_or(0);
    }
  }
  return functions;
}

PtxasUsage parse_ptxas_usage(const std::string& log) {
  const auto functions = parse_ptxas_functions(log);
  if (functions.empty())
    throw Error("NVRTC log has no ptxas resource report (\"Used N registers\"); was the kernel "
                "compiled with --ptxas-options=-v? Log:\n" + log);
  PtxasUsage worst = functions.front();
  for (const PtxasUsage& f : functions) {
    worst.registers = std::max(worst.registers, f.registers);
    worst.spill_store_bytes = std::max(worst.spill_store_bytes, f.spill_store_bytes);
    worst.spill_load_bytes = std::max(worst.spill_load_bytes, f.spill_load_bytes);
    worst.stack_frame_bytes = std::max(worst.stack_frame_bytes, f.stack_frame_bytes);
    worst.static_smem_bytes = std::max(worst.static_smem_bytes, f.static_smem_bytes);
  }
  if (functions.size() > 1) worst.function.clear();
  return worst;
}

}  // namespace autogemm::jit
