# Third-party dependencies. Everything comes from Debian packages (see scripts/bootstrap).

find_package(CUDAToolkit REQUIRED)
if(CUDAToolkit_VERSION VERSION_LESS 12.4)
  message(FATAL_ERROR
    "autogemm needs the CUDA toolkit 12.4 or newer (found ${CUDAToolkit_VERSION} at "
    "${CUDAToolkit_BIN_DIR}): cuTensorMapEncodeTiled, NVRTC sm_90a and cuBLASLt FP8 block "
    "scaling come from it. Point CUDAToolkit_ROOT at a newer toolkit.")
endif()
foreach(_lib cudart_static nvrtc cublasLt)
  if(NOT TARGET CUDA::${_lib})
    message(FATAL_ERROR "CUDA toolkit at ${CUDAToolkit_LIBRARY_DIR} lacks lib${_lib}")
  endif()
endforeach()

find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)

# Debian 12's libcpuinfo-dev ships a broken CMake package file (it names
# /usr/lib/lib/x86_64-linux-gnu/libclog.a), so find cpuinfo through pkg-config.
find_package(PkgConfig REQUIRED)
pkg_check_modules(CPUINFO REQUIRED IMPORTED_TARGET libcpuinfo)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)

if(AUTOGEMM_BUILD_CLI)
  find_package(CLI11 REQUIRED)
endif()
if(AUTOGEMM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
