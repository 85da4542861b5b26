// grouped_gemm() from Python arrays (include/autogemm/grouped.hpp): the layout follows from
// which group array is given (group_index: contiguous, masked_m: masked); the inputs' dtype
// picks 16-bit or block-scaled FP8 (e4m3 with a_scales and b_scales), a weight format packed
// experts (masked only); every argument is checked before the output is allocated or anything
// is launched.
#include "grouped_call.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <tuple>
#include <utility>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"
#include "autogemm/quantize.hpp"
#include "weight_arrays.hpp"

namespace autogemm::python {

namespace {

// An input's element type: torch FP8 tensors arrive as uint8 views with `bytes` saying what
// they hold (autogemm/__init__.py _fp8_bytes); other uint8 arrays (CuPy) are read as e4m3.
std::optional<DType> input_type(const ArrayView& v, const std::optional<std::string>& bytes) {
  return element_type(v, bytes == "e5m2" ? DType::e5m2 : DType::e4m3);
}

std::string input_type_text(const ArrayView& v, const std::optional<std::string>& bytes) {
  if (!bytes) return v.dtype_text();
  return *bytes == "e5m2" ? "float8_e5m2" : "float8_e4m3fn";
}

}  // namespace

GroupedResult grouped_gemm_call(const GroupedRequest& r) {
  const bool masked = !r.masked_m.is_none();
  if (masked == !r.group_index.is_none())
    throw InvalidArgument(masked ? "group_index" : "group_index / masked_m",
                          masked ? "given with masked_m" : "None",
                          "give exactly one: group_index (contiguous layout, one int32 per row "
                          "of a) or masked_m (masked layout, one int32 per group)");
  const ArrayView a = import_array("a", r.a, false);
  const ArrayView b = import_array("b", r.b, false);
  const ArrayView groups = import_array(masked ? "masked_m" : "group_index",
                                        masked ? r.masked_m : r.group_index, false);
  require_packed_dims(b, 3, "(groups, N, K)");
  require_packed_dims(a, masked ? 3 : 2, masked ? "(groups, max_m, K)" : "(M, K)");
  require_packed_dims(groups, 1, masked ? "(groups,)" : "(M,)");

  GemmProblem p;
  p.grouping = masked ? Grouping::masked : Grouping::contiguous;
  p.num_groups = b.shape[0];
  p.n = b.shape[1];
  p.k = b.shape[2];
  p.m = masked ? a.shape[1] : a.shape[0];
  // A packed weight per expert (quantize_weight of a (groups, N, K) weight): bfloat16
  // activations in the masked layout, the values as bytes, their own scales and zeros.
  std::optional<WeightArrays> weight;
  const bool fp8 = !r.weight_format && input_type(a, r.a_bytes) == DType::e4m3;
  if (r.weight_format) {
    const WeightFormat f = parse_weight_format_arg(*r.weight_format);
    if (!masked)
      throw InvalidArgument("group_index", "given",
                            "grouped GEMM with a packed weight takes the masked layout "
                            "(masked_m): a MoE decode step's tokens per expert");
    if (element_type(a) != DType::bf16)
      throw InvalidArgument("a", a.dtype_text(), "a packed weight multiplies bfloat16 activations");
    check_weight_values(b);
    for (auto [name, scales] : {std::pair{"a_scales", r.a_scales}, std::pair{"b_scales", r.b_scales}})
      if (!scales.is_none())
        throw InvalidArgument(name, "an array",
                              "FP8's block scales: a packed weight carries its own (its scales)");
    p.k = a.shape.back();
    const int64_t per_byte = f == WeightFormat::int8_channel ? 1 : 2;
    if (b.shape[2] * per_byte != p.k)
      throw InvalidArgument("b", fmt::format("an array of shape {}", b.shape_text()),
                            fmt::format("every expert's packed {} weight of K = {} (a is {}) has "
                                        "{} bytes a row: (groups, N, {})",
                                        *r.weight_format, p.k, a.shape_text(), p.k / per_byte,
                                        p.k / per_byte));
    p.weight_format = f;
    p.a_type = p.b_type = p.d_type = DType::bf16;
    if (r.out_dtype) p.d_type = parse_out_dtype(*r.out_dtype);
    weight = import_weight_scales(f, r.weight_scales, r.weight_zeros, {p.num_groups}, p.n, p.k);
  } else {
    // Types: bfloat16 / float16, or FP8 (e4m3, block-scaled: the scales are required).
    const std::optional<DType> a_type = input_type(a, r.a_bytes), b_type = input_type(b, r.b_bytes);
    const std::string a_text = input_type_text(a, r.a_bytes), b_text = input_type_text(b, r.b_bytes);
    for (auto [view, type, text] : {std::tuple{&a, a_type, a_text}, std::tuple{&b, b_type, b_text}})
      if (type == DType::e5m2)
        throw InvalidArgument(view->name, text,
                              "grouped_gemm's FP8 is e4m3 (float8_e4m3fn, or uint8 bytes read as "
                              "e4m3; quantize_fp8 makes them): e5m2 is not supported");
    if (!fp8 && a_type != DType::bf16 && a_type != DType::fp16)
      throw InvalidArgument("a", a_text,
                            "grouped_gemm takes bfloat16 or float16 arrays, or FP8 e4m3 "
                            "(float8_e4m3fn, or uint8 bytes) with a_scales and b_scales");
    if (b_type != a_type)
      throw InvalidArgument("b", b_text,
                            fmt::format("must have a's dtype, {}{}", a_text,
                                        fp8 ? " (FP8 e4m3: float8_e4m3fn or uint8 bytes)" : ""));
    for (auto [name, scales] :
         {std::pair{"a_scales", r.a_scales}, std::pair{"b_scales", r.b_scales}}) {
      if (fp8 && scales.is_none())
        throw InvalidArgument(name, "None",
                              "FP8 inputs need block scales: a_scales (1x128, quantize_fp8(a, "
                              "(1, 128))) and b_scales (128x128 per group, quantize_fp8(b[g], "
                              "(128, 128)))");
      if (!fp8 && !scales.is_none()) {
        const ArrayView v = import_array(name, scales, false);
        throw InvalidArgument(name, fmt::format("a {} array of shape {}", v.dtype_text(),
                                                v.shape_text()),
                              fmt::format("scales apply to FP8 inputs only, and a is {} (pass "
                                          "{} = None)",
                                          a_text, name));
      }
    }
    p.a_type = p.b_type = *a_type;
    if (fp8) p.scaling = Scaling::block_1x128_128x128;
    p.d_type = fp8 ? DType::bf16 : *a_type;
    if (r.out_dtype) p.d_type = parse_out_dtype(*r.out_dtype);
  }
  if (a.shape.back() != p.k)
    throw InvalidArgument("a", fmt::format("an array of shape {}", a.shape_text()),
                          fmt::format("its last dimension must be b's K = {}", p.k));
  if (masked && a.shape[0] != p.num_groups)
    throw InvalidArgument("a", fmt::format("an array of shape {}", a.shape_text()),
                          fmt::format("must have b's {} groups first", p.num_groups));
  if (groups.dtype.code != uint8_t(nb::dlpack::dtype_code::Int) || groups.dtype.bits != 32)
    throw InvalidArgument(groups.name, groups.dtype_text(), "must be int32");
  const int64_t want_groups_len = masked ? p.num_groups : p.m;
  if (groups.shape[0] != want_groups_len)
    throw InvalidArgument(groups.name, fmt::format("an array of shape {}", groups.shape_text()),
                          fmt::format("must have {} entries ({})", want_groups_len,
                                      masked ? "one per group" : "one per row of a"));
  p.expected_m = r.expected_m;

  // The fused epilogue's vectors, per group (grouped.hpp): their shapes, types and packing.
  if (r.activation) {
    std::string name = *r.activation;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    const std::optional<Activation> act = parse_activation(name);
    if (!act)
      throw InvalidArgument("activation", *r.activation,
                            "expected None, \"relu\", \"gelu_tanh\" (\"gelu\"), \"gelu_erf\" or "
                            "\"silu\"");
    p.epilogue.activation = *act;
  }
  const auto vector = [&](const char* name, nb::handle object, std::vector<int64_t> want,
                          const char* words) -> std::optional<ArrayView> {
    if (!object.ptr() || object.is_none()) return std::nullopt;
    ArrayView v = import_array(name, object, false);
    if (v.shape != want)
      throw InvalidArgument(name, fmt::format("an array of shape {}", v.shape_text()),
                            fmt::format("must have shape {} = {}", words, shape_text(want)));
    require_packed_dims(v, want.size(), words);
    return v;
  };
  const std::optional<ArrayView> bias = vector("bias", r.bias, {p.num_groups, p.n}, "(groups, N)");
  const std::optional<ArrayView> col_scale =
      vector("col_scale", r.col_scale, {p.num_groups, p.n}, "(groups, N)");
  const std::optional<ArrayView> row_scale =
      masked ? vector("row_scale", r.row_scale, {p.num_groups, p.m}, "(groups, max_m)")
             : vector("row_scale", r.row_scale, {p.m}, "(M,)");
  if (bias) {
    const std::optional<DType> t = element_type(*bias);
    if (t != DType::bf16 && t != DType::fp32)
      throw InvalidArgument("bias", bias->dtype_text(), "must be bfloat16 or float32");
    p.epilogue.bias = *t;
  }
  for (const std::optional<ArrayView>* v : {&row_scale, &col_scale})
    if (*v && element_type(**v) != DType::fp32)
      throw InvalidArgument((*v)->name, (*v)->dtype_text(), "scales must be float32");
  p.epilogue.row_scale = row_scale.has_value();
  p.epilogue.col_scale = col_scale.has_value();
  p.epilogue.gated = r.gated;
  validate(p);

  // FP8 scales (grouped.hpp): A one per stored row per 128 of K, B one per 128 x 128 block
  // of each group.
  std::optional<ArrayView> a_scales, b_scales;
  if (fp8) {
    a_scales = import_array("a_scales", r.a_scales, false);
    b_scales = import_array("b_scales", r.b_scales, false);
    const int64_t kb = (p.k + kFp8ScaleGroup - 1) / kFp8ScaleGroup;
    const int64_t n_blocks = (p.n + kFp8ScaleGroup - 1) / kFp8ScaleGroup;
    const char* a_meaning = "one scale per row of a per 128 of K (1x128 blocks)";
    if (masked)
      check_block_scales(*a_scales, {p.num_groups, p.m, kb}, "(groups, max_m, ceil(K/128))",
                         a_meaning,
                         fmt::format("groups = {}, max_m = {}, K = {}", p.num_groups, p.m, p.k));
    else
      check_block_scales(*a_scales, {p.m, kb}, "(M, ceil(K/128))", a_meaning,
                         fmt::format("M = {}, K = {}", p.m, p.k));
    check_block_scales(*b_scales, {p.num_groups, n_blocks, kb},
                       "(groups, ceil(N/128), ceil(K/128))",
                       "one scale per 128x128 block of each group's B",
                       fmt::format("groups = {}, N = {}, K = {}", p.num_groups, p.n, p.k));
  }

  GemmOptions options;
  if (r.config) options.config = GemmConfig::parse(*r.config);

  // The output, (M, N) or (groups, max_m, N), N / 2 columns gated: the caller's (its dtype is
  // D's unless out_dtype names another), else allocated only after everything else passed.
  const int64_t d_cols = p.d_cols();
  const std::vector<int64_t> want_shape =
      masked ? std::vector<int64_t>{p.num_groups, p.m, d_cols} : std::vector<int64_t>{p.m, d_cols};
  std::optional<ArrayView> out;
  if (!r.out.is_none()) {
    out = import_array("out", r.out, true);
    if (out->shape != want_shape)
      throw InvalidArgument("out", fmt::format("an array of shape {}", out->shape_text()),
                            fmt::format("must have shape {}", shape_text(want_shape)));
    require_packed_dims(*out, want_shape.size(), masked ? "(groups, max_m, N)" : "(M, N)");
    const std::optional<DType> d = element_type(*out);
    if (!r.out_dtype && (d == DType::bf16 || d == DType::fp16 || d == DType::fp32))
      p.d_type = *d;
    if (d != p.d_type)
      throw InvalidArgument("out", out->dtype_text(),
                            r.out_dtype ? fmt::format("must have out_dtype's dtype, {}",
                                                      python_dtype(p.d_type))
                                        : std::string("must be bfloat16, float16 or float32"));
  }
  const ArrayView* sa = a_scales ? &*a_scales : nullptr;
  const ArrayView* sb = b_scales ? &*b_scales : nullptr;
  const ArrayView* vb = bias ? &*bias : nullptr;
  const ArrayView* vr = row_scale ? &*row_scale : nullptr;
  const ArrayView* vc = col_scale ? &*col_scale : nullptr;
  const ArrayView* ws = weight ? &*weight->scales : nullptr;
  const ArrayView* wz = weight && weight->zeros ? &*weight->zeros : nullptr;
  int device = common_cuda_device({&a, &b, &groups, out ? &*out : nullptr, sa, sb, vb, vr, vc, ws, wz});
  if (!out) {
    if (r.alloc.is_none())
      throw InvalidArgument("out", "None",
                            "autogemm allocates outputs for torch and CuPy inputs only: pass out=");
    out = import_array("out", r.alloc(p.stored_rows(), d_cols, python_dtype(p.d_type)), true);
    require_packed_dims(*out, 2, "(rows, N)");
    if (element_type(*out) != p.d_type)
      throw InvalidArgument("out", out->dtype_text(),
                            fmt::format("must have dtype {}", python_dtype(p.d_type)));
    device = common_cuda_device({&a, &b, &groups, &*out, sa, sb, vb, vr, vc, ws, wz});
  }

  GroupedOperands ops;
  ops.a = a.data;
  ops.b = b.data;
  ops.d = out->data;
  ops.alpha = r.alpha;
  if (fp8) {
    ops.scale_a = static_cast<const float*>(a_scales->data);
    ops.scale_b = static_cast<const float*>(b_scales->data);
  }
  if (ws) ops.b_scales = ws->data;
  if (wz) ops.b_zeros = wz->data;
  (masked ? ops.masked_m : ops.group_index) = static_cast<const int32_t*>(groups.data);
  if (bias) ops.bias = bias->data;
  if (row_scale) ops.row_scale = static_cast<const float*>(row_scale->data);
  if (col_scale) ops.col_scale = static_cast<const float*>(col_scale->data);
  GemmReport report;
  {
    DeviceGuard guard(device);
    nb::gil_scoped_release release;
    report = grouped_gemm(p, ops, reinterpret_cast<cudaStream_t>(r.stream), options);
  }
  return {out->source, report};
}

}  // namespace autogemm::python
