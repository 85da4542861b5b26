// grouped_gemm() from Python arrays (include/autogemm/grouped.hpp): the layout follows from
// which group array is given (group_index: contiguous, masked_m: masked); every argument is
// checked before the output is allocated or anything is launched.
#include "grouped_call.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"

namespace autogemm::python {

namespace {

// A packed row-major array of exactly `dims` dimensions (the grouped operands have no padding).
void require_packed_dims(const ArrayView& v, size_t dims, const char* shape_words) {
  if (v.shape.size() != dims)
    throw InvalidArgument(v.name, fmt::format("a {}-D array of shape {}", v.shape.size(),
                                              v.shape_text()),
                          fmt::format("must be {}-D: {}", dims, shape_words));
  int64_t expected = 1;
  for (size_t i = dims; i-- > 0;) {
    if (v.shape[i] > 1 && v.strides[i] != expected)
      throw InvalidArgument(v.name, fmt::format("shape {} with strides {} (elements)",
                                                v.shape_text(), v.strides_text()),
                            "must be packed row-major (x.contiguous())");
    expected *= v.shape[i];
  }
}

const char* out_dtype_name(DType t) {
  return t == DType::bf16 ? "bfloat16" : t == DType::fp16 ? "float16" : "float32";
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
  const std::optional<DType> a_type = element_type(a), b_type = element_type(b);
  if (a_type != DType::bf16 && a_type != DType::fp16)
    throw InvalidArgument("a", a.dtype_text(), "grouped_gemm takes bfloat16 or float16 arrays");
  if (b_type != a_type)
    throw InvalidArgument("b", b.dtype_text(), fmt::format("must have a's dtype, {}", a.dtype_text()));
  p.a_type = p.b_type = *a_type;
  p.d_type = *a_type;
  if (r.out_dtype) {
    const std::optional<DType> t = parse_dtype(*r.out_dtype == "float32" ? "fp32" : *r.out_dtype);
    if (!t || !(*t == DType::bf16 || *t == DType::fp16 || *t == DType::fp32))
      throw InvalidArgument("out_dtype", *r.out_dtype, "must be bf16, fp16 or fp32");
    p.d_type = *t;
  }
  if (a.shape.back() != p.k)
    throw InvalidArgument("a", fmt::format("an array of shape {}", a.shape_text()),
                          fmt::format("its last dimension must be b's K = {}", p.k));
  if (masked && a.shape[0] != p.num_groups)
    throw InvalidArgument("a", fmt::format("an array of shape {}", a.shape_text()),
                          fmt::format("must have b's {} groups first", p.num_groups));
  const std::optional<DType> group_type = element_type(groups);
  if (groups.dtype.code != uint8_t(nb::dlpack::dtype_code::Int) || groups.dtype.bits != 32)
    throw InvalidArgument(groups.name, groups.dtype_text(), "must be int32");
  (void)group_type;
  const int64_t want_groups_len = masked ? p.num_groups : p.m;
  if (groups.shape[0] != want_groups_len)
    throw InvalidArgument(groups.name, fmt::format("an array of shape {}", groups.shape_text()),
                          fmt::format("must have {} entries ({})", want_groups_len,
                                      masked ? "one per group" : "one per row of a"));
  p.expected_m = r.expected_m;
  validate(p);

  // The output, (M, N) or (groups, max_m, N), only after everything else passed.
  std::optional<ArrayView> out;
  if (!r.out.is_none()) {
    out = import_array("out", r.out, true);
  } else {
    if (r.alloc.is_none())
      throw InvalidArgument("out", "None",
                            "autogemm allocates outputs for torch and CuPy inputs only: pass out=");
    out = import_array("out", r.alloc(p.stored_rows(), p.n, out_dtype_name(p.d_type)), true);
  }
  const std::vector<int64_t> want_shape =
      masked ? std::vector<int64_t>{p.num_groups, p.m, p.n} : std::vector<int64_t>{p.m, p.n};
  if (r.out.is_none()) {
    require_packed_dims(*out, 2, "(rows, N)");
  } else {
    if (out->shape != want_shape)
      throw InvalidArgument("out", fmt::format("an array of shape {}", out->shape_text()),
                            fmt::format("must have shape ({})", fmt::join(want_shape, ", ")));
    require_packed_dims(*out, want_shape.size(), masked ? "(groups, max_m, N)" : "(M, N)");
  }
  if (element_type(*out) != p.d_type)
    throw InvalidArgument("out", out->dtype_text(),
                          fmt::format("must have dtype {}", out_dtype_name(p.d_type)));
  const int device = common_cuda_device({&a, &b, &groups, &*out});

  GroupedOperands ops;
  ops.a = a.data;
  ops.b = b.data;
  ops.d = out->data;
  ops.alpha = r.alpha;
  (masked ? ops.masked_m : ops.group_index) = static_cast<const int32_t*>(groups.data);
  GemmOptions options;
  if (r.config) options.config = GemmConfig::parse(*r.config);
  GemmReport report;
  {
    DeviceGuard guard(device);
    nb::gil_scoped_release release;
    report = grouped_gemm(p, ops, reinterpret_cast<cudaStream_t>(r.stream), options);
  }
  return {out->source, report};
}

}  // namespace autogemm::python
