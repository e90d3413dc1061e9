# CMake package of tvm-partial, installed inside the Python package:
#   find_package(tvm_partial CONFIG REQUIRED)   # tvm_partial_DIR=$(python -m tvm_partial.config --cmakedir)
#   target_link_libraries(app PRIVATE tvm_partial::tvm_partial)
# Brings tvm_ffi::shared along (tvm_ffi_DIR=$(python -m tvm_ffi.config --cmakedir) if not found).
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
unset(_tvm_partial_root)
