#pragma once
// Shared by the sources of autogemm._core: arrays imported through DLPack (no copies), the
// checks that turn them into a GemmProblem's fields, the exception translation, and the
// dictionaries the planner's and profiler's values become.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::python {

namespace nb = nanobind;

// DLPack device types autogemm names in its errors (dlpack.h).
inline constexpr int kDLCPU = 1;
inline constexpr int kDLCUDA = 2;

// One array, imported without a copy through __dlpack__ (or NumPy's buffer protocol). Holds
// the import, so the memory stays alive as long as the view does.
struct ArrayView {
  std::string name;                 // the Python argument it came from: "a", "out", ...
  nb::object source;                // the Python object
  nb::ndarray<nb::ro> read_only;    // one of these two holds the import
  nb::ndarray<> writable;
  void* data = nullptr;             // first element (DLPack data + byte_offset)
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;     // in elements
  nb::dlpack::dtype dtype{};
  int device_type = 0;
  int device_id = 0;

  int64_t size() const;
  std::string shape_text() const;   // "(64, 7168)"
  std::string strides_text() const;
  std::string dtype_text() const;   // "bfloat16", "float8_e4m3fn", "uint8", ...
};

// Imports `object` as argument `name`. Throws InvalidArgument when it is no array nanobind can
// import without a copy (or, with `writable`, a read-only one such as a JAX array).
ArrayView import_array(const char* name, nb::handle object, bool writable);

// A 2-D array as a row-major matrix of `rows` x `cols`, possibly a transposed view of the
// array (layout "auto"). `label` names it in errors ("a", "a (read transposed)").
struct Matrix {
  const ArrayView* array = nullptr;
  std::string label;
  int64_t rows = 0, cols = 0;
  int64_t row_stride = 0, col_stride = 0;   // elements
};

// Throws InvalidArgument unless the array is 2-D.
Matrix matrix_of(const ArrayView& v);
Matrix transposed(const Matrix& m);
// True when consecutive elements of a row are adjacent (unit stride, or a single column).
bool rows_are_contiguous(const Matrix& m);
// The leading dimension (elements between rows) of a matrix whose rows are contiguous; throws
// InvalidArgument for any other stride pattern. One row: 0 (packed).
int64_t leading_dimension(const Matrix& m);
// Throws InvalidArgument unless the matrix is packed row-major (rows exactly cols apart).
void require_packed(const Matrix& m);
// "(64, 7168)", "(8,)": a shape (or strides) as Python prints it.
std::string shape_text(const std::vector<int64_t>& dims);
// A packed row-major array of exactly `dims` dimensions (`shape_words` names them in errors).
void require_packed_dims(const ArrayView& v, size_t dims, const char* shape_words);
// A block-scale array: float32, exactly `want` (named by `dims_words`, e.g. "(M, ceil(K/128))"),
// packed. `meaning` says what one scale covers, `sizes` the problem's sizes behind `want`.
void check_block_scales(const ArrayView& v, const std::vector<int64_t>& want,
                        const char* dims_words, const char* meaning, const std::string& sizes);

// The autogemm element type of a DLPack dtype: bf16, fp16, fp32, e4m3 (float8_e4m3fn, or uint8
// read as e4m3 bytes when `bytes_as` says so), e5m2; nullopt otherwise.
std::optional<DType> element_type(const ArrayView& v, std::optional<DType> bytes_as = {});
// An output type as Python spells it ("bf16", "bfloat16", "float16", ...): bf16, fp16 or fp32,
// else InvalidArgument on out_dtype; and the spelling an allocator takes ("bfloat16", ...).
DType parse_out_dtype(const std::string& text, bool fp8_output = false);
const char* python_dtype(DType t);

// Every array lives in CUDA device memory on one device: returns that device, else throws
// InvalidArgument naming the first array that does not.
int common_cuda_device(std::initializer_list<const ArrayView*> arrays);

// Makes `device` current for the module's CUDA runtime while it lives (the runtime is linked
// statically: its current device is its own, whatever PyTorch or CuPy set in theirs).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Throws CudaError naming the call when `status` is an error.
void cuda_check(int status, const char* call);

// Exceptions: the Python classes (autogemm._errors) the C++ ones become.
void set_error_types(nb::handle error, nb::handle invalid_argument, nb::handle cuda_error,
                     nb::handle no_device);
void register_exception_translator();

// The dictionaries of `autogemm profile --json` and `autogemm plan --json` (same keys).
nb::dict gpu_dict(const GpuInfo& g);
nb::dict cpu_dict(const CpuInfo& c);
nb::dict problem_dict(const GemmProblem& p);
nb::dict config_dict(const GemmConfig& c);
nb::dict spec_dict(const KernelSpec& spec);
nb::dict prediction_dict(const Prediction& p);

}  // namespace autogemm::python
