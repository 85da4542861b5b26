#pragma once
// Device sources embedded at build time (cmake/embed_sources.cmake): every file under
// src/kernels/, named by its path below that folder ("sm90/gemm.cuh", "ptx/wgmma.cuh").
#include <cstddef>
#include <string_view>

namespace autogemm::jit {

struct EmbeddedFile {
  const char* name;
  const char* text;
};
extern const EmbeddedFile kEmbeddedFiles[];
extern const std::size_t kNumEmbeddedFiles;
// data/cost-model/*.json (hw/cost_calibration.hpp), named by file name ("h200.json").
extern const EmbeddedFile kEmbeddedCalibrations[];
extern const std::size_t kNumEmbeddedCalibrations;

}  // namespace autogemm::jit
