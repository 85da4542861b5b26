#include "runtime/tensor_maps.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "autogemm/errors.hpp"
#include "kernels/sm90/gemm_layout.cuh"
#include "plan/tma_rules.hpp"
#include "cuda/driver.hpp"

namespace autogemm::runtime {

namespace {

CUtensorMapDataType tma_type(DType t) {
  switch (t) {
    case DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::fp16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::fp32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    default: return CU_TENSOR_MAP_DATA_TYPE_UINT8;   // FP8 travels as bytes (DeepGEMM)
  }
}

plan::Swizzle swizzle_for_span(int span_bytes) {
  switch (span_bytes) {
    case 128: return plan::Swizzle::b128;
    case 64: return plan::Swizzle::b64;
    case 32: return plan::Swizzle::b32;
    default: return plan::Swizzle::none;
  }
}

CUtensorMapSwizzle driver_swizzle(plan::Swizzle s) {
  switch (s) {
    case plan::Swizzle::b128: return CU_TENSOR_MAP_SWIZZLE_128B;
    case plan::Swizzle::b64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case plan::Swizzle::b32: return CU_TENSOR_MAP_SWIZZLE_32B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

// Everything that decides a 2-D map's 128 bytes; the other arguments encode_2d passes to the
// driver are constants. A map holds no handle or context, only these values, so two encodings
// of equal keys are the same bytes whatever happened to the memory in between.
struct MapKey {
  const void* ptr = nullptr;
  int64_t row_length = 0, rows = 0, ld = 0;
  int box_inner = 0, box_outer = 0;
  DType type = DType::bf16;
  plan::Swizzle swizzle = plan::Swizzle::none;
  bool operator==(const MapKey&) const = default;
};

// The maps this thread encoded last, direct-mapped by key. Encoding the four maps of a call
// cost 1.8-1.9 us of its ~7 us of host time on the H100 machine (GemmGpu.HostCostPerCall,
// session 12), and a decode loop encodes the same ones every call. Per thread, like the
// launcher's kernel memo, so the hot path takes no lock. 512 slots (~96 KB per calling thread)
// hold the weights of a few hundred distinct GEMMs before they start to evict each other.
class MapCache {
 public:
  const CUtensorMap* find(const MapKey& key) const {
    const Slot& slot = slots_[index(key)];
    return slot.filled && slot.key == key ? &slot.map : nullptr;
  }
  void insert(const MapKey& key, const CUtensorMap& map) {
    Slot& slot = slots_[index(key)];
    slot.key = key;
    slot.map = map;
    slot.filled = true;
  }

 private:
  static constexpr std::size_t kSlots = 512;
  struct Slot {
    CUtensorMap map{};
    MapKey key;
    bool filled = false;
  };
  static std::size_t index(const MapKey& k) {
    // FNV-1a over the fields that differ between a call's operands and between layers.
    uint64_t h = 1469598103934665603ull;
    for (uint64_t v : {uint64_t(reinterpret_cast<uintptr_t>(k.ptr)), uint64_t(k.row_length),
                       uint64_t(k.rows), uint64_t(k.ld), uint64_t(k.box_inner),
                       uint64_t(k.box_outer), uint64_t(k.type), uint64_t(k.swizzle)})
      h = (h ^ v) * 1099511628211ull;
    return std::size_t(h ^ (h >> 29)) % kSlots;
  }
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
};

MapCache& map_cache() {
  thread_local MapCache cache;
  return cache;
}

// A row-major matrix of `rows` x `row_length` elements with rows `ld` elements apart, read in
// boxes of `box_inner` x `box_outer`.
CUtensorMap encode_2d(const char* operand, const void* ptr, DType t, int64_t row_length,
                      int64_t rows, int64_t ld, int box_inner, int box_outer, plan::Swizzle swizzle) {
  const MapKey key{ptr, row_length, rows, ld, box_inner, box_outer, t, swizzle};
  // A key is only cached after it passed the rules and the driver below.
  if (const CUtensorMap* cached = map_cache().find(key)) return *cached;

  plan::TmaDescription desc;
  desc.rank = 2;
  desc.global_address = reinterpret_cast<uint64_t>(ptr);
  desc.elem_bytes = dtype_bytes(t);
  const uint64_t row_bytes = uint64_t(ld) * uint64_t(dtype_bytes(t));
  desc.global_dims = {uint64_t(row_length), uint64_t(rows)};
  desc.global_strides = {row_bytes};
  desc.box_dims = {uint32_t(box_inner), uint32_t(box_outer)};
  desc.swizzle = swizzle;
  if (std::string why = plan::tma_violation(desc); !why.empty())
    throw InvalidArgument(fmt::format("{} tensor map", operand),
                          fmt::format("{} rows x {} elements, ld {}, box {} x {}", rows,
                                      row_length, ld, box_inner, box_outer),
                          why);

  CUtensorMap map{};
  const cuuint64_t dims[2] = {cuuint64_t(row_length), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(row_bytes)};
  const cuuint32_t box[2] = {cuuint32_t(box_inner), cuuint32_t(box_outer)};
  const cuuint32_t element_strides[2] = {1, 1};
  // L2 promotion of 256 B (DeepGEMM's choice): each TMA request brings whole 256-B lines.
  // Out-of-bounds elements are zero-filled, which is how K, M and N tails contribute nothing.
  const CUresult result = driver::api().cuTensorMapEncodeTiled(
      &map, tma_type(t), 2, const_cast<void*>(ptr), dims, strides, box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, driver_swizzle(swizzle), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  // The message is formatted only on failure: this runs for every operand of every call.
  if (result != CUDA_SUCCESS)
    driver::check(result, fmt::format("cuTensorMapEncodeTiled({})", operand).c_str());
  map_cache().insert(key, map);
  return map;
}

}  // namespace

std::string tma_pointer_incompatibility(const GemmProblem& p, const GemmOperands& o) {
  auto check = [](const char* name, const void* ptr) -> std::string {
    const auto address = reinterpret_cast<uint64_t>(ptr);
    if (address % 16 != 0)
      return fmt::format("{} = 0x{:x}: TMA needs a 16-byte aligned global address", name, address);
    return {};
  };
  for (auto msg : {check("a", o.a), check("b", o.b), check("d", o.d),
                   p.reads_c ? check("c", o.c) : std::string()})
    if (!msg.empty()) return msg;
  return {};
}

GemmTensorMaps make_gemm_tensor_maps(const GemmProblem& p, const KernelFields& f,
                                     const GemmOperands& o) {
  const GemmConfig& c = f.config;
  GemmTensorMaps maps;
  constexpr int kAtomElems16 = sm90::kSwizzleSpanBytes / 2;   // 64 bf16/fp16 per swizzled row
  if (f.load_path == LoadPath::tma) {
    const int atom = sm90::kSwizzleSpanBytes / dtype_bytes(p.a_type);
    // K-major: box {one 128-B row of K, all tile rows}; MN-major: 64-wide slabs of BLOCK_K rows.
    if (a_is_k_major(p.layout))
      maps.a = encode_2d("A", o.a, p.a_type, p.k, p.m, p.lda_or_packed(), atom, c.block_m,
                         plan::Swizzle::b128);
    else
      maps.a = encode_2d("A", o.a, p.a_type, p.m, p.k, p.lda_or_packed(), kAtomElems16, c.block_k,
                         plan::Swizzle::b128);
    if (b_is_k_major(p.layout))
      maps.b = encode_2d("B", o.b, p.b_type, p.k, p.n, p.ldb_or_packed(), atom, c.block_n,
                         plan::Swizzle::b128);
    else
      maps.b = encode_2d("B", o.b, p.b_type, p.n, p.k, p.ldb_or_packed(), kAtomElems16, c.block_k,
                         plan::Swizzle::b128);
  }
  if (f.store_path == StorePath::tma) {
    const int out_bytes = dtype_bytes(p.d_type);
    const int box_cols = sm90::d_box_cols(c.block_n, out_bytes);
    const auto swizzle = swizzle_for_span(sm90::d_swizzle_span_bytes(c.block_n, out_bytes));
    const int box_rows = c.block_m / c.num_consumers;
    maps.d = encode_2d("D", o.d, p.d_type, p.n, p.m, p.ldd_or_packed(), box_cols, box_rows, swizzle);
    maps.c = p.reads_c ? encode_2d("C", o.c, p.d_type, p.n, p.m, p.ldc_or_packed(), box_cols,
                                   box_rows, swizzle)
                       : maps.d;
  }
  return maps;
}

}  // namespace autogemm::runtime
