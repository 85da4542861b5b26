// FP8 quantisation and dequantisation (include/autogemm/quantize.hpp): argument checks, then the
// kernels of src/kernels/quant/ through runtime/simple_launch.hpp.
#include "autogemm/quantize.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "autogemm/errors.hpp"
#include "kernels/quant/quant_params.cuh"
#include "runtime/simple_launch.hpp"

namespace autogemm {

namespace {

constexpr int kThreads = 256;           // every quant kernel: 8 warps (quant/*.cuh)
constexpr int64_t kGroupsPerBlock = kThreads / 32;   // quantize_1x128: one group per warp
constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();  // 2^31 - 1 (CUDA limit)
constexpr int64_t kMaxGridY = 65535;                                  // (CUDA limit)
// The e4m3 conversions (cvt ... e4m3x2) exist from sm_89 on (PTX ISA, cvt).
constexpr int kMinComputeCapability = 89;

static_assert(kFp8ScaleGroup == AUTOGEMM_QUANT_GROUP, "host and device group sizes differ");

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int element_code(DType t, const char* argument) {
  if (t == DType::bf16) return kQuantBf16;
  if (t == DType::fp32) return kQuantFp32;
  throw InvalidArgument(argument, std::string(to_string(t)),
                        "FP8 quantisation converts from and to bf16 or fp32");
}

void require_pointer(const void* p, const char* argument, int alignment) {
  if (p == nullptr) throw InvalidArgument(argument, "null", "must point to device memory");
  if (reinterpret_cast<std::uintptr_t>(p) % std::uintptr_t(alignment) != 0)
    throw InvalidArgument(argument, fmt::format("{}", p),
                          fmt::format("must be aligned to its element size, {} bytes", alignment));
}

// rows, cols >= 1; ld >= cols; rows * ld elements addressable.
void check_shape(int64_t rows, int64_t cols, int64_t ld) {
  if (rows < 1) throw InvalidArgument("rows", std::to_string(rows), "must be >= 1");
  if (cols < 1) throw InvalidArgument("cols", std::to_string(cols), "must be >= 1");
  if (ld < cols)
    throw InvalidArgument("ld", std::to_string(ld), fmt::format("must be >= cols = {}", cols));
  if (rows > std::numeric_limits<int64_t>::max() / ld)
    throw InvalidArgument("rows", std::to_string(rows),
                          fmt::format("rows * ld (ld = {}) overflows a 64-bit index", ld));
}

void require_fp8_conversions() {
  const int cc = runtime::current_device_cc();
  if (cc < kMinComputeCapability)
    throw NoDevice(fmt::format("FP8 quantisation needs sm_89 or later (cvt to and from e4m3); "
                               "the current device is sm_{}",
                               cc));
}

enum class Blocks { one_by_128, by_128x128 };

const char* blocks_name(Blocks b) { return b == Blocks::one_by_128 ? "1x128" : "128x128"; }

// x (rows x cols, leading dimension ld, element code `type`) and its 1x128 or 128x128 output, the
// fields both quantisation kernels' parameters share.
template <class Params>
void set_source(Params& params, const void* x, int type, int64_t rows, int64_t cols, int64_t ld,
                void* q, float* scales) {
  params.rows = rows;
  params.cols = cols;
  params.ld = ld;
  params.x = x;
  params.q = static_cast<unsigned char*>(q);
  params.scales = scales;
  params.x_type = type;
}

void quantize(const void* x, DType x_type, int64_t rows, int64_t cols, int64_t ld, void* q,
              float* scales, cudaStream_t stream, Blocks blocks) {
  const int type = element_code(x_type, "x_type");
  require_pointer(x, "x", dtype_bytes(x_type));
  require_pointer(q, "q", 1);
  require_pointer(scales, "scales", int(sizeof(float)));
  check_shape(rows, cols, ld);

  runtime::SimpleGrid grid;
  grid.block_x = kThreads;
  const int64_t col_groups = ceil_div(cols, kFp8ScaleGroup);
  if (blocks == Blocks::one_by_128) {
    // Grid-stride over the groups: beyond a few waves more blocks buy nothing.
    grid.grid_x = unsigned(std::min(ceil_div(rows * col_groups, kGroupsPerBlock), int64_t(1) << 20));
  } else {
    const int64_t num_blocks = ceil_div(rows, kFp8ScaleGroup) * col_groups;
    if (num_blocks > kMaxGridX)
      throw InvalidArgument("rows", std::to_string(rows),
                            fmt::format("with cols = {}: {} blocks of 128 x 128 exceed the grid "
                                        "limit of 2^31 - 1 thread blocks", cols, num_blocks));
    grid.grid_x = unsigned(num_blocks);
  }
  require_fp8_conversions();

  QuantizeParams params{};
  set_source(params, x, type, rows, cols, ld, q, scales);
  const std::string kernel = fmt::format("autogemm_quantize_fp8_{}", blocks_name(blocks));
  runtime::launch_simple_kernel(fmt::format("quant/quantize_{}.cuh", blocks_name(blocks)), kernel,
                                grid, &params, stream,
                                fmt::format("{} {} x {} ld {}", kernel, rows, cols, ld));
}

void quantize_transposed(const void* x, DType x_type, int64_t rows, int64_t cols, int64_t ld,
                         void* q_t, float* scales_t, void* q, float* scales,
                         cudaStream_t stream) {
  const int type = element_code(x_type, "x_type");
  require_pointer(x, "x", dtype_bytes(x_type));
  require_pointer(q_t, "q_t", 1);
  require_pointer(scales_t, "scales_t", int(sizeof(float)));
  if ((q == nullptr) != (scales == nullptr))
    throw InvalidArgument(q == nullptr ? "q" : "scales", "null",
                          "x's own 1x128 output takes both q and scales, or neither");
  if (q != nullptr) {
    require_pointer(q, "q", 1);
    require_pointer(scales, "scales", int(sizeof(float)));
  }
  check_shape(rows, cols, ld);
  const int64_t row_tiles = ceil_div(rows, kFp8ScaleGroup);
  const int64_t col_tiles = ceil_div(cols, kFp8ScaleGroup);
  if (row_tiles > kMaxGridX)
    throw InvalidArgument("rows", std::to_string(rows),
                          "needs more than 2^31 - 1 thread blocks of 128 rows");
  if (col_tiles > kMaxGridY)
    throw InvalidArgument("cols", std::to_string(cols),
                          fmt::format("needs more than {} thread blocks of 128 columns",
                                      kMaxGridY));
  require_fp8_conversions();

  runtime::SimpleGrid grid;
  grid.block_x = kThreads;
  grid.grid_x = unsigned(row_tiles);
  grid.grid_y = unsigned(col_tiles);
  QuantizeTransposedParams params{};
  set_source(params, x, type, rows, cols, ld, q, scales);
  params.q_t = static_cast<unsigned char*>(q_t);
  params.scales_t = scales_t;
  runtime::launch_simple_kernel("quant/quantize_1x128_transposed.cuh",
                                "autogemm_quantize_fp8_1x128_transposed", grid, &params, stream,
                                fmt::format("quantize_fp8_1x128_transposed {} x {} ld {}", rows,
                                            cols, ld));
}

void dequantize(const void* q, const float* scales, int64_t rows, int64_t cols, void* y,
                DType y_type, int64_t ld, cudaStream_t stream, Blocks blocks) {
  const int type = element_code(y_type, "y_type");
  require_pointer(q, "q", 1);
  require_pointer(scales, "scales", int(sizeof(float)));
  require_pointer(y, "y", dtype_bytes(y_type));
  check_shape(rows, cols, ld);
  if (ceil_div(cols, kThreads) > kMaxGridX)
    throw InvalidArgument("cols", std::to_string(cols),
                          "needs more than 2^31 - 1 thread blocks of 256 columns");
  require_fp8_conversions();

  runtime::SimpleGrid grid;
  grid.block_x = kThreads;
  grid.grid_x = unsigned(ceil_div(cols, kThreads));
  grid.grid_y = unsigned(std::min(rows, kMaxGridY));  // the kernel grid-strides over rows

  DequantizeParams params{};
  params.rows = rows;
  params.cols = cols;
  params.ld = ld;
  params.q = static_cast<const unsigned char*>(q);
  params.scales = scales;
  params.y = y;
  params.y_type = type;
  params.block_rows = blocks == Blocks::one_by_128 ? 1 : int(kFp8ScaleGroup);
  runtime::launch_simple_kernel(
      "quant/dequantize.cuh", "autogemm_dequantize_fp8", grid, &params, stream,
      fmt::format("dequantize_fp8 ({}) {} x {} ld {}", blocks_name(blocks), rows, cols, ld));
}

}  // namespace

int64_t fp8_scale_count_1x128(int64_t rows, int64_t cols) {
  return rows * ceil_div(cols, kFp8ScaleGroup);
}

int64_t fp8_scale_count_128x128(int64_t rows, int64_t cols) {
  return ceil_div(rows, kFp8ScaleGroup) * ceil_div(cols, kFp8ScaleGroup);
}

void quantize_fp8_1x128(const void* x, DType x_type, int64_t rows, int64_t cols, int64_t ld,
                        void* q, float* scales, cudaStream_t stream) {
  quantize(x, x_type, rows, cols, ld, q, scales, stream, Blocks::one_by_128);
}

void quantize_fp8_128x128(const void* x, DType x_type, int64_t rows, int64_t cols, int64_t ld,
                          void* q, float* scales, cudaStream_t stream) {
  quantize(x, x_type, rows, cols, ld, q, scales, stream, Blocks::by_128x128);
}

void quantize_fp8_1x128_transposed(const void* x, DType x_type, int64_t rows, int64_t cols,
                                   int64_t ld, void* q_t, float* scales_t, void* q,
                                   float* scales, cudaStream_t stream) {
  quantize_transposed(x, x_type, rows, cols, ld, q_t, scales_t, q, scales, stream);
}

void dequantize_fp8_1x128(const void* q, const float* scales, int64_t rows, int64_t cols,
                          void* y, DType y_type, int64_t ld, cudaStream_t stream) {
  dequantize(q, scales, rows, cols, y, y_type, ld, stream, Blocks::one_by_128);
}

void dequantize_fp8_128x128(const void* q, const float* scales, int64_t rows, int64_t cols,
                            void* y, DType y_type, int64_t ld, cudaStream_t stream) {
  dequantize(q, scales, rows, cols, y, y_type, ld, stream, Blocks::by_128x128);
}

}  // namespace autogemm
