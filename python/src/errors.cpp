// C++ exceptions -> the Python classes of autogemm._errors: InvalidArgument (a ValueError, with
// .argument, .value and .rule), CudaError and NoDevice (RuntimeErrors), all autogemm.Error.
#include "autogemm/errors.hpp"

#include "binding.hpp"

namespace autogemm::python {

namespace {

// Set once by autogemm/__init__.py; never released (they live as long as the module).
struct ErrorTypes {
  nb::handle error, invalid_argument, cuda_error, no_device;
};
ErrorTypes& types() {
  static ErrorTypes t;
  return t;
}

// Raises `type(*args)`, or `fallback(message)` before __init__.py has registered the types.
void raise(nb::handle type, PyObject* fallback, const char* message, nb::tuple args) {
  if (!type.is_valid()) {
    PyErr_SetString(fallback, message);
    return;
  }
  try {
    nb::object instance = type(*args);
    PyErr_SetObject(type.ptr(), instance.ptr());
  } catch (nb::python_error& e) {
    e.restore();
  }
}

}  // namespace

void set_error_types(nb::handle error, nb::handle invalid_argument, nb::handle cuda_error,
                     nb::handle no_device) {
  types() = {error.inc_ref(), invalid_argument.inc_ref(), cuda_error.inc_ref(),
             no_device.inc_ref()};
}

void register_exception_translator() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    const ErrorTypes& t = types();
    try {
      std::rethrow_exception(p);
    } catch (const InvalidArgument& e) {
      raise(t.invalid_argument, PyExc_ValueError, e.what(),
            nb::make_tuple(e.argument(), e.value(), e.rule()));
    } catch (const NoDevice& e) {
      raise(t.no_device, PyExc_RuntimeError, e.what(), nb::make_tuple(e.what()));
    } catch (const CudaError& e) {
      raise(t.cuda_error, PyExc_RuntimeError, e.what(), nb::make_tuple(e.what()));
    } catch (const Error& e) {
      raise(t.error, PyExc_RuntimeError, e.what(), nb::make_tuple(e.what()));
    }
  });
}

}  // namespace autogemm::python
