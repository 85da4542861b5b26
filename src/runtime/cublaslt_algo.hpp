#pragma once
// A cuBLASLt algorithm <-> its identifying attributes (VendorAlgo, include/autogemm/kernel_spec.hpp):
// what autotuning keeps of a cuBLASLt winner and how another process rebuilds it.
#include <cublasLt.h>

#include "autogemm/kernel_spec.hpp"

namespace autogemm::runtime {

// The attributes of an algorithm the heuristic returned (cublasLtMatmulAlgoConfigGetAttribute).
VendorAlgo vendor_algo_of(const cublasLtMatmulAlgo_t& algo);

// `algo` rebuilt for the types: cublasLtMatmulAlgoInit with its id, then every attribute set
// (cublasLtMatmulAlgoConfigSetAttribute). The first failing status, or success. Whether it runs
// for a given call is cublasLtMatmulAlgoCheck's to say (cublaslt.cpp).
cublasStatus_t init_vendor_algo(cublasLtHandle_t handle, cudaDataType_t a_type,
                                cudaDataType_t b_type, cudaDataType_t d_type,
                                const VendorAlgo& algo, cublasLtMatmulAlgo_t* out);

}  // namespace autogemm::runtime
