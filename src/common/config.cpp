#include "autogemm/config.hpp"

#include <fmt/format.h>

namespace autogemm {

std::string_view to_string(Instruction i) {
  switch (i) {
    case Instruction::wgmma: return "wgmma";
    case Instruction::mma_sync: return "mma.sync";
    case Instruction::tcgen05: return "tcgen05";
    case Instruction::vendor: return "vendor";
    case Instruction::cpu: return "cpu";
  }
  return "?";
}
std::string_view to_string(Multicast m) {
  switch (m) {
    case Multicast::none: return "none";
    case Multicast::a: return "a";
    case Multicast::b: return "b";
  }
  return "?";
}
std::string_view to_string(LoadPath p) { return p == LoadPath::tma ? "tma" : "threads"; }
std::string_view to_string(StorePath p) { return p == StorePath::tma ? "tma" : "threads"; }
std::string_view to_string(RasterOrder r) {
  return r == RasterOrder::along_m ? "along_m" : "along_n";
}

std::string GemmConfig::describe() const {
  if (instruction == Instruction::vendor) return "cuBLASLt";
  std::string s = fmt::format("{}x{}x{} s{} c{}{}{}", block_m, block_n, block_k, num_stages,
                              num_consumers, warp_specialized ? " ws" : "",
                              persistent ? " p" : "");
  if (raster_group > 1)
    s += fmt::format(" g{}{}", raster_group, raster_order == RasterOrder::along_n ? "n" : "");
  if (cluster_m * cluster_n > 1)
    s += fmt::format(" cl{}x{}/{}", cluster_m, cluster_n, to_string(multicast));
  s += fmt::format(" {}/{}", to_string(load_path), to_string(store_path));
  if (max_ctas > 0) s += fmt::format(" ctas{}", max_ctas);
  return s;
}

}  // namespace autogemm
