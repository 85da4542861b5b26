// Arrays from Python: DLPack imports (no copies), their types, shapes, strides and devices.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "autogemm/errors.hpp"
#include "binding.hpp"

namespace autogemm::python {

namespace {

using Code = nb::dlpack::dtype_code;

std::string device_text(int type, int id) {
  switch (type) {
    case kDLCPU: return "on the CPU";
    case kDLCUDA: return fmt::format("on CUDA device {}", id);
    case 3: return "in CUDA pinned host memory";
    case 13: return "in CUDA managed memory";
    case 10: return "on a ROCm device";
    case 8: return "on a Metal device";
    default: return fmt::format("on DLPack device type {}", type);
  }
}

// "numpy.ndarray", "list": how the argument's type reads in Python.
std::string python_type_name(nb::handle h) {
  const nb::handle type = h.type();
  const std::string name = nb::cast<std::string>(nb::str(type.attr("__qualname__")));
  const std::string module = nb::cast<std::string>(nb::str(type.attr("__module__")));
  return module == "builtins" ? name : module + "." + name;
}

}  // namespace

int64_t ArrayView::size() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  if (dims.size() == 1) return fmt::format("({},)", dims[0]);
  return fmt::format("({})", fmt::join(dims, ", "));
}

std::string ArrayView::shape_text() const { return python::shape_text(shape); }

std::string ArrayView::strides_text() const { return python::shape_text(strides); }

std::string ArrayView::dtype_text() const {
  const auto code = static_cast<Code>(dtype.code);
  const int bits = dtype.bits;
  std::string name;
  switch (code) {
    case Code::Int: name = fmt::format("int{}", bits); break;
    case Code::UInt: name = fmt::format("uint{}", bits); break;
    case Code::Float: name = fmt::format("float{}", bits); break;
    case Code::Bfloat: name = fmt::format("bfloat{}", bits); break;
    case Code::Complex: name = fmt::format("complex{}", bits); break;
    case Code::Bool: name = "bool"; break;
    default:
      switch (dtype.code) {
        case 7: name = "float8_e3m4"; break;
        case 8: name = "float8_e4m3"; break;
        case 9: name = "float8_e4m3b11fnuz"; break;
        case 10: name = "float8_e4m3fn"; break;
        case 11: name = "float8_e4m3fnuz"; break;
        case 12: name = "float8_e5m2"; break;
        case 13: name = "float8_e5m2fnuz"; break;
        case 14: name = "float8_e8m0fnu"; break;
        case 17: name = "float4_e2m1fn"; break;
        default: name = fmt::format("DLPack dtype code {} with {} bits", int(dtype.code), bits);
      }
  }
  if (dtype.lanes > 1) name += fmt::format(" x{} lanes", int(dtype.lanes));
  return name;
}

ArrayView import_array(const char* name, nb::handle object, bool writable) {
  ArrayView v;
  v.name = name;
  v.source = nb::borrow(object);
  bool ok = false;
  if (!object.is_none()) {
    if (writable) {
      ok = nb::try_cast(v.source, v.writable, /*convert=*/false);
    } else {
      ok = nb::try_cast(v.source, v.read_only, /*convert=*/false);
    }
  }
  if (!ok) {
    if (object.is_none())
      throw InvalidArgument(name, "None", "must be an array");
    // Writable was asked for and a read-only import works: say so.
    nb::ndarray<nb::ro> probe;
    if (writable && nb::try_cast(v.source, probe, false))
      throw InvalidArgument(name, fmt::format("a read-only {}", python_type_name(object)),
                            "the output must be writable (JAX arrays are immutable: pass a "
                            "torch tensor or a CuPy array as out)");
    throw InvalidArgument(name, python_type_name(object),
                          "must be an array autogemm can read without a copy: one with "
                          "__dlpack__ (torch, CuPy, JAX, NumPy) or the buffer protocol; "
                          "torch tensors that require grad must be detached first");
  }
  auto fill = [&](const auto& array) {
    v.data = const_cast<void*>(static_cast<const void*>(array.data()));
    v.shape.resize(array.ndim());
    v.strides.resize(array.ndim());
    for (size_t i = 0; i < array.ndim(); ++i) {
      v.shape[i] = static_cast<int64_t>(array.shape(i));
      v.strides[i] = array.stride(i);
    }
    v.dtype = array.dtype();
    v.device_type = array.device_type();
    v.device_id = array.device_id();
  };
  if (writable)
    fill(v.writable);
  else
    fill(v.read_only);
  return v;
}

Matrix matrix_of(const ArrayView& v) {
  if (v.shape.size() != 2)
    throw InvalidArgument(v.name, fmt::format("a {}-D array of shape {}", v.shape.size(),
                                              v.shape_text()),
                          "must be a 2-D matrix (batched and vector calls are not supported: "
                          "reshape to 2-D)");
  Matrix m;
  m.array = &v;
  m.label = v.name;
  m.rows = v.shape[0];
  m.cols = v.shape[1];
  m.row_stride = v.strides[0];
  m.col_stride = v.strides[1];
  return m;
}

Matrix transposed(const Matrix& m) {
  Matrix t = m;
  t.label = m.array->name + " (read transposed)";
  std::swap(t.rows, t.cols);
  std::swap(t.row_stride, t.col_stride);
  return t;
}

bool rows_are_contiguous(const Matrix& m) { return m.cols <= 1 || m.col_stride == 1; }

int64_t leading_dimension(const Matrix& m) {
  const ArrayView& v = *m.array;
  if (m.rows == 0 || m.cols == 0) return 0;   // empty: the size rule (m, n, k >= 1) speaks
  if (!rows_are_contiguous(m))
    throw InvalidArgument(
        m.label, fmt::format("shape {} with strides {} (elements)", v.shape_text(),
                             v.strides_text()),
        m.label == v.name
            ? "must be row-major with unit stride along its last dimension; rows may be "
              "padded (stride[0] >= shape[1]), anything else needs a contiguous copy "
              "(x.contiguous(), cupy.ascontiguousarray(x)) or another layout"
            : "must be column-major (a transposed view of a row-major matrix) or row-major "
              "for layout \"auto\"; make a contiguous copy");
  if (m.rows <= 1) return 0;
  if (m.row_stride < std::max<int64_t>(m.cols, 1))
    throw InvalidArgument(
        m.label, fmt::format("shape {} with strides {} (elements)", v.shape_text(),
                             v.strides_text()),
        fmt::format("rows must not overlap or run backwards: the stride between rows ({}) "
                    "must be >= the row length {}",
                    m.row_stride, m.cols));
  return m.row_stride;
}

void require_packed(const Matrix& m) {
  const int64_t ld = leading_dimension(m);
  if (m.rows > 1 && ld != m.cols)
    throw InvalidArgument(m.label, fmt::format("shape {} with strides {} (elements)",
                                               m.array->shape_text(), m.array->strides_text()),
                          "must be packed row-major (no padding between rows)");
}

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

void check_block_scales(const ArrayView& v, const std::vector<int64_t>& want,
                        const char* dims_words, const char* meaning, const std::string& sizes) {
  if (element_type(v) != DType::fp32)
    throw InvalidArgument(v.name, v.dtype_text(), "scales must be float32");
  if (v.shape != want)
    throw InvalidArgument(v.name, fmt::format("an array of shape {}", v.shape_text()),
                          fmt::format("must have shape {} = {}: {} ({})", shape_text(want),
                                      dims_words, meaning, sizes));
  require_packed_dims(v, want.size(), dims_words);
}

std::optional<DType> element_type(const ArrayView& v, std::optional<DType> bytes_as) {
  const nb::dlpack::dtype d = v.dtype;
  if (d.lanes != 1) return std::nullopt;
  if (d.code == uint8_t(Code::Bfloat) && d.bits == 16) return DType::bf16;
  if (d.code == uint8_t(Code::Float) && d.bits == 16) return DType::fp16;
  if (d.code == uint8_t(Code::Float) && d.bits == 32) return DType::fp32;
  if (d.code == 10 && d.bits == 8) return DType::e4m3;   // kDLFloat8_e4m3fn (OCP E4M3FN)
  if (d.code == 12 && d.bits == 8) return DType::e5m2;   // kDLFloat8_e5m2
  if (bytes_as && (d.code == uint8_t(Code::UInt) || d.code == uint8_t(Code::Int)) && d.bits == 8)
    return bytes_as;
  return std::nullopt;
}

int common_cuda_device(std::initializer_list<const ArrayView*> arrays) {
  int device = -1;
  std::string first;
  for (const ArrayView* v : arrays) {
    if (!v) continue;
    if (v->device_type != kDLCUDA)
      throw InvalidArgument(v->name, fmt::format("an array {}", device_text(v->device_type,
                                                                            v->device_id)),
                            "must be in CUDA device memory (DLPack device kDLCUDA): autogemm "
                            "runs on the GPU; move it there first (tensor.cuda(), "
                            "cupy.asarray(x), jax.device_put(x, jax.devices('gpu')[0]))");
    if (device < 0) {
      device = v->device_id;
      first = v->name;
    } else if (v->device_id != device) {
      throw InvalidArgument(v->name, fmt::format("an array on CUDA device {}", v->device_id),
                            fmt::format("must be on the same device as {} (CUDA device {})",
                                        first, device));
    }
  }
  return device;
}

void cuda_check(int status, const char* call) {
  if (status == cudaSuccess) return;
  const auto error = static_cast<cudaError_t>(status);
  throw CudaError(fmt::format("{}: {} ({})", call, cudaGetErrorString(error),
                              cudaGetErrorName(error)));
}

DeviceGuard::DeviceGuard(int device) {
  int current = 0;
  cuda_check(cudaGetDevice(&current), "cudaGetDevice");
  if (current != device) {
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    previous_ = current;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

// The Python spelling of an output type, for the allocator and for errors.
const char* python_dtype(DType t) {
  switch (t) {
    case DType::bf16: return "bfloat16";
    case DType::fp16: return "float16";
    case DType::fp32: return "float32";
    case DType::e4m3: return "float8_e4m3fn";
    default: return "?";
  }
}

// fp8_output: gemm() and fp8_gemm() also write e4m3 with 1x128 scales; other calls do not.
DType parse_out_dtype(const std::string& text, bool fp8_output) {
  std::string v = text;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "float16") v = "fp16";
  if (v == "float32") v = "fp32";
  if (v == "float8_e4m3fn") v = "e4m3";
  const std::optional<DType> t = parse_dtype(v);
  const bool fp8 = fp8_output && t == DType::e4m3;
  if (!t || !(*t == DType::bf16 || *t == DType::fp16 || *t == DType::fp32 || fp8))
    throw InvalidArgument("out_dtype", text,
                          fp8_output ? "must be bf16, fp16 or fp32 (also spelled bfloat16, "
                                       "float16, float32), or fp8 (e4m3, float8_e4m3fn: with one "
                                       "scale per row per 128 columns)"
                                     : "must be bf16, fp16 or fp32 (also spelled bfloat16, "
                                       "float16, float32)");
  return *t;
}

}  // namespace autogemm::python
