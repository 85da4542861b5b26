// cuBLASLt algorithms as attribute numbers and back (runtime/cublaslt_algo.hpp).
#include "runtime/cublaslt_algo.hpp"

#include <cstdint>

namespace autogemm::runtime {

namespace {

// Each attribute with the type cublasLt.h documents for it (int32_t, uint32_t or uint16_t):
// ConfigGet/SetAttribute check the size.
template <typename T>
int get(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  T value{};
  std::size_t written = 0;
  (void)cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value, &written);
  return int(value);
}

template <typename T>
cublasStatus_t set(cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attribute,
                   int value) {
  const T typed = T(value);
  return cublasLtMatmulAlgoConfigSetAttribute(algo, attribute, &typed, sizeof typed);
}

}  // namespace

VendorAlgo vendor_algo_of(const cublasLtMatmulAlgo_t& algo) {
  VendorAlgo v;
  v.algo_id = get<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID);
  v.tile_id = get<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
  v.stages_id = get<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  v.splitk_num = get<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  v.reduction_scheme = get<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  v.cta_swizzling = get<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  v.custom_option = get<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
  v.inner_shape_id = get<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID);
  v.cluster_shape_id = get<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  return v;
}

cublasStatus_t init_vendor_algo(cublasLtHandle_t handle, cudaDataType_t a_type,
                                cudaDataType_t b_type, cudaDataType_t d_type,
                                const VendorAlgo& v, cublasLtMatmulAlgo_t* out) {
  // Compute and scale types as every plan of cublaslt.cpp has them (COMPUTE_32F, 32F).
  cublasStatus_t status = cublasLtMatmulAlgoInit(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, a_type,
                                                 b_type, d_type, d_type, v.algo_id, out);
  const std::pair<cublasLtMatmulAlgoConfigAttributes_t, cublasStatus_t (*)(
                      cublasLtMatmulAlgo_t*, cublasLtMatmulAlgoConfigAttributes_t, int)>
      setters[] = {{CUBLASLT_ALGO_CONFIG_TILE_ID, set<uint32_t>},
                   {CUBLASLT_ALGO_CONFIG_STAGES_ID, set<uint32_t>},
                   {CUBLASLT_ALGO_CONFIG_SPLITK_NUM, set<int32_t>},
                   {CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, set<uint32_t>},
                   {CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, set<uint32_t>},
                   {CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, set<uint32_t>},
                   {CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, set<uint16_t>},
                   {CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, set<uint16_t>}};
  const int values[] = {v.tile_id,       v.stages_id,     v.splitk_num,
                        v.reduction_scheme, v.cta_swizzling, v.custom_option,
                        v.inner_shape_id, v.cluster_shape_id};
  for (std::size_t i = 0; i < std::size(setters) && status == CUBLAS_STATUS_SUCCESS; ++i)
    status = setters[i].second(out, setters[i].first, values[i]);
  return status;
}

}  // namespace autogemm::runtime
