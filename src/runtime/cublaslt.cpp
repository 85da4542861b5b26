// The cuBLASLt path: our row-major problem mapped onto column-major cuBLASLt
// (/work/shared/docs/baselines.md): D^T[N,M] = op(B)^T[N,K] . op(A)^T[K,M], so cuBLAS "A" is
// our B, cuBLAS "B" is our A, and cuBLAS m, n = our N, M. One handle, one 64 MiB workspace and
// one cache of descriptors + heuristic result per device; calls never allocate on the hot path.
#include "runtime/cublaslt.hpp"

#include <cublasLt.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "autogemm/errors.hpp"
#include "jit/log.hpp"
#include "cuda/cuda_check.hpp"
#include "runtime/cublaslt_algo.hpp"

namespace autogemm::runtime {

namespace {

constexpr std::size_t kWorkspaceBytes = kCublasLtWorkspaceBytes;
// How many of the heuristic's algorithms autotuning times: its first is the baseline, and
// further ones win on some shapes by a few percent (a different tile or split-K). They cost no
// compilation, only a few launches each on the first call.
constexpr int kTuningAlgorithms = 8;
constexpr int64_t kScaleBlock = 128;  // FP8 block scaling granularity
// cuBLASLt assumes 256-byte aligned pointers unless told otherwise (CUBLASLT_MATMUL_PREF_MIN_
// ALIGNMENT_*_BYTES, default 256); we tell it the real alignment so odd offsets still run.
constexpr int kMaxAlignment = 256;
// cuBLAS docs, "128-element 1D and 128x128 2D block scaling for FP8 data types", "Scaling
// factors layouts": scale tensors start on 16-byte boundaries, and M and N (cuBLAS's, i.e. our
// N and M) are multiples of 4. The modes exist since cuBLAS 12.9 (CUDA 12.9.0), on sm_90 only.
constexpr int kScaleAlignmentBytes = 16;
constexpr int64_t kBlockScaledDimMultiple = 4;
constexpr std::size_t kFirstBlockScalingVersion = 120900;  // CUBLAS_VERSION of cuBLAS 12.9.0

// Throws "<call>(<detail>): <status name>: <status string>": CublasLtUnsupported for a status
// that declines the request, else CudaError. The message is built only on failure: these checks
// sit on the per-call path.
void check_lt(cublasStatus_t status, std::string_view call, std::string_view detail = {}) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string message = fmt::format("{}{}{}{}: {}: {}", call, detail.empty() ? "" : "(", detail,
                                    detail.empty() ? "" : ")", cublasLtGetStatusName(status),
                                    cublasLtGetStatusString(status));
  if (cublaslt_status_is_refusal(status)) throw CublasLtUnsupported(message);
  throw CudaError(message);
}

bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

cudaDataType_t cuda_type(DType t, const char* argument) {
  switch (t) {
    case DType::bf16: return CUDA_R_16BF;
    case DType::fp16: return CUDA_R_16F;
    case DType::fp32: return CUDA_R_32F;
    case DType::e4m3: return CUDA_R_8F_E4M3;
    case DType::e5m2: return CUDA_R_8F_E5M2;
    default: break;
  }
  throw InvalidArgument(argument, std::string(to_string(t)),
                        "the cuBLASLt path takes bf16, fp16, fp32, e4m3 and e5m2");
}

// The alignment every row of a matrix starts on: the base pointer's, and that of the row
// stride (ld elements of `element_bytes`). The heuristic trusts the preference for every row:
// D at a 4-byte aligned pointer but with ld = 12163 bf16 got an algorithm that faulted with
// cudaErrorMisalignedAddress (found by autogemm fuzz, H200).
int alignment_of(const void* p, int64_t ld = 0, int element_bytes = 1) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const auto stride = static_cast<std::uintptr_t>(ld) * static_cast<std::uintptr_t>(element_bytes);
  int alignment = kMaxAlignment;
  while (alignment > 1 && (address % alignment != 0 || stride % alignment != 0)) alignment /= 2;
  return alignment;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// ---- RAII for cuBLASLt descriptors ---------------------------------------------------------

struct DescDeleter {
  void operator()(cublasLtMatmulDesc_t d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayout_t l) const { cublasLtMatrixLayoutDestroy(l); }
  void operator()(cublasLtMatmulPreference_t p) const { cublasLtMatmulPreferenceDestroy(p); }
  void operator()(cublasLtMatrixTransformDesc_t t) const { cublasLtMatrixTransformDescDestroy(t); }
};
template <typename Handle>
using Owned = std::unique_ptr<std::remove_pointer_t<Handle>, DescDeleter>;

Owned<cublasLtMatrixLayout_t> make_layout(cudaDataType_t type, int64_t rows, int64_t cols,
                                          int64_t ld, const char* which) {
  cublasLtMatrixLayout_t layout = nullptr;
  const cublasStatus_t status =
      cublasLtMatrixLayoutCreate(&layout, type, uint64_t(rows), uint64_t(cols), ld);
  if (status != CUBLAS_STATUS_SUCCESS)
    check_lt(status, "cublasLtMatrixLayoutCreate",
             fmt::format("{} {}x{} ld {}", which, rows, cols, ld));
  return Owned<cublasLtMatrixLayout_t>(layout);
}

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value,
              const char* name) {
  check_lt(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value),
           "cublasLtMatmulDescSetAttribute", name);
}

// ---- fused epilogues ------------------------------------------------------------------------

// cuBLASLt's fused epilogues (cublasLt.h, cublasLtEpilogue_t) as ours: a bias over cuBLAS's
// rows (our columns: bias[n]), ReLU and GELU in its tanh form, each alone or after the bias.
// It has no SiLU, no erf GELU and no per-row or per-column scales for 16-bit inputs; -1 for those.
int cublaslt_epilogue_of(const Epilogue& e) {
  if (e.row_scale || e.col_scale || e.gated) return -1;
  const bool bias = e.bias.has_value();
  switch (e.activation) {
    case Activation::none: return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case Activation::relu: return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case Activation::gelu_tanh: return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    case Activation::gelu_erf:
    case Activation::silu: return -1;
  }
  return -1;
}

// ---- the cache -----------------------------------------------------------------------------

enum class ScaleMode { none, per_tensor, block };

// Everything that determines descriptors and the heuristic's choice.
struct PlanKey {
  int64_t m, n, k, lda, ldb, ldc, ldd;
  DType a_type, b_type, d_type;
  Layout layout;
  ScaleMode scale_mode;
  bool uses_c;
  int align_a, align_b, align_c, align_d;
  // The fused epilogue cuBLASLt runs (cublasLtEpilogue_t; CUBLASLT_EPILOGUE_DEFAULT: none) and
  // its bias's element type (D's when there is no bias).
  int epilogue;
  DType bias_type;
  friend bool operator<(const PlanKey& x, const PlanKey& y) {
    auto tie = [](const PlanKey& p) {
      return std::tie(p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.ldd, p.a_type, p.b_type, p.d_type,
                      p.layout, p.scale_mode, p.uses_c, p.align_a, p.align_b, p.align_c,
                      p.align_d, p.epilogue, p.bias_type);
    };
    return tie(x) < tie(y);
  }
};

struct CachedMatmul {
  Owned<cublasLtMatmulDesc_t> desc;
  Owned<cublasLtMatrixLayout_t> lt_a, lt_b, lt_c, lt_d;  // cuBLAS names: lt_a describes our B
  Owned<cublasLtMatmulPreference_t> pref;
  cudaDataType_t type_a{}, type_b{}, type_d{};            // cuBLAS's A, B and D (= C)
  cublasLtMatmulAlgo_t algo{};                            // the heuristic's first
  // Autotuning's: the heuristic's first algorithms (queried once, on the first ask), and each
  // algorithm a caller asked to run, rebuilt, or nullopt where cublasLtMatmulAlgoCheck refused it.
  std::optional<std::vector<VendorAlgo>> tuning_algos;
  std::vector<std::pair<VendorAlgo, std::optional<cublasLtMatmulAlgo_t>>> rebuilt;
};

struct DeviceState {
  std::mutex mutex;  // guards everything below; held while a call is enqueued
  int device = -1;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  // The workspace is shared by every stream: each call waits (in stream order, no host
  // synchronisation) for the previous call to finish with it. Always, not only when the stream
  // differs from the last one: a destroyed stream's handle can come back for a new stream while
  // the old one's work still runs. On the same stream the wait is already satisfied.
  cudaEvent_t workspace_free = nullptr;
  bool workspace_used = false;
  std::map<PlanKey, std::unique_ptr<CachedMatmul>> plans;
  Owned<cublasLtMatrixTransformDesc_t> transpose;  // for scale relayout
};

DeviceState& device_state() {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  // Never destroyed: at exit the driver may already be gone (same reason as module.cpp).
  static std::mutex* const registry_mutex = new std::mutex;
  static auto* const registry = new std::map<int, std::unique_ptr<DeviceState>>;
  std::lock_guard lock(*registry_mutex);
  auto& slot = (*registry)[device];
  if (!slot) {
    auto state = std::make_unique<DeviceState>();
    state->device = device;
    check_lt(cublasLtCreate(&state->handle), "cublasLtCreate");
    cuda_check(cudaMalloc(&state->workspace, kWorkspaceBytes), "cudaMalloc(cuBLASLt workspace, 64 MiB)");
    cuda_check(cudaEventCreateWithFlags(&state->workspace_free, cudaEventDisableTiming),
               "cudaEventCreateWithFlags(cuBLASLt workspace)");
    slot = std::move(state);
  }
  return *slot;
}

ScaleMode scale_mode_of(const GemmProblem& p, bool per_tensor_fp8) {
  if (!is_fp8(p.a_type)) return ScaleMode::none;
  if (per_tensor_fp8 || p.scaling == Scaling::per_tensor) return ScaleMode::per_tensor;
  return ScaleMode::block;
}

std::string describe(const PlanKey& key) {
  return fmt::format("M={} N={} K={} {}x{}->{} layout {} lda={} ldb={} ldd={}{}{}{}", key.m, key.n,
                     key.k, to_string(key.a_type), to_string(key.b_type), to_string(key.d_type),
                     to_string(key.layout), key.lda, key.ldb, key.ldd,
                     key.uses_c ? fmt::format(" ldc={}", key.ldc) : std::string(),
                     key.scale_mode == ScaleMode::block        ? " block-scaled FP8"
                     : key.scale_mode == ScaleMode::per_tensor ? " per-tensor FP8"
                                                               : "",
                     key.epilogue == CUBLASLT_EPILOGUE_DEFAULT
                         ? std::string()
                         : fmt::format(" epilogue {} (bias {})", key.epilogue,
                                       to_string(key.bias_type)));
}

// cuBLASLt's own explanation of a failed heuristic query: the query repeated with its error log
// (level 1) captured. Empty when the user already routes the log (CUBLASLT_LOG_LEVEL or
// CUBLASLT_LOG_MASK set: we must not take it over) or when cuBLASLt logged nothing. The logger
// is process-wide, hence the lock; this runs only on the failure path.
std::mutex& logger_mutex() {
  static std::mutex* const mutex = new std::mutex;
  return *mutex;
}
std::string& captured_log() {
  static std::string* const text = new std::string;
  return *text;
}
void capture_log(int /*level*/, const char* function_name, const char* message) {
  std::string& text = captured_log();
  if (text.size() > 2000) return;  // enough to explain; a flood would bury the error
  text += fmt::format("{}[{}] {}", text.empty() ? "" : "; ", function_name ? function_name : "",
                      message ? message : "");
}
template <typename Query>
std::string cublaslt_error_log(Query query) {
  if (std::getenv("CUBLASLT_LOG_LEVEL") != nullptr || std::getenv("CUBLASLT_LOG_MASK") != nullptr)
    return {};
  std::lock_guard lock(logger_mutex());
  captured_log().clear();
  if (cublasLtLoggerSetCallback(capture_log) != CUBLAS_STATUS_SUCCESS) return {};
  (void)cublasLtLoggerSetLevel(1);
  query();
  (void)cublasLtLoggerSetLevel(0);
  (void)cublasLtLoggerSetCallback(nullptr);
  std::string text = std::move(captured_log());
  captured_log().clear();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string library_version_text() {
  const std::size_t v = cublasLtGetVersion();
  return fmt::format("cuBLASLt {}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

// The reduction schemes cuBLASLt may use for split-K: NONE (no split) and COMPUTE_TYPE (FP32
// parts in the workspace) always; INPLACE and OUTPUT_TYPE (parts kept in D's type) only when D
// is FP32, where they lose nothing. build_plan says why.
uint32_t reduction_schemes(DType d_type) {
  if (d_type == DType::fp32) return uint32_t(CUBLASLT_REDUCTION_SCHEME_MASK);
  return uint32_t(CUBLASLT_REDUCTION_SCHEME_NONE) |
         uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
}

// "split-K 2, reduction compute_type" for the debug log: the numbers behind a result that
// differs from the reference.
std::string describe_split(const cublasLtMatmulAlgo_t& algo) {
  int32_t splits = 1;  // the attribute types cublasLt.h gives: int32_t and uint32_t
  uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_NONE;
  std::size_t written = 0;
  (void)cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                             sizeof splits, &written);
  (void)cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                             &scheme, sizeof scheme, &written);
  const char* name = scheme == CUBLASLT_REDUCTION_SCHEME_INPLACE        ? "inplace"
                     : scheme == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE ? "compute_type"
                     : scheme == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE  ? "output_type"
                                                                        : "none";
  return fmt::format("split-K {}, reduction {}", splits, name);
}

// `placeholder_scales`: any 16-byte-aligned device address. cuBLASLt's heuristic rejects a
// VEC128/BLK128x128 scale mode whose scale pointer is not set yet ("The scaling mode for A scale
// ... requires a custom pointer for A scale", CUBLAS_STATUS_INVALID_VALUE = 7) although it never
// reads it; the real pointers replace it on every call.
std::unique_ptr<CachedMatmul> build_plan(const PlanKey& key, cublasLtHandle_t handle,
                                         const void* placeholder_scales) {
  auto plan = std::make_unique<CachedMatmul>();
  cublasLtMatmulDesc_t desc = nullptr;
  check_lt(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
           "cublasLtMatmulDescCreate(COMPUTE_32F, scale 32F)");
  plan->desc.reset(desc);

  // cuBLAS "A" = our B. op(B)^T must be N x K. B stored N x K row-major ('t', K-major) is a
  // column-major K x N matrix: transpose it. B stored K x N row-major ('n') is column-major
  // N x K already.
  const bool b_k_major = b_is_k_major(key.layout);
  const cublasOperation_t trans_a = b_k_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  // cuBLAS "B" = our A. op(A)^T must be K x M. A stored M x K row-major ('n', K-major) is
  // column-major K x M already; A stored K x M row-major ('t') is column-major M x K.
  const bool a_k_major = a_is_k_major(key.layout);
  const cublasOperation_t trans_b = a_k_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, trans_a, "TRANSA");
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, trans_b, "TRANSB");
  if (key.scale_mode == ScaleMode::block) {
    // After the swap cuBLAS "A" is our B (128 x 128 blocks), cuBLAS "B" our A (1 x 128).
    const int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    const int32_t b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    set_desc(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_mode, "A_SCALE_MODE");
    set_desc(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_mode, "B_SCALE_MODE");
  }
  if (key.scale_mode != ScaleMode::none) {
    // The call sets the real pointers (under the device lock in cublaslt_gemm); the heuristic
    // only needs them present (see placeholder_scales above).
    set_desc(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, placeholder_scales, "A_SCALE_POINTER");
    set_desc(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, placeholder_scales, "B_SCALE_POINTER");
    // Fast accumulation off (the default, stated here on purpose): Hopper's FP8 tensor cores
    // accumulate with about 14 bits of mantissa (DeepSeek-V3 report; hopper-facts.md 2.2), and
    // with FAST_ACCUM = 0 cuBLASLt promotes partial sums into FP32 periodically, as DeepGEMM
    // does. That is the accuracy our own kernel targets, so the baseline pays the same price;
    // block scaling needs the promotion anyway (PyTorch refuses fast accumulation with it).
    const int8_t fast_accumulation = 0;
    set_desc(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accumulation, "FAST_ACCUM");
  }

  if (key.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    const auto epilogue = static_cast<cublasLtEpilogue_t>(key.epilogue);
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "EPILOGUE");
    const int32_t bias_type = cuda_type(key.bias_type, "epilogue.bias");
    set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type, "BIAS_DATA_TYPE");
    // The call sets the caller's vector (as the scales above); the heuristic sees one present.
    set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, placeholder_scales, "BIAS_POINTER");
  }

  const cudaDataType_t in_a = cuda_type(key.b_type, "b_type");
  const cudaDataType_t in_b = cuda_type(key.a_type, "a_type");
  const cudaDataType_t out = cuda_type(key.d_type, "d_type");
  plan->lt_a = b_k_major ? make_layout(in_a, key.k, key.n, key.ldb, "A (our B)")
                         : make_layout(in_a, key.n, key.k, key.ldb, "A (our B)");
  plan->lt_b = a_k_major ? make_layout(in_b, key.k, key.m, key.lda, "B (our A)")
                         : make_layout(in_b, key.m, key.k, key.lda, "B (our A)");
  // D row-major M x N = column-major N x M.
  plan->lt_d = make_layout(out, key.n, key.m, key.ldd, "D");
  plan->lt_c = make_layout(out, key.n, key.m, key.uses_c ? key.ldc : key.ldd, "C");

  plan->type_a = in_a;
  plan->type_b = in_b;
  plan->type_d = out;
  cublasLtMatmulPreference_t raw_pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&raw_pref), "cublasLtMatmulPreferenceCreate");
  plan->pref.reset(raw_pref);
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attribute, auto value,
                      const char* name) {
    check_lt(cublasLtMatmulPreferenceSetAttribute(raw_pref, attribute, &value, sizeof value),
             "cublasLtMatmulPreferenceSetAttribute", name);
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(kWorkspaceBytes), "MAX_WORKSPACE_BYTES");
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32_t(key.align_b), "MIN_ALIGNMENT_A_BYTES");
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, uint32_t(key.align_a), "MIN_ALIGNMENT_B_BYTES");
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, uint32_t(key.align_c), "MIN_ALIGNMENT_C_BYTES");
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, uint32_t(key.align_d), "MIN_ALIGNMENT_D_BYTES");
  // Split-K partial sums stay in FP32 (the problem's accumulator). The default mask allows every
  // reduction scheme (cublasLt.h, cublasLtReductionScheme_t), and two of them keep the parts in
  // D's type: INPLACE adds them up in D, OUTPUT_TYPE stores them in the workspace as D. With a
  // bf16 D every partial sum is rounded to 8 significant bits, an error of up to 2^-8 of the
  // *partial* sum (0.03 for parts between 8 and 16, their size at K = 1640 with inputs in
  // [-1, 1]): far beyond one rounding of the result where the sum cancels, and the size of the
  // fallback's disagreement with the float64 reference (12-47 of 512 sampled entries off, e.g.
  // 0.324 against 0.383 at 1969 x 664 x 1640 tt; none with FP32 parts). Our split-K sums FP32
  // parts (split_k.cpp); the baseline keeps that accuracy, as with FAST_ACCUM above.
  set_pref(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reduction_schemes(key.d_type),
           "REDUCTION_SCHEME_MASK");

  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  auto query = [&] {
    return cublasLtMatmulAlgoGetHeuristic(handle, desc, plan->lt_a.get(), plan->lt_b.get(),
                                          plan->lt_c.get(), plan->lt_d.get(), raw_pref, 1,
                                          &result, &returned);
  };
  const cublasStatus_t status = query();
  if (status != CUBLAS_STATUS_SUCCESS || returned == 0) {
    const std::string why = cublaslt_error_log(query);
    std::string message = fmt::format(
        "cublasLtMatmulAlgoGetHeuristic: cuBLASLt has no algorithm for {} ({}{}; {}){}",
        describe(key),
        status == CUBLAS_STATUS_SUCCESS ? "0 results" : cublasLtGetStatusName(status),
        status == CUBLAS_STATUS_SUCCESS ? "" : std::string(": ") + cublasLtGetStatusString(status),
        library_version_text(), why.empty() ? "" : ": cuBLASLt says: " + why);
    // NOT_SUPPORTED or no result: the library declines the problem. Another status (an invalid
    // value in our descriptors, no memory) is a failure of the call.
    if (cublaslt_heuristic_declined(status, returned)) throw CublasLtUnsupported(message);
    throw CudaError(message);
  }
  plan->algo = result.algo;
  if (log_level() >= 4)
    log(4, "cuBLASLt plan for {}: workspace {} B, waves {:.2f}, {}", describe(key),
        result.workspaceSize, result.wavesCount, describe_split(result.algo));
  return plan;
}

PlanKey make_key(const GemmProblem& problem, const GemmOperands& operands, ScaleMode mode) {
  const bool uses_c = operands.beta != 0.0f;
  const void* c = uses_c ? operands.c : operands.d;  // not read when beta == 0
  PlanKey key{};
  key.m = problem.m;
  key.n = problem.n;
  key.k = problem.k;
  key.lda = problem.lda_or_packed();
  key.ldb = problem.ldb_or_packed();
  key.ldc = uses_c ? problem.ldc_or_packed() : 0;
  key.ldd = problem.ldd_or_packed();
  key.a_type = problem.a_type;
  key.b_type = problem.b_type;
  key.d_type = problem.d_type;
  key.layout = problem.layout;
  key.scale_mode = mode;
  key.uses_c = uses_c;
  key.align_a = alignment_of(operands.a, key.lda, dtype_bytes(problem.a_type));
  key.align_b = alignment_of(operands.b, key.ldb, dtype_bytes(problem.b_type));
  key.align_c = alignment_of(c, key.ldc, dtype_bytes(problem.d_type));
  key.align_d = alignment_of(operands.d, key.ldd, dtype_bytes(problem.d_type));
  key.epilogue = cublaslt_epilogue_of(problem.epilogue);
  key.bias_type = problem.epilogue.bias.value_or(problem.d_type);

  return key;
}

// The device's plan for the key, built on first use (lock held).
CachedMatmul& cached_plan(DeviceState& state, const PlanKey& key) {
  auto it = state.plans.find(key);
  if (it == state.plans.end())
    it = state.plans.emplace(key, build_plan(key, state.handle, state.workspace)).first;
  return *it->second;
}

// `wanted` rebuilt for the plan and checked (cublasLtMatmulAlgoCheck: this library, device and
// call take it, within the workspace), once per plan; null, logged once, where it does not
// check out: the caller runs the heuristic's first instead (lock held).
const cublasLtMatmulAlgo_t* rebuilt_algo(DeviceState& state, CachedMatmul& plan,
                                         const PlanKey& key, const VendorAlgo& wanted) {
  for (auto& [algo, built] : plan.rebuilt)
    if (algo == wanted) return built ? &*built : nullptr;
  cublasLtMatmulAlgo_t algo{};
  cublasStatus_t status =
      init_vendor_algo(state.handle, plan.type_a, plan.type_b, plan.type_d, wanted, &algo);
  cublasLtMatmulHeuristicResult_t result{};
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoCheck(state.handle, plan.desc.get(), plan.lt_a.get(),
                                     plan.lt_b.get(), plan.lt_c.get(), plan.lt_d.get(), &algo,
                                     &result);
  const bool fits = status == CUBLAS_STATUS_SUCCESS && result.workspaceSize <= kWorkspaceBytes;
  if (!fits)
    log(2, "cuBLASLt algorithm {} does not check out for {} ({}; {}): running the heuristic's "
        "first instead", describe(wanted), describe(key),
        status == CUBLAS_STATUS_SUCCESS
            ? fmt::format("needs {} B of workspace, {} B here", result.workspaceSize,
                          kWorkspaceBytes)
            : std::string(cublasLtGetStatusName(status)),
        library_version_text());
  plan.rebuilt.emplace_back(wanted, fits ? std::optional(algo) : std::nullopt);
  return fits ? &*plan.rebuilt.back().second : nullptr;
}

const float* require(const float* p, const char* name, const char* why) {
  if (p == nullptr) throw InvalidArgument(name, "null", why);
  return p;
}

// The documented limits of cuBLASLt's FP8 path on Hopper, checked before the heuristic so the
// refusal names the rule instead of a bare CUBLAS_STATUS_*.
// cuBLAS docs, cublasLtMatmul(): FP8 also needs "TN" (A transposed, B not) on sm_89/sm_90/sm_12x;
// after our swap (file comment) that is our nt, which validate() already demands of FP8.
void check_fp8_support(const GemmProblem& problem, ScaleMode mode) {
  if (mode != ScaleMode::block) return;
  // Per-tensor mode (its own scales) is the only cuBLASLt form of a 1x128-on-both problem.
  if (problem.scaling == Scaling::block_1x128_1x128)
    throw CublasLtLimit("scaling", "block_1x128_1x128",
                        "cuBLASLt on Hopper has no FP8 scales per row per 128 of K for B");
  if (const std::string why = cublaslt_block_scaling_unavailable(); !why.empty())
    throw CublasLtUnsupported(why);
  for (auto [name, value] : {std::pair{"m", problem.m}, std::pair{"n", problem.n}})
    if (value % kBlockScaledDimMultiple != 0)
      throw CublasLtLimit(name, std::to_string(value),
                          "cuBLASLt block-scaled FP8 needs M and N multiples of 4 (cuBLAS docs, "
                          "\"128-element 1D and 128x128 2D block scaling\", scaling factors "
                          "layouts)");
}

void check_operands(const GemmProblem& problem, const GemmOperands& operands, ScaleMode mode) {
  if (problem.d_type == DType::e4m3)
    throw CublasLtLimit("d_type", "e4m3",
                        "cuBLASLt on Hopper writes FP8 with one per-tensor scale, not one per "
                        "row per 128 columns");
  if (problem.weight_format)
    throw CublasLtLimit("weight_format", std::string(to_string(*problem.weight_format)),
                        "cuBLASLt reads B as bf16, fp16 or fp8, not packed weight-only formats");
  if (problem.scaling == Scaling::rowwise)
    throw CublasLtLimit("scaling", "rowwise",
                        "this cuBLASLt path has per-tensor and block FP8 scales only (cuBLASLt's "
                        "outer-vector scales are not wired)");
  if (operands.a == nullptr) throw InvalidArgument("operands.a", "null", "A must be given");
  if (operands.b == nullptr) throw InvalidArgument("operands.b", "null", "B must be given");
  if (operands.d == nullptr) throw InvalidArgument("operands.d", "null", "D must be given");
  if (operands.beta != 0.0f && operands.c == nullptr)
    throw InvalidArgument("operands.c", "null",
                          fmt::format("beta = {} reads C; pass C or set beta = 0", operands.beta));
  if (const std::string why = cublaslt_epilogue_unavailable(problem.epilogue, operands.beta);
      !why.empty())
    throw CublasLtLimit("epilogue", problem.epilogue.describe(), why);
  if (problem.epilogue.bias && operands.bias == nullptr)
    throw InvalidArgument("operands.bias", "null", "the problem's epilogue adds a bias");
  if (mode != ScaleMode::none) {
    const char* why = mode == ScaleMode::block ? "block-scaled FP8 needs both scale tensors"
                                               : "per-tensor FP8 needs both scales";
    require(operands.scale_a, "operands.scale_a", why);
    require(operands.scale_b, "operands.scale_b", why);
    check_fp8_support(problem, mode);
  }
}

void check_scale_alignment(const float* p, const char* name) {
  if (reinterpret_cast<std::uintptr_t>(p) % kScaleAlignmentBytes != 0)
    throw InvalidArgument(name, fmt::format("{}", static_cast<const void*>(p)),
                          "cuBLASLt block scale tensors must start on a 16-byte boundary (cuBLAS "
                          "docs, \"Scaling factors layouts\")");
}

// Relayout of the scales on `stream` with the device's transpose descriptor (lock held).
void convert_block_scales(DeviceState& state, const GemmProblem& problem, const float* scale_a,
                          const float* scale_b, float* lt_scale_a, float* lt_scale_b,
                          cudaStream_t stream) {
  const int64_t k_blocks = ceil_div(problem.k, kScaleBlock);
  const int64_t n_blocks = ceil_div(problem.n, kScaleBlock);
  const int64_t k_blocks_padded = round_up(k_blocks, 4);  // rows of 16 bytes

  // A: ours is column-major k_blocks x M (row-major M x k_blocks); cuBLASLt wants its transpose,
  // column-major M x k_blocks with ld M. cublasLtMatrixTransform with TRANSA = T does it.
  if (!state.transpose) {
    cublasLtMatrixTransformDesc_t raw = nullptr;
    check_lt(cublasLtMatrixTransformDescCreate(&raw, CUDA_R_32F),
             "cublasLtMatrixTransformDescCreate(32F)");
    state.transpose.reset(raw);
    const int32_t op = CUBLAS_OP_T;
    check_lt(cublasLtMatrixTransformDescSetAttribute(raw, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA,
                                                     &op, sizeof op),
             "cublasLtMatrixTransformDescSetAttribute", "TRANSA");
  }
  auto ours = make_layout(CUDA_R_32F, k_blocks, problem.m, k_blocks, "our A scales");
  auto theirs = make_layout(CUDA_R_32F, problem.m, k_blocks, problem.m, "cuBLASLt A scales");
  const float one = 1.0f, zero = 0.0f;
  check_lt(cublasLtMatrixTransform(state.handle, state.transpose.get(), &one, scale_a, ours.get(),
                                   &zero, nullptr, nullptr, lt_scale_a, theirs.get(), stream),
           "cublasLtMatrixTransform(A scales to VEC128 layout)");

  // B: same orientation, rows padded from k_blocks to k_blocks_padded floats.
  const std::size_t b_bytes = std::size_t(n_blocks * k_blocks_padded) * sizeof(float);
  if (k_blocks_padded != k_blocks)
    cuda_check(cudaMemsetAsync(lt_scale_b, 0, b_bytes, stream), "cudaMemsetAsync(B scale padding)");
  cuda_check(cudaMemcpy2DAsync(lt_scale_b, std::size_t(k_blocks_padded) * sizeof(float), scale_b,
                               std::size_t(k_blocks) * sizeof(float),
                               std::size_t(k_blocks) * sizeof(float), std::size_t(n_blocks),
                               cudaMemcpyDeviceToDevice, stream),
             "cudaMemcpy2DAsync(B scales to BLK128x128 layout)");
}

// Stream-ordered scratch, released on `stream` after the work enqueued before the release.
struct StreamScratch {
  void* ptr = nullptr;
  cudaStream_t stream = nullptr;
  StreamScratch() = default;
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  ~StreamScratch() {
    if (ptr != nullptr) (void)cudaFreeAsync(ptr, stream);
  }
};

// `body(state, plan, key)` for the checked call's plan (built on first use; the heuristic throws
// where it has none), under the device's lock: autotuning's two questions to cuBLASLt.
template <typename Body>
auto with_plan(const GemmProblem& problem, const GemmOperands& operands, Body body) {
  validate(problem);
  const ScaleMode mode = scale_mode_of(problem, false);
  check_operands(problem, operands, mode);
  const PlanKey key = make_key(problem, operands, mode);
  DeviceState& state = device_state();
  std::lock_guard lock(state.mutex);
  return body(state, cached_plan(state, key), key);
}

bool is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cuda_check(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace

bool cublaslt_status_is_refusal(cublasStatus_t status) {
  return status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH;
}

bool cublaslt_heuristic_declined(cublasStatus_t status, int algorithms_found) {
  return cublaslt_status_is_refusal(status) ||
         (status == CUBLAS_STATUS_SUCCESS && algorithms_found == 0);
}

std::string cublaslt_epilogue_unavailable(const Epilogue& epilogue, float beta) {
  if (epilogue.empty()) return {};
  if (cublaslt_epilogue_of(epilogue) < 0)
    return "cuBLASLt fuses only a bias, relu and gelu_tanh (cublasLtEpilogue_t): no silu, "
           "gelu_erf, row_scale, col_scale or gated epilogue";
  if (epilogue.activation != Activation::none && beta != 0.0f)
    return "cuBLASLt adds beta * C before its activation, autogemm after it";
  return {};
}

std::string cublaslt_block_scaling_unavailable() {
  if (cublasLtGetVersion() >= kFirstBlockScalingVersion) return {};
  return fmt::format("{} has no 128-element / 128x128 block scaling (it arrived in cuBLAS 12.9, "
                     "CUDA 12.9.0)", library_version_text());
}

CublasLtBlockScaleSizes cublaslt_block_scale_sizes(const GemmProblem& problem) {
  const int64_t k_blocks = ceil_div(problem.k, kScaleBlock);
  CublasLtBlockScaleSizes sizes;
  sizes.a_floats = std::size_t(k_blocks * problem.m);
  sizes.b_floats = std::size_t(ceil_div(problem.n, kScaleBlock) * round_up(k_blocks, 4));
  return sizes;
}

void to_cublaslt_block_scales(const GemmProblem& problem, const float* scale_a,
                              const float* scale_b, float* cublaslt_scale_a,
                              float* cublaslt_scale_b, cudaStream_t stream) {
  validate(problem);
  const char* why = "block scale conversion needs all four buffers";
  require(scale_a, "scale_a", why);
  require(scale_b, "scale_b", why);
  require(cublaslt_scale_a, "cublaslt_scale_a", why);
  require(cublaslt_scale_b, "cublaslt_scale_b", why);
  check_fp8_support(problem, ScaleMode::block);   // declined here as the matmul would decline it
  DeviceState& state = device_state();
  std::lock_guard lock(state.mutex);
  convert_block_scales(state, problem, scale_a, scale_b, cublaslt_scale_a, cublaslt_scale_b,
                       stream);
}

void cublaslt_gemm(const GemmProblem& problem, const GemmOperands& operands, cudaStream_t stream,
                   bool per_tensor_fp8) {
  CublasLtOptions options;
  options.per_tensor_fp8 = per_tensor_fp8;
  cublaslt_gemm(problem, operands, stream, options);
}

void cublaslt_gemm(const GemmProblem& problem, const GemmOperands& operands, cudaStream_t stream,
                   const CublasLtOptions& options) {
  validate(problem);
  const ScaleMode mode = scale_mode_of(problem, options.per_tensor_fp8);
  check_operands(problem, operands, mode);
  if (mode == ScaleMode::block && options.scales_in_cublaslt_layout) {
    // Scales in our layout go through scratch on a 256-byte boundary instead.
    check_scale_alignment(operands.scale_a, "operands.scale_a");
    check_scale_alignment(operands.scale_b, "operands.scale_b");
  }
  const bool uses_c = operands.beta != 0.0f;
  const void* c = uses_c ? operands.c : operands.d;  // not read when beta == 0

  const PlanKey key = make_key(problem, operands, mode);

  DeviceState& state = device_state();
  std::lock_guard lock(state.mutex);
  CachedMatmul& plan = cached_plan(state, key);
  const cublasLtMatmulAlgo_t* algo = &plan.algo;
  if (options.algo)
    if (const cublasLtMatmulAlgo_t* chosen = rebuilt_algo(state, plan, key, *options.algo))
      algo = chosen;

  const bool capturing = is_capturing(stream);
  // Wait for the workspace's previous user (not inside a graph capture: a captured stream may
  // not wait on an event recorded outside the capture).
  if (!capturing && state.workspace_used)
    cuda_check(cudaStreamWaitEvent(stream, state.workspace_free, 0),
               "cudaStreamWaitEvent(cuBLASLt workspace)");

  // Scales: cuBLAS "A" is our B, so A_SCALE_POINTER takes our B's scales.
  StreamScratch scratch;
  if (mode != ScaleMode::none) {
    const float* lt_scale_a = operands.scale_a;
    const float* lt_scale_b = operands.scale_b;
    if (mode == ScaleMode::block && !options.scales_in_cublaslt_layout) {
      // Not the hot path of the bench (it converts once, outside the timed region).
      const CublasLtBlockScaleSizes sizes = cublaslt_block_scale_sizes(problem);
      // B's scales after A's, on a 256-byte boundary (scale tensors need 16 bytes).
      const std::size_t b_offset = std::size_t(round_up(int64_t(sizes.a_floats), 64));
      scratch.stream = stream;
      cuda_check(cudaMallocAsync(&scratch.ptr, (b_offset + sizes.b_floats) * sizeof(float),
                                 stream),
                 "cudaMallocAsync(cuBLASLt block scales)");
      float* converted_a = static_cast<float*>(scratch.ptr);
      float* converted_b = converted_a + b_offset;
      convert_block_scales(state, problem, operands.scale_a, operands.scale_b, converted_a,
                           converted_b, stream);
      lt_scale_a = converted_a;
      lt_scale_b = converted_b;
    }
    set_desc(plan.desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, lt_scale_b, "A_SCALE_POINTER");
    set_desc(plan.desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, lt_scale_a, "B_SCALE_POINTER");
  }

  if (key.epilogue != CUBLASLT_EPILOGUE_DEFAULT && problem.epilogue.bias)
    set_desc(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, operands.bias, "BIAS_POINTER");

  const float alpha = operands.alpha, beta = operands.beta;
  const cublasStatus_t status =
      cublasLtMatmul(state.handle, plan.desc.get(), &alpha, operands.b, plan.lt_a.get(),
                     operands.a, plan.lt_b.get(), &beta, c, plan.lt_c.get(), operands.d,
                     plan.lt_d.get(), algo, state.workspace, kWorkspaceBytes, stream);
  if (status != CUBLAS_STATUS_SUCCESS) check_lt(status, "cublasLtMatmul", describe(key));

  if (!capturing) {
    cuda_check(cudaEventRecord(state.workspace_free, stream),
               "cudaEventRecord(cuBLASLt workspace)");
    state.workspace_used = true;
  }
}

std::vector<VendorAlgo> cublaslt_algorithms(const GemmProblem& problem,
                                            const GemmOperands& operands, int count) {
  return with_plan(problem, operands, [&](DeviceState& state, CachedMatmul& plan,
                                          const PlanKey& key) {
    if (!plan.tuning_algos) {
      std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(kTuningAlgorithms));
      int returned = 0;
      const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
          state.handle, plan.desc.get(), plan.lt_a.get(), plan.lt_b.get(), plan.lt_c.get(),
          plan.lt_d.get(), plan.pref.get(), kTuningAlgorithms, results.data(), &returned);
      check_lt(status, "cublasLtMatmulAlgoGetHeuristic", describe(key));
      plan.tuning_algos.emplace();
      for (int i = 0; i < returned; ++i)
        if (results[std::size_t(i)].state == CUBLAS_STATUS_SUCCESS)
          plan.tuning_algos->push_back(vendor_algo_of(results[std::size_t(i)].algo));
    }
    std::vector<VendorAlgo> algos = *plan.tuning_algos;
    if (int(algos.size()) > count) algos.resize(std::size_t(std::max(count, 0)));
    return algos;
  });
}

bool cublaslt_algorithm_usable(const GemmProblem& problem, const GemmOperands& operands,
                               const VendorAlgo& algo) {
  return with_plan(problem, operands,
                   [&](DeviceState& state, CachedMatmul& plan, const PlanKey& key) {
                     return rebuilt_algo(state, plan, key, algo) != nullptr;
                   });
}

}  // namespace autogemm::runtime
