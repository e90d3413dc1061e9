# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
# CMake package of tvm-partial, installed inside the Python package:
#   find_package(tvm_partial CONFIG REQUIRED)   # tvm_partial_DIR=$(python -m tvm_partial.config --cmakedir)
#   target_link_libraries(app PRIVATE tvm_partial::tvm_partial)
#   target_link_libraries(app PRIVATE "-Wl,--push-state,--no-as-needed" "${TVM_RUNTIME_LIBRARY}" "-Wl,--pop-state")
# Brings tvm_ffi::shared along (tvm_ffi_DIR=$(python -m tvm_ffi.config --cmakedir) if not found),
# and sets TVM_RUNTIME_LIBRARY to the tvm wheel's libtvm_runtime (unless given), which a program
# calling TVM kernels with parallel loops needs loaded (without it they crash in the first call).
include(CMakeFindDependencyMacro)
if (NOT TARGET tvm_ffi::shared)
  if (NOT tvm_ffi_DIR)
    find_package(Python COMPONENTS Interpreter REQUIRED)
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -m tvm_ffi.config --cmakedir
      OUTPUT_VARIABLE tvm_ffi_DIR OUTPUT_STRIP_TRAILING_WHITESPACE
    )
  endif ()
  find_dependency(tvm_ffi CONFIG)
endif ()

# This file lives in <package>/lib/cmake/tvm_partial.
get_filename_component(_tvm_partial_root "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if (NOT TARGET tvm_partial::tvm_partial)
  add_library(tvm_partial::tvm_partial SHARED IMPORTED)
  set_target_properties(
    tvm_partial::tvm_partial
    PROPERTIES IMPORTED_LOCATION "${_tvm_partial_root}/lib/libtvm_partial.so"
               INTERFACE_INCLUDE_DIRECTORIES "${_tvm_partial_root}/include"
               INTERFACE_LINK_LIBRARIES tvm_ffi::shared
  )
endif ()
set(tvm_partial_LIBRARY_DIR "${_tvm_partial_root}/lib")

# libtvm_runtime: asked of the Python that has the tvm wheel (-DPython_EXECUTABLE picks it), or
# given with -DTVM_RUNTIME_LIBRARY=PATH. Never left empty: a configure error says what to do.
if (NOT TVM_RUNTIME_LIBRARY)
  if (NOT Python_EXECUTABLE)
    find_package(Python COMPONENTS Interpreter QUIET)
  endif ()
  if (Python_EXECUTABLE)
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -c "import tvm.libinfo; print(tvm.libinfo.find_libtvm_runtime())"
      OUTPUT_VARIABLE _tvm_runtime OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
      RESULT_VARIABLE _tvm_runtime_status
    )
  endif ()
  if (NOT _tvm_runtime OR NOT EXISTS "${_tvm_runtime}")
    message(FATAL_ERROR
      "tvm_partial: cannot find libtvm_runtime (programs calling TVM kernels need it loaded). Pass "
      "-DPython_EXECUTABLE=<the python that has the apache-tvm wheel>, or "
      "-DTVM_RUNTIME_LIBRARY=$(python -c \"import tvm.libinfo; print(tvm.libinfo.find_libtvm_runtime())\")")
  endif ()
  set(TVM_RUNTIME_LIBRARY "${_tvm_runtime}" CACHE FILEPATH "libtvm_runtime.so of the tvm wheel")
  unset(_tvm_runtime)
  unset(_tvm_runtime_status)
elseif (NOT EXISTS "${TVM_RUNTIME_LIBRARY}")
  message(FATAL_ERROR "tvm_partial: TVM_RUNTIME_LIBRARY=${TVM_RUNTIME_LIBRARY} does not exist")
endif ()
unset(_tvm_partial_root)
