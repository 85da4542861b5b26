// gemm() and fp8_gemm() from Python arrays: every argument is checked and turned into the
// GemmProblem / GemmOperands a C++ caller would write (types from the DLPack dtypes, layout
// and leading dimensions from the strides) before anything is allocated or launched.
#include "gemm_call.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <tuple>

#include "autogemm/errors.hpp"
#include "autogemm/quantize.hpp"
#include "weight_arrays.hpp"

namespace autogemm::python {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::optional<DType> parse_bytes_as(const std::optional<std::string>& kind, const char* name) {
  if (!kind) return DType::e4m3;
  const std::string v = lower(*kind);
  if (v == "e4m3" || v == "fp8" || v == "float8_e4m3fn") return DType::e4m3;
  if (v == "e5m2" || v == "float8_e5m2") return DType::e5m2;
  throw InvalidArgument(name, *kind, "FP8 bytes are read as e4m3 or e5m2");
}

std::string shape2(int64_t rows, int64_t cols) { return fmt::format("({}, {})", rows, cols); }

// The output: `out` as given, else a new array from the Python allocator (torch or CuPy,
// chosen by autogemm/__init__.py), only after every other argument passed.
ArrayView output_array(nb::handle out, nb::handle alloc, int64_t rows, int64_t cols,
                       const char* dtype_name, const char* name = "out") {
  if (!out.is_none()) return import_array(name, out, /*writable=*/true);
  if (alloc.is_none())
    throw InvalidArgument(name, "None",
                          "autogemm allocates outputs for torch and CuPy inputs only: pass "
                          "out= (a writable CUDA array, e.g. a torch tensor or CuPy array)");
  nb::object made = alloc(rows, cols, dtype_name);
  return import_array(name, made, /*writable=*/true);
}

void check_output(const Matrix& m, int64_t rows, int64_t cols, DType want,
                  std::optional<DType> bytes_as = {}) {
  if (m.rows != rows || m.cols != cols)
    throw InvalidArgument(m.label, fmt::format("an array of shape {}", m.array->shape_text()),
                          fmt::format("must have shape {}", shape2(rows, cols)));
  const std::optional<DType> t = element_type(*m.array, bytes_as);
  if (t != want)
    throw InvalidArgument(m.label, m.array->dtype_text(),
                          fmt::format("must have dtype {}", python_dtype(want)));
}

// The fused epilogue's vectors: 1-D, unit stride, of the length and type the problem says;
// problem.epilogue from what was given.
void prepare_epilogue(const GemmRequest& r, PreparedGemm& p) {
  GemmProblem& problem = p.problem;
  const std::optional<Activation> activation = parse_activation(lower(r.activation));
  if (!activation)
    throw InvalidArgument("activation", r.activation,
                          "expected None, \"relu\", \"gelu_tanh\" (\"gelu\"), \"gelu_erf\" or "
                          "\"silu\"");
  problem.epilogue.activation = *activation;
  const auto vector = [&](const char* name, nb::handle object, int64_t length,
                          const char* length_name) -> std::optional<ArrayView> {
    if (!object.ptr() || object.is_none()) return std::nullopt;   // not passed, or None
    ArrayView v = import_array(name, object, false);
    if (v.shape.size() != 1 || v.shape[0] != length)
      throw InvalidArgument(name,
                            v.shape.size() == 1
                                ? fmt::format("{} elements", v.shape[0])
                                : fmt::format("an array of shape {}", v.shape_text()),
                            fmt::format("{} = {}: needs a 1-D array of {} elements", length_name,
                                        length, length_name));
    if (length > 1 && v.strides[0] != 1)
      throw InvalidArgument(name, fmt::format("strides {}", v.strides_text()),
                            "must be contiguous (unit stride)");
    return v;
  };
  p.bias = vector("bias", r.bias, problem.n, "N");
  p.row_scale = vector("row_scale", r.row_scale, problem.m, "M");
  p.col_scale = vector("col_scale", r.col_scale, problem.n, "N");
  if (p.bias) {
    const std::optional<DType> t = element_type(*p.bias);
    if (t != DType::bf16 && t != DType::fp32)
      throw InvalidArgument("bias", p.bias->dtype_text(), "must be bfloat16 or float32");
    problem.epilogue.bias = *t;
    p.operands.bias = p.bias->data;
  }
  for (auto [view, pointer] : {std::pair{&p.row_scale, &p.operands.row_scale},
                               std::pair{&p.col_scale, &p.operands.col_scale}}) {
    if (!*view) continue;
    if (element_type(**view) != DType::fp32)
      throw InvalidArgument((*view)->name, (*view)->dtype_text(), "scales must be float32");
    *pointer = static_cast<const float*>((*view)->data);
  }
  problem.epilogue.row_scale = p.row_scale.has_value();
  problem.epilogue.col_scale = p.col_scale.has_value();
}

}  // namespace

// Weight-only B: b holds the packed values, one byte per two int4 values or per int8 value;
// the problem multiplies bf16 activations (layout nt: a (M, K), b (N, packed row)).
static void prepare_weight_b(const GemmRequest& r, PreparedGemm& p) {
  const WeightFormat format = parse_weight_format_arg(*r.weight_format);
  if (element_type(*p.a) != DType::bf16)
    throw InvalidArgument(p.a->name, p.a->dtype_text(),
                          "a packed weight multiplies bfloat16 activations");
  check_weight_values(*p.b);
  if (lower(r.layout) != "nt")
    throw InvalidArgument("layout", r.layout,
                          "a packed weight is (N, packed K) with a (M, K): layout nt");
  p.problem.weight_format = format;
}

// The packed weight's scales (int4: bfloat16 (N, K/128); mxfp4: e8m0 uint8 (N, K/32); int8:
// float32 (N,)) and zeros (int4-g128-zp: uint8 (N, K/128)), packed (weight_arrays.hpp).
static void prepare_weight_scales(const GemmRequest& r, PreparedGemm& p) {
  WeightArrays w = import_weight_scales(*p.problem.weight_format, r.weight_scales, r.weight_zeros,
                                        {}, p.problem.n, p.problem.k);
  p.weight_scales = std::move(w.scales);
  p.operands.b_scales = p.weight_scales->data;
  if (w.zeros) {
    p.weight_zeros = std::move(w.zeros);
    p.operands.b_zeros = p.weight_zeros->data;
  }
}

void prepare_gemm(const GemmRequest& r, PreparedGemm& p) {
  // Static checks first (configuration, layout, types, shapes, strides), then devices, then
  // the output allocation: a wrong argument never costs an allocation or a launch.
  if (r.config) p.options.config = GemmConfig::parse(*r.config);
  p.options.autotune = r.autotune;
  p.options.allow_vendor_fallback = r.vendor_fallback;
  if (r.autotune < -1)
    throw InvalidArgument("autotune", std::to_string(r.autotune),
                          "must be None (AUTOGEMM_AUTOTUNE) or a count >= 0");

  const bool fp8 = !r.scaling.empty();
  GemmProblem& problem = p.problem;
  problem.epilogue.gated = r.gated;   // D's columns (d_cols) from here on
  p.a = import_array(r.a_name, r.a, false);
  p.b = import_array(r.b_name, r.b, false);
  Matrix a = matrix_of(*p.a), b = matrix_of(*p.b);

  // Element types.
  std::optional<DType> a_type, b_type;
  if (fp8) {
    a_type = element_type(*p.a, parse_bytes_as(r.a_bytes, "a_bytes"));
    b_type = element_type(*p.b, parse_bytes_as(r.b_bytes, "b_bytes"));
    for (auto [view, type] : {std::pair{&*p.a, a_type}, std::pair{&*p.b, b_type}})
      if (!type || !(*type == DType::e4m3 || *type == DType::e5m2))
        throw InvalidArgument(view->name, view->dtype_text(),
                              "must hold FP8 values: float8_e4m3fn or float8_e5m2, or uint8 "
                              "bytes read as e4m3 (quantize_fp8 makes them)");
  } else if (r.weight_format) {
    prepare_weight_b(r, p);
    a_type = b_type = DType::bf16;
  } else {
    a_type = element_type(*p.a);
    b_type = element_type(*p.b);
    if (!a_type || !(*a_type == DType::bf16 || *a_type == DType::fp16))
      throw InvalidArgument(p.a->name, p.a->dtype_text(),
                            "gemm takes bfloat16 or float16 arrays (FP8: fp8_gemm)");
    if (b_type != a_type)
      throw InvalidArgument(p.b->name, p.b->dtype_text(),
                            fmt::format("must have a's dtype, {}", p.a->dtype_text()));
  }
  problem.a_type = *a_type;
  problem.b_type = *b_type;

  // Layout: which stored matrix is which operand.
  const std::string layout_text = lower(r.layout);
  if (layout_text == "auto") {
    // a is the M x K operand and b the K x N one, each row-major or a transposed view.
    const bool a_rows = rows_are_contiguous(a);
    const bool b_cols = rows_are_contiguous(transposed(b));
    if (!a_rows && !rows_are_contiguous(transposed(a))) leading_dimension(a);   // throws
    if (!b_cols && !rows_are_contiguous(b)) leading_dimension(b);              // throws
    if (b.rows != a.cols)
      throw InvalidArgument(p.b->name, fmt::format("an array of shape {}", p.b->shape_text()),
                            fmt::format("must have K = {} rows: a is {} (M x K) and b is K x N "
                                        "for layout \"auto\"",
                                        a.cols, p.a->shape_text()));
    const bool a_k_major = a_rows, b_k_major = b_cols;
    problem.layout = a_k_major ? (b_k_major ? Layout::nt : Layout::nn)
                               : (b_k_major ? Layout::tt : Layout::tn);
    if (!a_k_major) a = transposed(a);   // stored K x M
    if (b_k_major) b = transposed(b);    // stored N x K
  } else {
    const std::optional<Layout> layout = parse_layout(layout_text);
    if (!layout)
      throw InvalidArgument("layout", r.layout,
                            "expected nt, nn, tn, tt (how a and b are stored; first letter a) "
                            "or auto (read from the strides)");
    problem.layout = *layout;
  }
  const bool a_km = a_is_k_major(problem.layout), b_km = b_is_k_major(problem.layout);
  problem.m = a_km ? a.rows : a.cols;
  problem.k = a_km ? a.cols : a.rows;
  problem.n = b_km ? b.rows : b.cols;
  const int64_t b_k = b_km ? b.cols : b.rows;
  if (b_k != problem.k && !problem.weight_format) {
    const std::string want = b_km ? shape2(problem.n, problem.k) : shape2(problem.k, problem.n);
    throw InvalidArgument(
        p.b->name, fmt::format("an array of shape {}", p.b->shape_text()),
        fmt::format("must be {} = {} for layout {}: a is {} so K = {}", b_km ? "(N, K)" : "(K, N)",
                    want, to_string(problem.layout), p.a->shape_text(), problem.k));
  }
  problem.lda = leading_dimension(a);
  problem.ldb = leading_dimension(b);
  if (problem.weight_format) {
    // b's columns are bytes of the packed row: K / 2 (4-bit) or K (int8) of them.
    const int64_t per_byte = *problem.weight_format == WeightFormat::int8_channel ? 1 : 2;
    problem.k = a.cols;
    if (b.cols * per_byte != problem.k)
      throw InvalidArgument(
          "b", fmt::format("an array of shape {}", p.b->shape_text()),
          fmt::format("a packed {} weight of K = {} (a is {}) has {} bytes a row: (N, {})",
                      *r.weight_format, problem.k, p.a->shape_text(), problem.k / per_byte,
                      problem.k / per_byte));
    problem.ldb = problem.ldb == 0 ? 0 : problem.ldb * per_byte;
    prepare_weight_scales(r, p);
  }

  // Output type: out's dtype, else out_dtype, else a's (bf16 for FP8).
  std::optional<DType> wanted_d;
  if (r.out_dtype) wanted_d = parse_out_dtype(*r.out_dtype, /*fp8_output=*/true);
  Matrix d_matrix;
  if (!r.out.is_none()) {
    p.out = import_array("out", r.out, /*writable=*/true);
    d_matrix = matrix_of(*p.out);
    // uint8 bytes are read as e4m3 (CuPy has no FP8 dtype; torch's arrive as their bytes); an
    // int8 array is no FP8 container and is refused as before.
    const bool fp8_bytes = p.out->dtype.code == uint8_t(nb::dlpack::dtype_code::UInt) &&
                           p.out->dtype.bits == 8;
    const std::optional<DType> bytes_as =
        fp8_bytes ? std::optional(DType::e4m3) : std::optional<DType>();
    const std::optional<DType> d = element_type(*p.out, bytes_as);
    if (!d || !(*d == DType::bf16 || *d == DType::fp16 || *d == DType::fp32 || *d == DType::e4m3))
      throw InvalidArgument("out", p.out->dtype_text(),
                            "must be bfloat16, float16 or float32, or float8_e4m3fn (FP8 output)");
    if (wanted_d && *wanted_d != *d)
      throw InvalidArgument("out_dtype", *r.out_dtype,
                            fmt::format("must match out's dtype, {}", p.out->dtype_text()));
    check_output(d_matrix, problem.m, problem.d_cols(), *d, bytes_as);
    problem.d_type = *d;
    problem.ldd = leading_dimension(d_matrix);
  } else {
    problem.d_type = wanted_d ? *wanted_d : fp8 ? DType::bf16 : problem.a_type;
  }

  // C: read when beta != 0; c, or out itself (accumulate), is its storage.
  problem.reads_c = r.beta != 0.0f;
  if (problem.reads_c) {
    if (!r.c.is_none()) {
      p.c = import_array("c", r.c, false);
      const Matrix c = matrix_of(*p.c);
      if (c.rows != problem.m || c.cols != problem.d_cols())
        throw InvalidArgument("c", fmt::format("an array of shape {}", p.c->shape_text()),
                              fmt::format("must have shape {} (D's)",
                                          shape2(problem.m, problem.d_cols())));
      if (element_type(*p.c) != problem.d_type)
        throw InvalidArgument("c", p.c->dtype_text(),
                              fmt::format("must have the output's dtype, {}",
                                          python_dtype(problem.d_type)));
      problem.ldc = leading_dimension(c);
    } else if (p.out) {
      problem.ldc = problem.ldd;   // D = alpha * A B + beta * D
    } else {
      throw InvalidArgument("c", "None",
                            fmt::format("beta = {} reads C: pass c, or out to accumulate into it",
                                        r.beta));
    }
  }

  // FP8 scales.
  if (fp8) {
    const std::string scaling = lower(r.scaling);
    if (scaling == "block") {
      problem.scaling = Scaling::block_1x128_128x128;
    } else if (scaling == "per_tensor") {
      problem.scaling = Scaling::per_tensor;
    } else if (scaling == "rowwise") {
      problem.scaling = Scaling::rowwise;
    } else if (scaling == "1x128") {
      problem.scaling = Scaling::block_1x128_1x128;
    } else {
      throw InvalidArgument("scaling", r.scaling, "must be \"block\" (1x128 A, 128x128 B), "
                                                  "\"1x128\" (1x128 A and B: weight gradients), "
                                                  "\"rowwise\" (a scale per row of A and of B) "
                                                  "or \"per_tensor\"");
    }
    p.a_scales = import_array("a_scales", r.a_scales, false);
    p.b_scales = import_array("b_scales", r.b_scales, false);
    const int64_t kb = ceil_div(problem.k, kFp8ScaleGroup);
    if (problem.scaling == Scaling::rowwise) {
      // (M,) or (M, 1) and (N,), (1, N) or (N, 1): PyTorch's rowwise _scaled_mm takes the
      // column and row forms, packed vectors either way.
      for (auto [view, rows, name] : {std::tuple{&*p.a_scales, problem.m, "M"},
                                      std::tuple{&*p.b_scales, problem.n, "N"}}) {
        if (element_type(*view) != DType::fp32)
          throw InvalidArgument(view->name, view->dtype_text(), "scales must be float32");
        const bool vector = view->size() == rows && view->shape.size() <= 2 &&
                            (view->shape.size() < 2 || view->shape[0] == 1 || view->shape[1] == 1);
        if (!vector)
          throw InvalidArgument(view->name, fmt::format("an array of shape {}", view->shape_text()),
                                fmt::format("rowwise scaling takes one float32 scale per row: {} = "
                                            "{} of them, shape ({},) or a column or row of them",
                                            name, rows, name));
        for (std::size_t d = 0; d < view->shape.size(); ++d)
          if (view->shape[d] > 1 && view->strides[d] != 1)
            throw InvalidArgument(view->name, fmt::format("strides {}", view->strides_text()),
                                  "rowwise scales must be contiguous");
      }
    } else if (problem.scaling == Scaling::per_tensor) {
      for (const ArrayView* view : {&*p.a_scales, &*p.b_scales}) {
        if (element_type(*view) != DType::fp32)
          throw InvalidArgument(view->name, view->dtype_text(), "scales must be float32");
        if (view->size() != 1)
          throw InvalidArgument(view->name, fmt::format("an array of shape {}", view->shape_text()),
                                "per-tensor scaling takes one float32 scale per operand");
      }
    } else {
      const std::string sizes =
          fmt::format("M = {}, N = {}, K = {}", problem.m, problem.n, problem.k);
      check_block_scales(*p.a_scales, {problem.m, kb}, "(M, ceil(K/128))",
                         "one scale per row per 128 of K (1x128 blocks)", sizes);
      if (problem.scaling == Scaling::block_1x128_1x128)
        check_block_scales(*p.b_scales, {problem.n, kb}, "(N, ceil(K/128))",
                           "one scale per row per 128 of K (1x128 blocks)", sizes);
      else
        check_block_scales(*p.b_scales, {ceil_div(problem.n, kFp8ScaleGroup), kb},
                           "(ceil(N/128), ceil(K/128))", "one scale per 128x128 block", sizes);
    }
    p.operands.scale_a = static_cast<const float*>(p.a_scales->data);
    p.operands.scale_b = static_cast<const float*>(p.b_scales->data);
  }

  prepare_epilogue(r, p);
  validate(problem);   // sizes and the rest of the library's own rules

  p.device = common_cuda_device(
      {&*p.a, &*p.b, p.out ? &*p.out : nullptr, p.c ? &*p.c : nullptr,
       p.a_scales ? &*p.a_scales : nullptr, p.b_scales ? &*p.b_scales : nullptr,
       p.bias ? &*p.bias : nullptr, p.row_scale ? &*p.row_scale : nullptr,
       p.col_scale ? &*p.col_scale : nullptr, p.weight_scales ? &*p.weight_scales : nullptr,
       p.weight_zeros ? &*p.weight_zeros : nullptr});
  if (!p.out) {
    p.out = output_array(nb::none(), r.alloc, problem.m, problem.d_cols(),
                         python_dtype(problem.d_type));
    d_matrix = matrix_of(*p.out);
    check_output(d_matrix, problem.m, problem.d_cols(), problem.d_type, DType::e4m3);
    problem.ldd = leading_dimension(d_matrix);
    if (problem.reads_c && !p.c) problem.ldc = problem.ldd;
    common_cuda_device({&*p.a, &*p.out});
  }
  p.options.device = p.device;
  p.operands.a = p.a->data;
  p.operands.b = p.b->data;
  p.operands.d = p.out->data;
  p.operands.c = !problem.reads_c ? nullptr : p.c ? p.c->data : p.out->data;
  p.operands.alpha = r.alpha;
  p.operands.beta = r.beta;
  if (problem.d_type == DType::e4m3) {
    // The scales: packed float32 (M, ceil(D columns / 128)), fp8_gemm's a_scales layout.
    const int64_t groups = ceil_div(problem.d_cols(), kFp8ScaleGroup);
    p.out_scales = output_array(r.out_scales, r.alloc, problem.m, groups, "float32", "out_scales");
    check_block_scales(*p.out_scales, {problem.m, groups}, "(M, ceil(D columns / 128))",
                       "one scale per row per 128 columns of D",
                       fmt::format("M = {}, D columns = {}", problem.m, problem.d_cols()));
    common_cuda_device({&*p.out, &*p.out_scales});
    p.operands.d_scale = static_cast<float*>(p.out_scales->data);
  } else if (r.out_scales.ptr() && !r.out_scales.is_none()) {
    throw InvalidArgument("out_scales", "an array",
                          "only FP8 output (out_dtype fp8) writes scales");
  }
  validate(problem);
}

GemmReport run_gemm(const PreparedGemm& p, uintptr_t stream) {
  DeviceGuard guard(p.device);
  nb::gil_scoped_release release;
  return gemm(p.problem, p.operands, reinterpret_cast<cudaStream_t>(stream), p.options);
}

double time_enqueues(const PreparedGemm& p, uintptr_t stream_handle, int calls) {
  if (calls < 1) throw InvalidArgument("calls", std::to_string(calls), "must be >= 1");
  const auto stream = reinterpret_cast<cudaStream_t>(stream_handle);
  DeviceGuard guard(p.device);
  nb::gil_scoped_release release;
  // As GemmGpu.HostCostPerCall: one call plans, compiles or loads; then `calls` enqueues.
  gemm(p.problem, p.operands, stream, p.options);
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) gemm(p.problem, p.operands, stream, p.options);
  const auto end = std::chrono::steady_clock::now();
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return std::chrono::duration<double, std::micro>(end - start).count() / calls;
}

void quantize(nb::handle x_obj, nb::handle values_obj, nb::handle scales_obj, int block_rows,
              uintptr_t stream, nb::handle alloc, bool transpose) {
  if (block_rows != 1 && block_rows != 128)
    throw InvalidArgument("block", std::to_string(block_rows) + "x128",
                          "must be (1, 128) or (128, 128)");
  if (transpose && block_rows != 1)
    throw InvalidArgument("transpose", "True",
                          "the transposed copy is scaled along x's rows, 1x128 groups of x^T: "
                          "block (1, 128)");
  const ArrayView x = import_array("x", x_obj, false);
  const Matrix xm = matrix_of(x);
  const std::optional<DType> x_type = element_type(x);
  if (x_type != DType::bf16 && x_type != DType::fp32)
    throw InvalidArgument("x", x.dtype_text(), "must be bfloat16 or float32");
  const int64_t ld = leading_dimension(xm);
  const int64_t rows = xm.rows, cols = xm.cols;
  if (rows < 1 || cols < 1)
    throw InvalidArgument("x", fmt::format("an array of shape {}", x.shape_text()),
                          "must have at least one row and one column");
  // Transposed: x^T (cols x rows) and its 1x128 scales (cols x ceil(rows/128)).
  const int64_t out_rows = transpose ? cols : rows, out_cols = transpose ? rows : cols;
  const int64_t s_rows = block_rows == 1 ? out_rows : ceil_div(rows, kFp8ScaleGroup);
  const int64_t s_cols = ceil_div(out_cols, kFp8ScaleGroup);
  std::optional<ArrayView> values, scales;
  if (!values_obj.is_none()) values = import_array("values", values_obj, true);
  if (!scales_obj.is_none()) scales = import_array("scales", scales_obj, true);
  common_cuda_device({&x, values ? &*values : nullptr, scales ? &*scales : nullptr});
  if (!values)
    values = output_array(nb::none(), alloc, out_rows, out_cols, "float8_e4m3fn", "values");
  if (!scales) scales = output_array(nb::none(), alloc, s_rows, s_cols, "float32", "scales");
  const int device = common_cuda_device({&x, &*values, &*scales});
  const Matrix vm = matrix_of(*values), sm = matrix_of(*scales);
  if (vm.rows != out_rows || vm.cols != out_cols ||
      element_type(*values, DType::e4m3) != DType::e4m3)
    throw InvalidArgument("values", fmt::format("{} of shape {}", values->dtype_text(),
                                                values->shape_text()),
                          fmt::format("must be float8_e4m3fn (or uint8) of shape {}",
                                      shape2(out_rows, out_cols)));
  require_packed(vm);
  check_output(sm, s_rows, s_cols, DType::fp32);
  require_packed(sm);
  DeviceGuard guard(device);
  nb::gil_scoped_release release;
  auto* scale_data = static_cast<float*>(scales->data);
  if (transpose)
    quantize_fp8_1x128_transposed(x.data, *x_type, rows, cols, ld ? ld : cols, values->data,
                                  scale_data, nullptr, nullptr,
                                  reinterpret_cast<cudaStream_t>(stream));
  else if (block_rows == 1)
    quantize_fp8_1x128(x.data, *x_type, rows, cols, ld ? ld : cols, values->data, scale_data,
                       reinterpret_cast<cudaStream_t>(stream));
  else
    quantize_fp8_128x128(x.data, *x_type, rows, cols, ld ? ld : cols, values->data, scale_data,
                         reinterpret_cast<cudaStream_t>(stream));
}

void dequantize(nb::handle values_obj, nb::handle scales_obj, int block_rows, nb::handle out_obj,
                const std::string& out_dtype, uintptr_t stream, nb::handle alloc) {
  if (block_rows != 1 && block_rows != 128)
    throw InvalidArgument("block", std::to_string(block_rows) + "x128",
                          "must be (1, 128) or (128, 128)");
  const ArrayView values = import_array("values", values_obj, false);
  const ArrayView scales = import_array("scales", scales_obj, false);
  const Matrix vm = matrix_of(values), sm = matrix_of(scales);
  if (element_type(values, DType::e4m3) != DType::e4m3)
    throw InvalidArgument("values", values.dtype_text(), "must be float8_e4m3fn (or uint8)");
  require_packed(vm);
  const int64_t rows = vm.rows, cols = vm.cols;
  const int64_t s_rows = block_rows == 1 ? rows : ceil_div(rows, kFp8ScaleGroup);
  check_output(sm, s_rows, ceil_div(cols, kFp8ScaleGroup), DType::fp32);
  require_packed(sm);
  const DType y_type = parse_out_dtype(out_dtype);
  if (y_type != DType::bf16 && y_type != DType::fp32)
    throw InvalidArgument("out_dtype", out_dtype, "must be bfloat16 or float32");
  std::optional<ArrayView> out;
  if (!out_obj.is_none()) out = import_array("out", out_obj, true);
  common_cuda_device({&values, &scales, out ? &*out : nullptr});
  if (!out) out = output_array(nb::none(), alloc, rows, cols, python_dtype(y_type));
  const int device = common_cuda_device({&values, &scales, &*out});
  const Matrix om = matrix_of(*out);
  check_output(om, rows, cols, y_type);
  const int64_t ld = leading_dimension(om);
  DeviceGuard guard(device);
  nb::gil_scoped_release release;
  const auto* scale_data = static_cast<const float*>(scales.data);
  if (block_rows == 1)
    dequantize_fp8_1x128(values.data, scale_data, rows, cols, out->data, y_type,
                         ld ? ld : cols, reinterpret_cast<cudaStream_t>(stream));
  else
    dequantize_fp8_128x128(values.data, scale_data, rows, cols, out->data, y_type,
                           ld ? ld : cols, reinterpret_cast<cudaStream_t>(stream));
}

}  // namespace autogemm::python

namespace autogemm::python {

nb::tuple quantize_weight(nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> w,
                          const std::string& format) {
  const std::optional<WeightFormat> f = parse_weight_format(format);
  if (!f)
    throw InvalidArgument("format", format, "expected int4-g128, int4-g128-zp, int8 or mxfp4");
  const PackedWeight p = autogemm::quantize_weight(w.data(), int64_t(w.shape(0)), int64_t(w.shape(1)), *f);
  auto bytes = [](const std::vector<uint8_t>& v) {
    return nb::bytes(reinterpret_cast<const char*>(v.data()), v.size());
  };
  return nb::make_tuple(bytes(p.q), bytes(p.scales), bytes(p.zeros));
}

nb::bytes dequantize_weight(nb::bytes q, nb::bytes scales, nb::bytes zeros,
                            const std::string& format, int64_t n, int64_t k) {
  const std::optional<WeightFormat> f = parse_weight_format(format);
  if (!f)
    throw InvalidArgument("format", format, "expected int4-g128, int4-g128-zp, int8 or mxfp4");
  PackedWeight p;
  p.format = *f;
  p.n = n;
  p.k = k;
  auto vec = [](const nb::bytes& b) {
    const auto* c = reinterpret_cast<const uint8_t*>(b.c_str());
    return std::vector<uint8_t>(c, c + b.size());
  };
  p.q = vec(q);
  p.scales = vec(scales);
  p.zeros = vec(zeros);
  validate(p);
  const std::vector<float> w = autogemm::dequantize_weight(p);
  return nb::bytes(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
}

namespace {

// A host array of exactly `bits`-bit integers, packed row-major with `dims` dimensions.
ArrayView host_integers(const char* name, nb::handle object, int bits, size_t dims,
                        const char* shape_words) {
  ArrayView v = import_array(name, object, false);
  if (v.device_type != kDLCPU)
    throw InvalidArgument(name, "a GPU array",
                          "checkpoint tensors are read on the host: pass them before moving "
                          "them to the GPU (or .cpu())");
  const bool integer = v.dtype.code == uint8_t(nb::dlpack::dtype_code::Int) ||
                       v.dtype.code == uint8_t(nb::dlpack::dtype_code::UInt);
  if (!integer || v.dtype.bits != bits)
    throw InvalidArgument(name, v.dtype_text(),
                          fmt::format("must hold {}-bit integers (the checkpoint's own dtype; "
                                      "fp16 scales as their uint16 bits)",
                                      bits));
  require_packed_dims(v, dims, shape_words);
  return v;
}

nb::bytes as_bytes(const std::vector<uint8_t>& v) {
  return nb::bytes(reinterpret_cast<const char*>(v.data()), v.size());
}

}  // namespace

nb::tuple import_weight(const std::string& kind, nb::handle qweight, nb::handle qzeros,
                        nb::handle scales, int64_t group_size) {
  PackedWeight p;
  if (kind == "gptq" || kind == "awq") {
    const bool gptq = kind == "gptq";
    const ArrayView q = host_integers("qweight", qweight, 32, 2, gptq ? "(K/8, N)" : "(K, N/8)");
    const ArrayView z = host_integers("qzeros", qzeros, 32, 2, "(K/G, N/8)");
    const ArrayView s = host_integers("scales", scales, 16, 2, "(K/G, N)");
    const int64_t n = gptq ? q.shape[1] : q.shape[1] * 8;
    const int64_t k = gptq ? q.shape[0] * 8 : q.shape[0];
    if (group_size < 1 || k % group_size != 0)
      throw InvalidArgument("group_size", std::to_string(group_size),
                            fmt::format("must divide K = {}", k));
    const std::vector<int64_t> want_z = {k / group_size, n / 8}, want_s = {k / group_size, n};
    if (z.shape != want_z)
      throw InvalidArgument("qzeros", fmt::format("an array of shape {}", z.shape_text()),
                            fmt::format("must be {} for N = {}, K = {}", shape_text(want_z), n, k));
    if (s.shape != want_s)
      throw InvalidArgument("scales", fmt::format("an array of shape {}", s.shape_text()),
                            fmt::format("must be {} for N = {}, K = {}", shape_text(want_s), n, k));
    const auto* qp = static_cast<const int32_t*>(q.data);
    const auto* zp = static_cast<const int32_t*>(z.data);
    const auto* sp = static_cast<const uint16_t*>(s.data);
    p = gptq ? import_gptq(qp, zp, sp, n, k, group_size) : import_awq(qp, zp, sp, n, k, group_size);
  } else if (kind == "mxfp4") {
    const ArrayView b = host_integers("blocks", qweight, 8, 3, "(N, K/32, 16)");
    const ArrayView s = host_integers("scales", scales, 8, 2, "(N, K/32)");
    if (b.shape[2] != 16)
      throw InvalidArgument("blocks", fmt::format("an array of shape {}", b.shape_text()),
                            "gpt-oss MXFP4 blocks are (N, K/32, 16): 32 values in 16 bytes");
    const int64_t n = b.shape[0], k = b.shape[1] * 32;
    if (s.shape != std::vector<int64_t>{n, k / 32})
      throw InvalidArgument("scales", fmt::format("an array of shape {}", s.shape_text()),
                            fmt::format("must be ({}, {}): one e8m0 per 32 values", n, k / 32));
    p = import_mxfp4(static_cast<const uint8_t*>(b.data), static_cast<const uint8_t*>(s.data), n,
                     k);
  } else {
    throw InvalidArgument("kind", kind, "expected gptq, awq or mxfp4");
  }
  return nb::make_tuple(std::string(to_string(p.format)), p.n, p.k, as_bytes(p.q),
                        as_bytes(p.scales), as_bytes(p.zeros));
}

}  // namespace autogemm::python
