#include "autogemm/config.hpp"

#include <fmt/format.h>

#include <charconv>
#include <set>
#include <sstream>

#include "autogemm/errors.hpp"

namespace autogemm {

std::string_view to_string(Instruction i) {
  switch (i) {
    case Instruction::wgmma: return "wgmma";
    case Instruction::mma: return "mma";
    case Instruction::vendor: return "vendor";
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
std::string_view to_string(RasterOrder r) {
  return r == RasterOrder::along_m ? "along_m" : "along_n";
}

std::string GemmConfig::describe() const {
  if (instruction == Instruction::vendor) return "cuBLASLt";
  if (instruction == Instruction::mma) {
    // The decode family's own fields only; a forced text with others is refused by the rules.
    std::string s = fmt::format("mma {}x{}x{}", block_m, block_n, block_k);
    if (num_stages > 1) s += fmt::format(" s{}", num_stages);
    if (split_k > 1) s += fmt::format(" sk{}", split_k);
    return s;
  }
  std::string s = fmt::format("{}x{}x{} s{} c{}{}", block_m, block_n, block_k, num_stages,
                              num_consumers, persistent ? " p" : "");
  // Group 1 along N is still its own order (tiles column by column, not row by row), so its
  // token stays: without it the text would parse back as group 1 along M.
  if (raster_group > 1 || raster_order == RasterOrder::along_n)
    s += fmt::format(" g{}{}", raster_group, raster_order == RasterOrder::along_n ? "n" : "");
  if (cluster_m * cluster_n > 1)
    s += fmt::format(" cl{}x{}/{}", cluster_m, cluster_n, to_string(multicast));
  if (split_k > 1) s += fmt::format(" sk{}", split_k);
  if (stream_k) s += " stk";
  if (promotion_buffers > 1) s += fmt::format(" pb{}", promotion_buffers);
  if (ordered_issue) s += " oi";
  if (pingpong) s += " pp";
  if (n_tail_kernel) s += " ntk";
  if (swap_ab) s += " swap";
  if (d_chunk_boxes > 0) s += fmt::format(" dc{}", d_chunk_boxes);
  return s;
}

GemmConfig GemmConfig::parse(std::string_view text) {
  GemmConfig c;
  c.persistent = false;
  c.raster_group = 1;
  std::istringstream in{std::string(text)};
  std::string token;
  auto bad = [&](const std::string& why) {
    throw InvalidArgument("config", std::string(text),
                          fmt::format("token '{}': {} (expected e.g. \"128x256x64 s3 c2 p g8 "
                                      "cl2x1/b\")",
                                      token, why));
  };
  auto number = [&](std::string_view digits) {
    int v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || end != digits.data() + digits.size() || v < 0) bad("not a number");
    return v;
  };
  // Each field once: a second token for a field would silently replace the first ("p p",
  // "s3 s4"), which no configuration the planner prints has.
  std::set<std::string_view> given;
  auto once = [&](std::string_view field) {
    if (!given.insert(field).second) bad("a second token for this field (each field is given once)");
  };
  bool have_tile = false;
  while (in >> token) {
    if (token == "cuBLASLt") {
      once("cuBLASLt");
      c.instruction = Instruction::vendor;
    } else if (token == "mma" && !have_tile) {
      once("mma");
      c.instruction = Instruction::mma;
      c.num_stages = 1;
    } else if (!have_tile) {
      const auto x1 = token.find('x'), x2 = token.rfind('x');
      if (x1 == std::string::npos || x1 == x2) bad("the first token is BLOCK_MxBLOCK_NxBLOCK_K");
      c.block_m = number(std::string_view(token).substr(0, x1));
      c.block_n = number(std::string_view(token).substr(x1 + 1, x2 - x1 - 1));
      c.block_k = number(std::string_view(token).substr(x2 + 1));
      have_tile = true;
    } else if (token == "p") {
      once("p");
      c.persistent = true;
    } else if (token == "oi") {
      once("oi");
      c.ordered_issue = true;
    } else if (token == "pp") {
      once("pp");
      c.pingpong = true;
    } else if (token == "ntk") {
      once("ntk");
      c.n_tail_kernel = true;
    } else if (token == "stk") {
      once("stk");
      c.stream_k = true;
    } else if (token == "swap") {
      once("swap");
      c.swap_ab = true;
    } else if (token.starts_with("pb")) {
      once("pb");
      c.promotion_buffers = number(std::string_view(token).substr(2));
    } else if (token.starts_with("dc") && token.size() > 2) {
      once("dc");
      c.d_chunk_boxes = number(std::string_view(token).substr(2));
      if (c.d_chunk_boxes == 0) bad("at least 1 box a chunk (leave the token out to stage the whole tile)");
    } else if (token.starts_with("sk")) {
      once("sk");
      c.split_k = number(std::string_view(token).substr(2));
    } else if (token.starts_with("cl")) {
      once("cl");
      const auto x = token.find('x'), slash = token.find('/');
      if (x == std::string::npos || slash == std::string::npos) bad("clusters read clMxN/{a,b,none}");
      c.cluster_m = number(std::string_view(token).substr(2, x - 2));
      c.cluster_n = number(std::string_view(token).substr(x + 1, slash - x - 1));
      const std::string mc = token.substr(slash + 1);
      if (mc == "a") c.multicast = Multicast::a;
      else if (mc == "b") c.multicast = Multicast::b;
      else if (mc == "none") c.multicast = Multicast::none;
      else bad("multicast is a, b or none");
    } else if (token == "ws" || token == "tma/tma") {
      bad("warp specialisation and TMA loads and stores are no configuration fields: every "
          "configuration has them (the technique ladder's steps without them run through "
          "`autogemm ladder`); leave the token out");
    } else if (token.size() > 1 && token[0] == 's') {
      once("s");
      c.num_stages = number(std::string_view(token).substr(1));
    } else if (token.size() > 1 && token[0] == 'c') {
      once("c");
      c.num_consumers = number(std::string_view(token).substr(1));
    } else if (token.size() > 1 && token[0] == 'g') {
      once("g");
      std::string_view g = std::string_view(token).substr(1);
      if (g.ends_with('n')) {
        c.raster_order = RasterOrder::along_n;
        g.remove_suffix(1);
      }
      c.raster_group = number(g);
    } else {
      bad("unknown field");
    }
  }
  if (!have_tile && c.instruction != Instruction::vendor) bad("missing the tile BLOCK_MxBLOCK_NxBLOCK_K");
  return c;
}

}  // namespace autogemm
