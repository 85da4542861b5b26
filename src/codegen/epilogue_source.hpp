#pragma once
// The fused epilogue's part of both families' generated Config (sm90/fused_epilogue.cuh): one
// `using epilogue = EpilogueFields<...>` line, and a kernel-name suffix. Both are empty for a
// plain problem, so its generated source (and kernel cache key) is what it was before the
// fused epilogue existed.
#include <string>

#include "autogemm/epilogue.hpp"

namespace autogemm::codegen {

std::string epilogue_member(const Epilogue& epilogue);
std::string epilogue_name_suffix(const Epilogue& epilogue);

}  // namespace autogemm::codegen
