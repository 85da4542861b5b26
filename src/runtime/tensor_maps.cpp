#include "runtime/tensor_maps.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "autogemm/errors.hpp"
#include "cuda/driver.hpp"
#include "plan/tma_rules.hpp"

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

CUtensorMapSwizzle driver_swizzle(int swizzle_bytes) {
  switch (swizzle_bytes) {
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

// Everything that decides a 2-D map's 128 bytes; the other arguments encode_2d passes to the
// driver are constants. A map holds no handle or context, only these values, so two encodings
// of equal keys are the same bytes whatever happened to the memory in between.
struct MapKey {
  const void* ptr = nullptr;
  TensorMapSpec map;
  DType type = DType::bf16;
  bool operator==(const MapKey&) const = default;
};

// The maps this thread encoded last, direct-mapped by key. Encoding the four maps of a call
// cost 1.8-1.9 us of its ~7 us of host time on the H100 machine (GemmGpu.HostCostPerCall),
// and a decode loop encodes the same ones every call. Per thread, like the
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
    for (uint64_t v : {uint64_t(reinterpret_cast<uintptr_t>(k.ptr)), uint64_t(k.map.row_length),
                       uint64_t(k.map.rows), uint64_t(k.map.ld), uint64_t(k.map.box_inner),
                       uint64_t(k.map.box_outer), uint64_t(k.type),
                       uint64_t(k.map.swizzle_bytes)})
      h = (h ^ v) * 1099511628211ull;
    return std::size_t(h ^ (h >> 29)) % kSlots;
  }
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
};

MapCache& map_cache() {
  thread_local MapCache cache;
  return cache;
}

// One of the spec's maps over `ptr`. The spec's rules accepted its shape, strides and box, and
// the call's entry point the pointer, so the driver should accept it; if not, its error names
// the operand.
CUtensorMap encode_2d(const TensorMapSpec& m, const void* ptr, DType t) {
  const MapKey key{ptr, m, t};
  if (const CUtensorMap* cached = map_cache().find(key)) return *cached;
  CUtensorMap map{};
  const cuuint64_t dims[2] = {cuuint64_t(m.row_length), cuuint64_t(m.rows)};
  const cuuint64_t strides[1] = {cuuint64_t(m.ld) * cuuint64_t(dtype_bytes(t))};
  const cuuint32_t box[2] = {cuuint32_t(m.box_inner), cuuint32_t(m.box_outer)};
  const cuuint32_t element_strides[2] = {1, 1};
  // L2 promotion (plan::tma_l2_promotion_bytes): whole 256-B lines where rows are whole
  // 256-B units, 128 B otherwise. Out-of-bounds elements are zero-filled, which is how K, M
  // and N tails contribute nothing.
  const CUtensorMapL2promotion promotion =
      plan::tma_l2_promotion_bytes(reinterpret_cast<uintptr_t>(ptr), strides[0]) == 256
          ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
          : CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  const CUresult result = driver::api().cuTensorMapEncodeTiled(
      &map, tma_type(t), 2, const_cast<void*>(ptr), dims, strides, box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, driver_swizzle(m.swizzle_bytes), promotion,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  // The message is formatted only on failure: this runs for every operand of every call.
  if (result != CUDA_SUCCESS)
    driver::check(result, fmt::format("cuTensorMapEncodeTiled({})", m.operand).c_str());
  map_cache().insert(key, map);
  return map;
}

}  // namespace

GemmTensorMaps make_gemm_tensor_maps(const KernelLaunch& kernel, const GemmOperands& o) {
  const GemmProblem& p = kernel.problem;
  GemmTensorMaps maps;
  bool has_c = false;
  for (const TensorMapSpec& m : kernel.tensor_maps) {
    switch (m.operand) {
      case 'A': maps.a = encode_2d(m, o.a, p.a_type); break;
      case 'B': maps.b = encode_2d(m, o.b, p.b_type); break;
      case 'C':
        (m.tail ? maps.c_tail : maps.c) = encode_2d(m, o.c, p.d_type);
        has_c = true;
        break;
      default: (m.tail ? maps.d_tail : maps.d) = encode_2d(m, o.d, p.d_type); break;
    }
  }
  if (!has_c) {   // the kernel reads no C; its parameters repeat D's
    maps.c = maps.d;
    maps.c_tail = maps.d_tail;
  }
  return maps;
}

}  // namespace autogemm::runtime
