// The grouped bench's baselines (grouped_baselines.hpp): the per-group cuBLASLt loop, its CUDA
// graph, and cublasGemmGroupedBatchedEx.
#include "bench/grouped_baselines.hpp"

#include <cublas_v2.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "autogemm/quantize.hpp"
#include "cuda/cuda_check.hpp"
#include "runtime/cublaslt.hpp"

namespace autogemm::bench {

namespace {

const void* at_row(const void* base, int64_t row, int64_t row_elements, DType t) {
  return static_cast<const char*>(base) + row * row_elements * dtype_bytes(t);
}

void* at_row(void* base, int64_t row, int64_t row_elements, DType t) {
  return static_cast<char*>(base) + row * row_elements * dtype_bytes(t);
}

int64_t round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// cuBLASLt's block-scaled FP8 needs M and N multiples of this (runtime/cublaslt.hpp).
constexpr int64_t kCublasLtBlockScaledMultiple = 4;

}  // namespace

// ---- (a) the cuBLASLt loop --------------------------------------------------------------------

std::vector<int64_t> cublaslt_loop_rows(const GroupedItem& item) {
  const GemmProblem& p = item.problem;
  std::vector<int64_t> rows;
  rows.reserve(item.group_rows.size());
  for (int64_t valid : item.group_rows) {
    if (!block_scaled_fp8(p) || valid == 0) {
      rows.push_back(valid);
      continue;
    }
    // The rows the layout stores for the group: its padded run, or max_m.
    const int64_t stored = p.grouping == Grouping::masked
                               ? p.m
                               : round_up(valid, kGroupedRowAlignment);
    rows.push_back(std::min(round_up(valid, kCublasLtBlockScaledMultiple), stored));
  }
  return rows;
}

CublasLtGroupLoop::CublasLtGroupLoop(const GroupedItem& item, const GroupedOperands& operands,
                                     cudaStream_t stream)
    : scales_in_cublaslt_layout_(block_scaled_fp8(item.problem)) {
  const GemmProblem& p = item.problem;
  const std::vector<int64_t> rows = cublaslt_loop_rows(item);
  const int64_t k_blocks = (p.k + kFp8ScaleGroup - 1) / kFp8ScaleGroup;
  const int64_t b_group_scales = fp8_scale_count_128x128(p.n, p.k);
  for (std::size_t g = 0; g < rows.size(); ++g) {
    if (rows[g] == 0) continue;   // nothing to compute (cuBLASLt refuses m = 0)
    const GemmProblem one = dense_problem(p, rows[g]);
    GemmOperands ops;
    ops.a = at_row(operands.a, item.row_starts[g], p.k, p.a_type);
    ops.b = at_row(operands.b, int64_t(g) * p.n, p.k, p.b_type);
    ops.d = at_row(operands.d, item.row_starts[g], p.n, p.d_type);
    if (scales_in_cublaslt_layout_) {
      const runtime::CublasLtBlockScaleSizes sizes = runtime::cublaslt_block_scale_sizes(one);
      DeviceBuffer scale_a(sizes.a_floats * sizeof(float)), scale_b(sizes.b_floats * sizeof(float));
      runtime::to_cublaslt_block_scales(one, operands.scale_a + item.row_starts[g] * k_blocks,
                                        operands.scale_b + int64_t(g) * b_group_scales,
                                        static_cast<float*>(scale_a.get()),
                                        static_cast<float*>(scale_b.get()), stream);
      ops.scale_a = static_cast<const float*>(scale_a.get());
      ops.scale_b = static_cast<const float*>(scale_b.get());
      cublaslt_scales_.push_back(std::move(scale_a));
      cublaslt_scales_.push_back(std::move(scale_b));
    }
    problems_.push_back(one);
    operands_.push_back(ops);
  }
}

void CublasLtGroupLoop::operator()(cudaStream_t stream) const {
  runtime::CublasLtOptions options;
  options.scales_in_cublaslt_layout = scales_in_cublaslt_layout_;
  for (std::size_t i = 0; i < problems_.size(); ++i)
    runtime::cublaslt_gemm(problems_[i], operands_[i], stream, options);
}

// ---- the loop's CUDA graph ----------------------------------------------------------------------

CapturedWork::CapturedWork(const std::function<void(cudaStream_t)>& work, cudaStream_t stream) {
  cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCapture(baseline loop)");
  try {
    work(stream);
  } catch (...) {
    // End the capture whatever happened, or the stream stays in capture mode for good.
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(stream, &partial);
    if (partial != nullptr) (void)cudaGraphDestroy(partial);
    (void)cudaGetLastError();
    throw;
  }
  cuda_check(cudaStreamEndCapture(stream, &graph_), "cudaStreamEndCapture(baseline loop)");
  const cudaError_t status = cudaGraphInstantiate(&exec_, graph_, 0);
  if (status != cudaSuccess) {
    (void)cudaGraphDestroy(graph_);
    graph_ = nullptr;
    cuda_check(status, "cudaGraphInstantiate(baseline loop)");
  }
}

CapturedWork::~CapturedWork() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
}

void CapturedWork::launch(cudaStream_t stream) const {
  cuda_check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch(baseline loop)");
}

// ---- (b) cublasGemmGroupedBatchedEx -----------------------------------------------------------

namespace {

// cublasGemmGroupedBatchedEx arrived in cuBLAS 12.5 (CUDA 12.5 release notes); autogemm builds
// with CUDA 12.4 too.
constexpr int kFirstGroupedBatchedVersion = 120500;

cudaDataType_t cublas_type(DType t) {
  switch (t) {
    case DType::bf16: return CUDA_R_16BF;
    case DType::fp16: return CUDA_R_16F;
    case DType::fp32: return CUDA_R_32F;
    default: break;
  }
  throw InvalidArgument("dtype", std::string(to_string(t)),
                        "the grouped-batched baseline takes bf16, fp16 or fp32");
}

std::string cublas_version_text() {
  int major = 0, minor = 0, patch = 0;
  (void)cublasGetProperty(MAJOR_VERSION, &major);
  (void)cublasGetProperty(MINOR_VERSION, &minor);
  (void)cublasGetProperty(PATCH_LEVEL, &patch);
  return fmt::format("cuBLAS {}.{}.{}", major, minor, patch);
}

}  // namespace

std::string grouped_batched_unavailable(const GemmProblem& problem) {
  if (!block_scaled_fp8(problem)) return {};
  return "cublasGemmGroupedBatchedEx takes no block-scaled FP8 (it has no scale arguments; its "
         "documented types with CUBLAS_COMPUTE_32F are bf16 -> bf16, fp16 -> fp16 and fp32 -> "
         "fp32)";
}

struct CublasGroupedBatched::Arrays {
  cublasHandle_t handle = nullptr;
  int groups = 0;
  cudaDataType_t in = CUDA_R_16BF, out = CUDA_R_16BF;
  std::string types;   // "bf16 -> bf16", for messages
  // Host arrays, one entry per cuBLAS group (= one group of ours).
  std::vector<cublasOperation_t> trans_a, trans_b;
  std::vector<int> m, n, k, lda, ldb, ldc, group_size;
  std::vector<float> alpha, beta;
  // Device arrays of device pointers: A (our B_g), B (our A_g), C (our D_g), in that order.
  DeviceBuffer pointers;

  ~Arrays() {
    if (handle != nullptr) (void)cublasDestroy(handle);
  }
};

CublasGroupedBatched::CublasGroupedBatched(const GroupedItem& item, const void* a, const void* b,
                                           void* d)
    : arrays_(std::make_unique<Arrays>()) {
  const GemmProblem& p = item.problem;
  Arrays& x = *arrays_;
  x.types = fmt::format("{} -> {}", to_string(p.a_type), to_string(p.d_type));
  if (CUBLAS_VERSION < kFirstGroupedBatchedVersion)
    throw CublasGroupedDeclined(fmt::format("{} has no cublasGemmGroupedBatchedEx (it arrived "
                                            "in cuBLAS 12.5)",
                                            cublas_version_text()));
  x.in = cublas_type(p.a_type);
  x.out = cublas_type(p.d_type);
  std::vector<const void*> host_pointers;
  std::vector<const void*> our_a, our_d;
  for (std::size_t g = 0; g < item.group_rows.size(); ++g) {
    if (item.group_rows[g] == 0) continue;
    x.trans_a.push_back(CUBLAS_OP_T);   // our B_g, stored N x K row-major = K x N column-major
    x.trans_b.push_back(CUBLAS_OP_N);   // our A_g, stored M_g x K row-major = K x M_g
    x.m.push_back(int(p.n));
    x.n.push_back(int(item.group_rows[g]));
    x.k.push_back(int(p.k));
    x.lda.push_back(int(p.k));
    x.ldb.push_back(int(p.k));
    x.ldc.push_back(int(p.n));
    x.group_size.push_back(1);
    x.alpha.push_back(1.0f);
    x.beta.push_back(0.0f);
    host_pointers.push_back(at_row(b, int64_t(g) * p.n, p.k, p.b_type));
    our_a.push_back(at_row(a, item.row_starts[g], p.k, p.a_type));
    our_d.push_back(at_row(d, item.row_starts[g], p.n, p.d_type));
  }
  x.groups = int(x.m.size());
  host_pointers.insert(host_pointers.end(), our_a.begin(), our_a.end());
  host_pointers.insert(host_pointers.end(), our_d.begin(), our_d.end());
  x.pointers = DeviceBuffer(host_pointers.size() * sizeof(void*));
  cuda_check(cudaMemcpy(x.pointers.get(), host_pointers.data(), x.pointers.bytes(),
                        cudaMemcpyHostToDevice),
             "cudaMemcpy(cublasGemmGroupedBatchedEx pointer arrays)");
  cuda_check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize(pointer arrays)");
  const cublasStatus_t status = cublasCreate(&x.handle);
  if (status != CUBLAS_STATUS_SUCCESS)
    throw CudaError(fmt::format("cublasCreate: {}: {}", cublasGetStatusName(status),
                                cublasGetStatusString(status)));
}

CublasGroupedBatched::~CublasGroupedBatched() = default;

void CublasGroupedBatched::operator()(cudaStream_t stream) const {
  const Arrays& x = *arrays_;
  cublasStatus_t status = cublasSetStream(x.handle, stream);
#if CUBLAS_VERSION >= 120500
  if (status == CUBLAS_STATUS_SUCCESS) {
    const auto* pointers = static_cast<const void* const*>(x.pointers.get());
    status = cublasGemmGroupedBatchedEx(
        x.handle, x.trans_a.data(), x.trans_b.data(), x.m.data(), x.n.data(), x.k.data(),
        x.alpha.data(), pointers, x.in, x.lda.data(), pointers + x.groups, x.in, x.ldb.data(),
        x.beta.data(), const_cast<void* const*>(pointers + 2 * x.groups), x.out, x.ldc.data(),
        x.groups, x.group_size.data(), CUBLAS_COMPUTE_32F);
  }
#else
  // No such function in this cuBLAS (the constructor already said so).
  if (status == CUBLAS_STATUS_SUCCESS) status = CUBLAS_STATUS_NOT_SUPPORTED;
#endif
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const std::string what = fmt::format(
      "cublasGemmGroupedBatchedEx({}, CUBLAS_COMPUTE_32F, {} groups): {}: {} ({})", x.types,
      x.groups, cublasGetStatusName(status), cublasGetStatusString(status),
      cublas_version_text());
  if (status == CUBLAS_STATUS_NOT_SUPPORTED)
    throw CublasGroupedDeclined(what + "; its documented types with CUBLAS_COMPUTE_32F are "
                                       "bf16 -> bf16, fp16 -> fp16 and fp32 -> fp32");
  throw CudaError(what);
}

}  // namespace autogemm::bench
