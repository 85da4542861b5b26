// grouped_wgrad() from Python arrays (include/autogemm/wgrad.hpp grouped_weight_gradient): dY
// (T, N) and X (T, K) token-major, the groups' runs of tokens as group_ends, dW (groups, N, K)
// float32 (the problem's m = N, n = K, k = T). group_ends arrive either as a device int32 array
// (used as is: no copy, no host synchronisation, CUDA-graph capturable; the kernel clamps them
// as wgrad.hpp says) or as host integers, which check_group_ends() checks and this file copies
// to the device. Every argument
// is checked before anything is allocated, copied or launched.
#include "wgrad_call.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <span>
#include <utility>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"
#include "autogemm/wgrad.hpp"

namespace autogemm::python {

namespace {

using Code = nb::dlpack::dtype_code;

// What autogemm/__init__.py passes (it has split host ends from device ones, resolved the
// stream and picked the allocator).
struct WgradRequest {
  nb::handle dy, x, out;
  nb::handle group_ends;                           // a device array, or None with host_ends
  std::optional<std::vector<int64_t>> host_ends;   // ends the caller knows on the host
  bool accumulate = true;
  int64_t expected_tokens = 0;
  std::optional<std::string> config;
  int autotune = -1;
  uintptr_t stream = 0;         // the stream the call runs on
  // The stream alloc's arrays are ordered on (the framework's current stream): torch's caching
  // allocator and CuPy's memory pool hand a freed block only to later work of that stream.
  uintptr_t alloc_stream = 0;
  nb::handle alloc;             // callable(rows, cols, dtype) -> array (float32 zeroed), or None
};

bool is_int32(const ArrayView& v) {
  return v.dtype.code == uint8_t(Code::Int) && v.dtype.bits == 32 && v.dtype.lanes == 1;
}

// dY and X: packed 2-D arrays of one 16-bit type and the same tokens.
struct Inputs {
  ArrayView dy, x;
  DType type = DType::bf16;
};

Inputs import_inputs(const WgradRequest& r) {
  Inputs in{import_array("dy", r.dy, false), import_array("x", r.x, false)};
  require_packed_dims(in.dy, 2, "(tokens, N)");
  require_packed_dims(in.x, 2, "(tokens, K)");
  const std::optional<DType> type = element_type(in.dy);
  if (type != DType::bf16 && type != DType::fp16)
    throw InvalidArgument("dy", in.dy.dtype_text(),
                          "weight gradients take bfloat16 or float16 dy and x");
  if (element_type(in.x) != type)
    throw InvalidArgument("x", in.x.dtype_text(),
                          fmt::format("must have dy's dtype, {}", in.dy.dtype_text()));
  if (in.x.shape[0] != in.dy.shape[0])
    throw InvalidArgument("x", fmt::format("an array of shape {}", in.x.shape_text()),
                          fmt::format("must have dy's {} tokens (rows): dy is {}",
                                      in.dy.shape[0], in.dy.shape_text()));
  in.type = *type;
  return in;
}

// A device group_ends: int32, one per group, packed. Host ends are None here.
std::optional<ArrayView> import_device_ends(const WgradRequest& r) {
  if (r.host_ends) return std::nullopt;
  ArrayView v = import_array("group_ends", r.group_ends, false);
  if (!is_int32(v))
    throw InvalidArgument("group_ends", v.dtype_text(),
                          "a device array of group ends must be int32, one per group (host ends "
                          "of any integer type are converted)");
  require_packed_dims(v, 1, "(groups,)");
  return v;
}

int64_t group_count(const WgradRequest& r, const std::optional<ArrayView>& device_ends) {
  const int64_t groups = r.host_ends ? int64_t(r.host_ends->size()) : device_ends->shape[0];
  if (groups < 1)
    throw InvalidArgument("group_ends", "0 entries",
                          "needs one end per group, and at least one group");
  return groups;
}

// The problem, its sizes checked first under the names Python passed them as.
GemmProblem grouped_problem(const Inputs& in, int64_t groups, const WgradRequest& r) {
  const int64_t tokens = in.dy.shape[0], m = in.dy.shape[1], n = in.x.shape[1];
  if (tokens < 1)
    throw InvalidArgument("dy", fmt::format("an array of shape {}", in.dy.shape_text()),
                          "must have at least one token (row)");
  if (m % kKGroupedRowMultiple != 0)
    throw InvalidArgument("dy", fmt::format("an array of shape {}", in.dy.shape_text()),
                          fmt::format("grouped weight gradients store each group's N = {} rows "
                                      "of dW as whole {}-row tiles: N (dy's columns) must be a "
                                      "multiple of {}",
                                      m, kKGroupedRowMultiple, kKGroupedRowMultiple));
  return grouped_weight_gradient_problem(tokens, m, n, groups, in.type, r.accumulate,
                                         DType::fp32, r.expected_tokens);
}

// The caller's dW: writable float32 (groups, N, K), packed (N: dy's columns, K: x's).
std::optional<ArrayView> import_out(const WgradRequest& r, const GemmProblem& p) {
  if (r.out.is_none()) return std::nullopt;
  ArrayView out = import_array("out", r.out, true);
  const std::vector<int64_t> want = {p.num_groups, p.m, p.n};
  if (out.shape != want)
    throw InvalidArgument("out", fmt::format("an array of shape {}", out.shape_text()),
                          fmt::format("must be dW of shape (groups, N, K) = {}", shape_text(want)));
  if (element_type(out) != DType::fp32)
    throw InvalidArgument("out", out.dtype_text(), "a weight gradient accumulates in float32");
  require_packed_dims(out, 3, "(groups, N, K)");
  return out;
}

// An array from the Python allocator (torch or CuPy, like dy), checked to be what was asked.
ArrayView allocate(const WgradRequest& r, const char* name, int64_t rows, int64_t cols,
                   const char* dtype, bool want_float32) {
  ArrayView v = import_array(name, r.alloc(rows, cols, dtype), true);
  require_packed_dims(v, 2, "(rows, cols)");
  if (want_float32 ? element_type(v) != DType::fp32 : !is_int32(v))
    throw InvalidArgument(name, v.dtype_text(), fmt::format("the allocator must make {}", dtype));
  return v;
}

void require_allocator(const WgradRequest& r, const char* name, const char* value,
                       const char* what) {
  if (r.alloc.is_none())
    throw InvalidArgument(name, value,
                          fmt::format("autogemm allocates {} for torch and CuPy inputs only", what));
}

// Host ends are copied when the call is made, which a CUDA graph would not repeat.
void refuse_host_ends_under_capture(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cuda_check(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
  if (status != cudaStreamCaptureStatusNone)
    throw InvalidArgument("group_ends", "host values",
                          "the stream is capturing a CUDA graph, which would replay the ends of "
                          "this call: pass group_ends as a CUDA int32 array");
}

// Makes `later` wait for the work enqueued so far on `earlier` (nothing when they are one).
void order_after(cudaStream_t later, cudaStream_t earlier) {
  if (later == earlier) return;
  cudaEvent_t event = nullptr;
  cuda_check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  const cudaError_t recorded = cudaEventRecord(event, earlier);
  const cudaError_t waited =
      recorded == cudaSuccess ? cudaStreamWaitEvent(later, event, 0) : recorded;
  (void)cudaEventDestroy(event);   // released once the recorded work completes
  cuda_check(waited, "cudaEventRecord / cudaStreamWaitEvent");
}

// While it lives, arrays allocated on `alloc_stream` may be used on `stream`: the call's
// stream first waits for the allocation stream (a zero fill of dW), and at the end the
// allocation stream waits for the call, so a block freed there afterwards is not reused
// before the call has read it. Nothing to do when the two streams are one (the usual case).
class StreamJoin {
 public:
  StreamJoin(cudaStream_t stream, cudaStream_t alloc_stream, bool allocated)
      : stream_(stream), alloc_stream_(alloc_stream), active_(allocated) {
    if (active_) order_after(stream_, alloc_stream_);
  }
  ~StreamJoin() {
    if (!active_) return;
    try {
      order_after(alloc_stream_, stream_);
    } catch (const CudaError&) {   // a failing call has already raised its own error
    }
  }
  StreamJoin(const StreamJoin&) = delete;
  StreamJoin& operator=(const StreamJoin&) = delete;

 private:
  cudaStream_t stream_, alloc_stream_;
  bool active_;
};

// Host ends (checked: 0 <= each <= tokens) as int32 on the device, enqueued on `stream`. A
// copy from pageable host memory has read its source when cudaMemcpyAsync returns, so the
// vector may go right after.
void upload_ends(const std::vector<int64_t>& ends, void* device, cudaStream_t stream) {
  const std::vector<int32_t> values(ends.begin(), ends.end());
  cuda_check(cudaMemcpyAsync(device, values.data(), values.size() * sizeof(int32_t),
                             cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync (group_ends)");
}

nb::object report_tuple(const GemmReport& report, bool want_report) {
  if (!want_report) return nb::none();
  return nb::make_tuple(report.config.describe(), report.used_vendor, report.reason);
}

nb::tuple grouped_wgrad_call(const WgradRequest& r, bool want_report) {
  if (r.autotune > 0)
    throw InvalidArgument("autotune", std::to_string(r.autotune),
                          "grouped weight gradients run the planner's choice or config=: timing "
                          "candidates would need the groups' sizes, which live on the device");
  GemmOptions options;
  if (r.config) options.config = GemmConfig::parse(*r.config);
  const Inputs in = import_inputs(r);
  std::optional<ArrayView> ends = import_device_ends(r);
  const GemmProblem problem = grouped_problem(in, group_count(r, ends), r);
  if (r.host_ends) check_group_ends(problem, std::span<const int64_t>(*r.host_ends));
  std::optional<ArrayView> out = import_out(r, problem);
  const int device = common_cuda_device({&in.dy, &in.x, ends ? &*ends : nullptr,
                                         out ? &*out : nullptr});
  const auto stream = reinterpret_cast<cudaStream_t>(r.stream);
  DeviceGuard guard(device);
  if (r.host_ends) {
    require_allocator(r, "group_ends", "host values", "the device copy of host group ends "
                      "(pass a CUDA int32 array instead)");
    refuse_host_ends_under_capture(stream);
  }
  if (!out) require_allocator(r, "out", "None", "dW: pass out=");
  const bool allocates = r.host_ends || !out;
  if (!out) out = allocate(r, "out", problem.num_groups * problem.m, problem.n, "float32", true);
  if (r.host_ends) ends = allocate(r, "group_ends", 1, problem.num_groups, "int32", false);
  common_cuda_device({&in.dy, &*ends, &*out});
  options.device = device;
  GemmReport report;
  {
    nb::gil_scoped_release release;
    const StreamJoin join(stream, reinterpret_cast<cudaStream_t>(r.alloc_stream), allocates);
    if (r.host_ends) upload_ends(*r.host_ends, ends->data, stream);
    report = grouped_weight_gradient(problem, in.dy.data, in.x.data, out->data,
                                     static_cast<const int32_t*>(ends->data), stream, options);
  }
  return nb::make_tuple(out->source, report_tuple(report, want_report));
}

}  // namespace

void register_wgrad(nb::module_& m) {
  using namespace nb::literals;
  m.def(
      "grouped_wgrad",
      [](nb::handle dy, nb::handle x, nb::handle out, nb::handle group_ends,
         std::optional<std::vector<int64_t>> host_ends, bool accumulate, int64_t expected_tokens,
         std::optional<std::string> config, int autotune, uintptr_t stream,
         uintptr_t alloc_stream, nb::handle alloc, bool want_report) {
        WgradRequest r;
        r.dy = dy;
        r.x = x;
        r.out = out;
        r.group_ends = group_ends;
        r.host_ends = std::move(host_ends);
        r.accumulate = accumulate;
        r.expected_tokens = expected_tokens;
        r.config = std::move(config);
        r.autotune = autotune;
        r.stream = stream;
        r.alloc_stream = alloc_stream;
        r.alloc = alloc;
        return grouped_wgrad_call(r, want_report);
      },
      "dy"_a.none(), "x"_a.none(), "out"_a.none(), "group_ends"_a.none(), "host_ends"_a.none(),
      "accumulate"_a, "expected_tokens"_a, "config"_a.none(), "autotune"_a, "stream"_a,
      "alloc_stream"_a, "alloc"_a.none(), "want_report"_a,
      "Grouped weight gradients: dW[g] (+)= dy_g.T @ x_g for the tokens of each group "
      "(group_ends: a device int32 array, or host_ends checked and copied); returns (out, "
      "report or None).");
}

}  // namespace autogemm::python
