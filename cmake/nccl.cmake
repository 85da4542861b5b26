# NCCL for the multi-GPU execution (src/multi/nccl_exec.cpp, issue 26). The toolkit ships it
# (CUDA 13: <toolkit>/include/nccl.h, <toolkit>/lib/libnccl.so.2); pip's nvidia-nccl-cu13 has
# the same files under site-packages/nvidia/nccl (point AUTOGEMM_NCCL_ROOT there). Optional:
# without it the library builds, and the functions that need NCCL throw an autogemm::Error
# saying it was not found at build time (multi_gpu.hpp). -DAUTOGEMM_NCCL=OFF builds without it
# on purpose.
option(AUTOGEMM_NCCL "Link NCCL for multi-GPU execution when it is found" ON)
set(AUTOGEMM_NCCL_ROOT "" CACHE PATH "Folder with include/nccl.h and lib/libnccl.so(.2), if not in the CUDA toolkit")

function(autogemm_link_nccl target)
  set(AUTOGEMM_HAVE_NCCL OFF PARENT_SCOPE)
  if(NOT AUTOGEMM_NCCL)
    message(STATUS "NCCL: off (AUTOGEMM_NCCL=OFF): multi-GPU execution will throw")
    return()
  endif()
  find_path(AUTOGEMM_NCCL_INCLUDE_DIR nccl.h
    HINTS ${AUTOGEMM_NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
  # pip's wheel has only libnccl.so.2 (no unversioned link), hence the second name.
  find_library(AUTOGEMM_NCCL_LIBRARY NAMES nccl libnccl.so.2
    HINTS ${AUTOGEMM_NCCL_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib)
  if(NOT AUTOGEMM_NCCL_INCLUDE_DIR OR NOT AUTOGEMM_NCCL_LIBRARY)
    message(STATUS "NCCL: not found (nccl.h: ${AUTOGEMM_NCCL_INCLUDE_DIR}, libnccl: "
                   "${AUTOGEMM_NCCL_LIBRARY}); building without it: multi-GPU execution will "
                   "throw. Set AUTOGEMM_NCCL_ROOT to a folder with include/nccl.h and lib/.")
    return()
  endif()
  message(STATUS "NCCL: ${AUTOGEMM_NCCL_LIBRARY} (${AUTOGEMM_NCCL_INCLUDE_DIR}/nccl.h)")
  target_include_directories(${target} PRIVATE ${AUTOGEMM_NCCL_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE AUTOGEMM_HAVE_NCCL=1)
  # Private: no public header includes nccl.h (multi_gpu.hpp declares `struct ncclComm`).
  target_link_libraries(${target} PRIVATE ${AUTOGEMM_NCCL_LIBRARY})
  set(AUTOGEMM_HAVE_NCCL ON PARENT_SCOPE)
endfunction()
