// autogemm._core: the nanobind module under the Python package (python/autogemm/). Thin: the
// Pythonic surface, defaults, framework detection (torch, CuPy), streams and allocation live in
// autogemm/__init__.py; this file turns its arguments into the library's C++ calls.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

#include "autogemm/autogemm.hpp"
#include "binding.hpp"
#include "gemm_call.hpp"
#include "grouped_call.hpp"
#include "schedule_call.hpp"
#include "tp_call.hpp"
#include "wgrad_call.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace autogemm::python {
namespace {

// The GPUs of this machine, measured once per process for plan()'s default and ordinals
// (profile() measures afresh: free memory changes).
const GpuProfile& machine_gpus() {
  static const GpuProfile profile = profile_gpus();
  return profile;
}

bool is_ordinal(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "0", "1", ...: a GPU of this machine; anything else a preset (resolve_device's errors).
GpuInfo resolve(const std::string& spec) {
  if (is_ordinal(spec)) {
    const GpuProfile& gpus = machine_gpus();
    const size_t ordinal = std::stoul(spec);
    if (spec.size() < 6 && ordinal < gpus.gpus.size()) return gpus.gpus[ordinal];
  }
  return resolve_device(spec);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The problem `autogemm plan --dtype` means: bf16/fp16 in and out; fp8 = e4m3 with 1x128 /
// 128x128 block scales and bf16 out.
GemmProblem plan_problem(int64_t m, int64_t n, int64_t k, const std::string& dtype,
                         const std::string& layout, const std::optional<std::string>& out_dtype,
                         int64_t lda, int64_t ldb, int64_t ldd) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  std::string d = lower(dtype);
  if (d == "float16") d = "fp16";
  const std::optional<DType> input = parse_dtype(d);
  if (!input || !(*input == DType::bf16 || *input == DType::fp16 || *input == DType::e4m3 ||
                  *input == DType::e5m2))
    throw InvalidArgument("dtype", dtype, "expected bf16, fp16 or fp8 (e4m3, block-scaled)");
  p.a_type = p.b_type = *input;
  const bool fp8 = *input == DType::e4m3 || *input == DType::e5m2;
  if (fp8) p.scaling = Scaling::block_1x128_128x128;
  p.d_type = fp8 ? DType::bf16 : *input;
  if (out_dtype) {
    std::string o = lower(*out_dtype);
    if (o == "float16") o = "fp16";
    if (o == "float32") o = "fp32";
    const std::optional<DType> t = parse_dtype(o);
    if (!t || !(*t == DType::bf16 || *t == DType::fp16 || *t == DType::fp32))
      throw InvalidArgument("out_dtype", *out_dtype, "must be bf16, fp16 or fp32");
    p.d_type = *t;
  }
  const std::optional<Layout> l = parse_layout(layout);
  if (!l) throw InvalidArgument("layout", layout, "expected nt, nn, tn or tt");
  p.layout = *l;
  p.lda = lda;
  p.ldb = ldb;
  p.ldd = ldd;
  validate(p);
  return p;
}

nb::dict plan_dict(int64_t m, int64_t n, int64_t k, const std::string& dtype,
                   const std::string& layout, const std::optional<std::string>& device,
                   const std::optional<std::string>& out_dtype, int64_t lda, int64_t ldb,
                   int64_t ldd) {
  // The problem first: a bad size is reported before any device query.
  const GemmProblem problem = plan_problem(m, n, k, dtype, layout, out_dtype, lda, ldb, ldd);
  std::string note;
  GpuInfo gpu;
  if (device) {
    gpu = resolve(*device);
  } else if (!machine_gpus().gpus.empty()) {
    gpu = machine_gpus().gpus.front();
  } else {
    const std::string why = machine_gpus().unavailable_reason;
    note = fmt::format("{}; planned for preset h100-sxm (choose with device=)",
                       why.empty() ? "no GPU found" : why);
    gpu = device_preset("h100-sxm");
  }
  Plan plan;
  {
    nb::gil_scoped_release release;
    plan = plan_gemm(problem, gpu);
  }
  nb::list candidates, rejected;
  // Thousands of each for a large problem: (text, time_us, tflops) and (text, rule) only.
  for (const Candidate& c : plan.candidates)
    candidates.append(nb::make_tuple(c.config.describe(), c.prediction.time_us,
                                     c.prediction.tflops));
  for (const RejectedConfig& r : plan.rejected)
    rejected.append(nb::make_tuple(r.config.describe(), r.reason));
  nb::dict out;
  out["problem"] = problem_dict(plan.problem);
  out["device"] = gpu_dict(plan.device);
  out["config"] = config_dict(plan.best().config);
  out["spec"] = spec_dict(plan.spec);
  out["prediction"] = prediction_dict(plan.best().prediction);
  out["path_reason"] = plan.path_reason;
  out["candidates"] = candidates;
  out["rejected"] = rejected;
  out["note"] = note;
  return out;
}

nb::dict profile_dict(const std::optional<std::string>& device) {
  if (device) return gpu_dict(resolve_device(*device));
  CpuInfo cpu;
  GpuProfile gpus;
  {
    nb::gil_scoped_release release;
    cpu = profile_cpu();
    gpus = profile_gpus();
  }
  nb::dict out;
  out["cpu"] = cpu_dict(cpu);
  nb::list list;
  for (const GpuInfo& g : gpus.gpus) list.append(gpu_dict(g));
  out["gpus"] = list;
  if (gpus.gpus.empty()) out["gpu_unavailable_reason"] = gpus.unavailable_reason;
  if (gpus.gpus.size() > 1) {
    nb::list rows;
    for (const auto& row : gpus.peer_access) {
      nb::list r;
      for (bool can : row) r.append(can);
      rows.append(r);
    }
    out["peer_access"] = rows;
  }
  return out;
}

// What gemm() and fp8_gemm() take alike: the output, C, the epilogue and the options.
GemmRequest epilogue_request(nb::handle out, nb::handle c, std::optional<std::string> out_dtype,
                             float alpha, float beta, std::optional<std::string> config,
                             int autotune, bool vendor_fallback, nb::handle alloc,
                             nb::handle bias, std::optional<std::string> activation,
                             nb::handle row_scale, nb::handle col_scale) {
  GemmRequest r;
  r.bias = bias;
  r.row_scale = row_scale;
  r.col_scale = col_scale;
  if (activation) r.activation = *activation;
  r.out = out;
  r.c = c;
  r.out_dtype = std::move(out_dtype);
  r.alpha = alpha;
  r.beta = beta;
  r.config = std::move(config);
  r.autotune = autotune;
  r.vendor_fallback = vendor_fallback;
  r.alloc = alloc;
  return r;
}

nb::object report_or_none(const GemmReport& r, bool want_report);

// Checks the request, runs it on `stream`, returns (out, report or None).
nb::tuple run_request(const GemmRequest& r, uintptr_t stream, bool want_report) {
  PreparedGemm p;
  prepare_gemm(r, p);
  const GemmReport report = run_gemm(p, stream);
  return nb::make_tuple(p.out->source, report_or_none(report, want_report));
}

// (config text, used vendor, reason), or None when the caller did not ask: the texts cost
// about a microsecond a call to build, a fifth of the Python call's budget over C++.
nb::object report_or_none(const GemmReport& r, bool want_report) {
  if (!want_report) return nb::none();
  return nb::make_tuple(r.config.describe(), r.used_vendor, r.reason);
}

}  // namespace
}  // namespace autogemm::python

NB_MODULE(_core, m) {
  using namespace autogemm;
  using namespace autogemm::python;
  m.doc() = "autogemm's C++ library, bound with nanobind. Use the autogemm package, not this.";
  register_exception_translator();

  m.def("set_error_types", &set_error_types, "error"_a, "invalid_argument"_a, "cuda_error"_a,
        "no_device"_a, "Registers the Python classes the C++ exceptions become.");
  m.def("version", &autogemm::version, "The library's version, \"0.1.0\".");
  m.def("device_presets", &device_preset_names, "Names of the GPU presets plan() takes.");
  m.def(
      "parse_config", [](const std::string& text) { return GemmConfig::parse(text).describe(); },
      "text"_a, "Parses a configuration text; returns it as describe() writes it.");
  m.def("profile", &profile_dict, "device"_a = nb::none(),
        "The machine (CPU and every GPU) as `autogemm profile --json`, or one GPU or preset.");
  m.def(
      "load_tuning_file",
      [](const std::string& path) {
        TuningFileLoad load;
        {
          nb::gil_scoped_release release;
          load = load_tuning_file(path);
        }
        nb::dict out;
        out["entries"] = load.entries;
        out["used"] = load.used;
        nb::list ignored;
        for (const std::string& why : load.ignored) ignored.append(why);
        out["ignored"] = ignored;
        return out;
      },
      "path"_a, "Loads a tuning file (autogemm/tuning.hpp); returns entries, used, ignored.");
  m.def("plan", &plan_dict, "m"_a, "n"_a, "k"_a, "dtype"_a, "layout"_a, "device"_a.none(),
        "out_dtype"_a.none(), "lda"_a = 0, "ldb"_a = 0, "ldd"_a = 0,
        "The plan as `autogemm plan --json` gives it, plus 'note', and 'candidates' as "
        "(config, time_us, tflops) and 'rejected' as (config, rule) tuples.");

  m.def(
      "gemm",
      [](nb::handle a, nb::handle b, nb::handle out, nb::handle c, const std::string& layout,
         std::optional<std::string> out_dtype, float alpha, float beta,
         std::optional<std::string> config, int autotune, bool vendor_fallback, uintptr_t stream,
         nb::handle alloc, bool want_report, nb::handle bias,
         std::optional<std::string> activation, nb::handle row_scale, nb::handle col_scale,
         bool gated, nb::handle out_scales, std::optional<std::string> weight_format,
         nb::handle weight_scales, nb::handle weight_zeros) {
        GemmRequest r = epilogue_request(out, c, std::move(out_dtype), alpha, beta,
                                         std::move(config), autotune, vendor_fallback, alloc, bias,
                                         std::move(activation), row_scale, col_scale);
        r.gated = gated;
        r.out_scales = out_scales;
        r.weight_format = std::move(weight_format);
        r.weight_scales = weight_scales;
        r.weight_zeros = weight_zeros;
        r.a = a;
        r.b = b;
        r.a_scales = r.b_scales = nb::none();
        r.layout = layout;
        return run_request(r, stream, want_report);
      },
      "a"_a.none(), "b"_a.none(), "out"_a.none(), "c"_a.none(), "layout"_a, "out_dtype"_a.none(),
      "alpha"_a, "beta"_a, "config"_a.none(), "autotune"_a, "vendor_fallback"_a, "stream"_a,
      "alloc"_a.none(), "want_report"_a, "bias"_a.none() = nb::none(),
      "activation"_a.none() = nb::none(), "row_scale"_a.none() = nb::none(),
      "col_scale"_a.none() = nb::none(), "gated"_a = false, "out_scales"_a.none() = nb::none(),
      "weight_format"_a.none() = nb::none(), "weight_scales"_a.none() = nb::none(),
      "weight_zeros"_a.none() = nb::none(),
      "D = act(alpha * op(a) op(b) * row_scale * col_scale + bias) + beta * C; returns (out, "
      "(config, vendor, reason)). With weight_format, b is a packed weight (N, packed K) and "
      "weight_scales / weight_zeros its scales and zeros (autogemm/weights.hpp).");

  m.def("quantize_weight", &python::quantize_weight, "w"_a, "format"_a,
        "A float32 (N, K) host weight packed into a weight-only format: (values, scales, zeros) "
        "as bytes, in the layouts of autogemm/weights.hpp.");
  m.def("import_weight", &python::import_weight, "kind"_a, "qweight"_a, "qzeros"_a.none(),
        "scales"_a, "group_size"_a,
        "A GPTQ / AWQ / gpt-oss MXFP4 checkpoint layer in autogemm's packed layout: (format, n, "
        "k, q, scales, zeros) bytes.");
  m.def("dequantize_weight", &python::dequantize_weight, "q"_a, "scales"_a, "zeros"_a, "format"_a, "n"_a,
        "k"_a, "The float32 (N, K) values a packed weight stands for, as bytes.");

  m.def(
      "fp8_gemm",
      [](nb::handle a, nb::handle a_scales, nb::handle b, nb::handle b_scales, nb::handle out,
         nb::handle c, std::optional<std::string> a_bytes, std::optional<std::string> b_bytes,
         const std::string& scaling, std::optional<std::string> out_dtype, float alpha,
         float beta, std::optional<std::string> config, int autotune, bool vendor_fallback,
         uintptr_t stream, nb::handle alloc, bool want_report, nb::handle bias,
         std::optional<std::string> activation, nb::handle row_scale, nb::handle col_scale,
         bool gated, nb::handle out_scales) {
        GemmRequest r = epilogue_request(out, c, std::move(out_dtype), alpha, beta,
                                         std::move(config), autotune, vendor_fallback, alloc, bias,
                                         std::move(activation), row_scale, col_scale);
        r.gated = gated;
        r.out_scales = out_scales;
        r.a_name = "a_fp8";
        r.b_name = "b_fp8";
        r.a = a;
        r.b = b;
        r.a_scales = a_scales;
        r.b_scales = b_scales;
        r.a_bytes = std::move(a_bytes);
        r.b_bytes = std::move(b_bytes);
        r.scaling = scaling.empty() ? std::string("?") : scaling;
        return run_request(r, stream, want_report);
      },
      "a"_a.none(), "a_scales"_a.none(), "b"_a.none(), "b_scales"_a.none(), "out"_a.none(),
      "c"_a.none(), "a_bytes"_a.none(), "b_bytes"_a.none(), "scaling"_a, "out_dtype"_a.none(),
      "alpha"_a, "beta"_a, "config"_a.none(), "autotune"_a, "vendor_fallback"_a, "stream"_a,
      "alloc"_a.none(), "want_report"_a, "bias"_a.none() = nb::none(),
      "activation"_a.none() = nb::none(), "row_scale"_a.none() = nb::none(),
      "col_scale"_a.none() = nb::none(), "gated"_a = false, "out_scales"_a.none() = nb::none(),
      "Block-scaled (or per-tensor) FP8 GEMM, layout nt.");

  m.def(
      "time_gemm_enqueues",
      [](nb::handle a, nb::handle b, nb::handle out, int calls, const std::string& layout,
         std::optional<std::string> config, uintptr_t stream) {
        GemmRequest r;
        r.a = a;
        r.b = b;
        r.out = out;
        r.c = r.a_scales = r.b_scales = r.alloc = nb::none();
        r.layout = layout;
        r.config = std::move(config);
        PreparedGemm p;
        prepare_gemm(r, p);
        return time_enqueues(p, stream, calls);
      },
      "a"_a, "b"_a, "out"_a, "calls"_a, "layout"_a, "config"_a.none(), "stream"_a,
      "Host microseconds per C++ autogemm::gemm() call on these arrays, `calls` enqueued back "
      "to back after one untimed call (GemmGpu.HostCostPerCall's measure).");

  m.def(
      "gemm_from_pointers",
      [](int64_t m, int64_t n, int64_t k, const std::string& dtype, const std::string& layout,
         uintptr_t a, uintptr_t b, uintptr_t d, int64_t lda, int64_t ldb, int64_t ldd,
         std::optional<std::string> config, bool vendor_fallback, uintptr_t stream, int device) {
        // The C++ API as a C++ caller writes it, from raw pointers and leading dimensions:
        // the reference the array path is compared with (tests/python/test_gpu.py).
        GemmProblem p;
        p.m = m;
        p.n = n;
        p.k = k;
        const std::optional<DType> t = parse_dtype(dtype);
        if (!t) throw InvalidArgument("dtype", dtype, "expected bf16 or fp16");
        p.a_type = p.b_type = p.d_type = *t;
        const std::optional<Layout> l = parse_layout(layout);
        if (!l) throw InvalidArgument("layout", layout, "expected nt, nn, tn or tt");
        p.layout = *l;
        p.lda = lda;
        p.ldb = ldb;
        p.ldd = ldd;
        GemmOperands ops;
        ops.a = reinterpret_cast<const void*>(a);
        ops.b = reinterpret_cast<const void*>(b);
        ops.d = reinterpret_cast<void*>(d);
        GemmOptions options;
        if (config) options.config = GemmConfig::parse(*config);
        options.allow_vendor_fallback = vendor_fallback;
        options.device = device;
        GemmReport r;
        {
          DeviceGuard guard(device);
          nb::gil_scoped_release release;
          r = gemm(p, ops, reinterpret_cast<cudaStream_t>(stream), options);
        }
        return report_or_none(r, true);
      },
      "m"_a, "n"_a, "k"_a, "dtype"_a, "layout"_a, "a"_a, "b"_a, "d"_a, "lda"_a, "ldb"_a, "ldd"_a,
      "config"_a.none(), "vendor_fallback"_a, "stream"_a, "device"_a,
      "autogemm::gemm() on raw device pointers (16-bit inputs, output of the input type).");

  m.def(
      "grouped_gemm",
      [](nb::handle a, nb::handle b, nb::handle group_index, nb::handle masked_m,
         nb::handle a_scales, nb::handle b_scales, std::optional<std::string> a_bytes,
         std::optional<std::string> b_bytes, nb::handle out, std::optional<std::string> out_dtype,
         float alpha, int64_t expected_m, std::optional<std::string> config, uintptr_t stream,
         nb::handle alloc, bool want_report, nb::handle bias, std::optional<std::string> activation,
         nb::handle row_scale, nb::handle col_scale, bool gated,
         std::optional<std::string> weight_format, nb::handle weight_scales,
         nb::handle weight_zeros) {
        GroupedRequest r;
        r.gated = gated;
        r.weight_format = std::move(weight_format);
        r.weight_scales = weight_scales;
        r.weight_zeros = weight_zeros;
        r.bias = bias;
        r.activation = std::move(activation);
        r.row_scale = row_scale;
        r.col_scale = col_scale;
        r.a = a;
        r.b = b;
        r.group_index = group_index;
        r.masked_m = masked_m;
        r.a_scales = a_scales;
        r.b_scales = b_scales;
        r.a_bytes = std::move(a_bytes);
        r.b_bytes = std::move(b_bytes);
        r.out = out;
        r.out_dtype = std::move(out_dtype);
        r.alpha = alpha;
        r.expected_m = expected_m;
        r.config = std::move(config);
        r.stream = stream;
        r.alloc = alloc;
        const GroupedResult result = grouped_gemm_call(r);
        return nb::make_tuple(result.out, report_or_none(result.report, want_report));
      },
      "a"_a.none(), "b"_a.none(), "group_index"_a.none(), "masked_m"_a.none(),
      "a_scales"_a.none(), "b_scales"_a.none(), "a_bytes"_a.none(), "b_bytes"_a.none(),
      "out"_a.none(), "out_dtype"_a.none(), "alpha"_a, "expected_m"_a, "config"_a.none(),
      "stream"_a, "alloc"_a.none(), "want_report"_a, "bias"_a.none() = nb::none(),
      "activation"_a.none() = nb::none(), "row_scale"_a.none() = nb::none(),
      "col_scale"_a.none() = nb::none(), "gated"_a = false,
      "weight_format"_a.none() = nb::none(), "weight_scales"_a.none() = nb::none(),
      "weight_zeros"_a.none() = nb::none(),
      "Grouped (mixture-of-experts) GEMM, 16-bit, block-scaled FP8 (e4m3) or packed experts' "
      "weights (masked), with the fused epilogue per group; returns (out, report or None).");

  m.def("quantize_fp8", &quantize, "x"_a.none(), "values"_a.none(), "scales"_a.none(),
        "block_rows"_a, "stream"_a, "alloc"_a.none(), "transpose"_a = false,
        "x (bf16/fp32) -> e4m3 values and float32 scales, 1x128 or 128x128 groups (transpose: "
        "x^T's 1x128 groups, along x's rows).");
  m.def("dequantize_fp8", &dequantize, "values"_a.none(), "scales"_a.none(), "block_rows"_a,
        "out"_a.none(), "out_dtype"_a, "stream"_a, "alloc"_a.none(),
        "e4m3 values and their scales -> bf16/fp32.");

  register_tensor_parallel(m);
  register_schedule(m);
  register_wgrad(m);
}
