# The cargo glue of libtensor's CMake build (included by the top-level CMakeLists.txt).
#
# 1. `cargo build` of this crate, at the cargo profile matching CMAKE_BUILD_TYPE (Debug -> dev,
#    anything else -> release), optionally with `--target TRIPLE` (TENSOR_CARGO_TARGET) and
#    into TENSOR_CARGO_TARGET_DIR (default: $ENV{CARGO_TARGET_DIR}, else <build dir>/cargo);
# 2. cmake/stage.sh turns cargo's libtensor.a into the shipped libraries in
#    <build dir>/tensor-lib: libtensor.so.VERSION (+ .debug, .so.MAJOR, .so links) and a
#    symbol-localized libtensor.a;
# 3. two imported targets name them: libtensor_shared and libtensor_static, with the headers
#    in <build dir>/include/libtensor (as installed: INCLUDEDIR/libtensor).
# Cargo decides what to rebuild; the custom command reruns when a Rust source, Cargo.toml,
# Cargo.lock, build.rs, cbindgen.toml, the version script or cmake/static-libs.txt changes.

find_program(TENSOR_CARGO cargo HINTS "$ENV{CARGO_HOME}/bin" "$ENV{HOME}/.cargo/bin" REQUIRED)

if(DEFINED ENV{CARGO_TARGET_DIR} AND NOT "$ENV{CARGO_TARGET_DIR}" STREQUAL "")
  set(_tensor_default_target_dir "$ENV{CARGO_TARGET_DIR}")
else()
  set(_tensor_default_target_dir "${CMAKE_CURRENT_BINARY_DIR}/cargo")
endif()
set(TENSOR_CARGO_TARGET_DIR "${_tensor_default_target_dir}" CACHE PATH
    "cargo's target directory for libtensor (default: $CARGO_TARGET_DIR, else <build>/cargo)")
set(TENSOR_CARGO_TARGET "" CACHE STRING "Rust target triple for cargo --target (cross builds)")

# CMAKE_BUILD_TYPE -> cargo profile and the directory cargo puts its artifacts in.
if(CMAKE_BUILD_TYPE STREQUAL "Debug")
  set(_tensor_profile dev)
  set(_tensor_profile_dir debug)
else()
  set(_tensor_profile release)
  set(_tensor_profile_dir release)
endif()
set(_tensor_cargo_args build --manifest-path "${TENSOR_SOURCE_DIR}/Cargo.toml"
    --profile ${_tensor_profile} --lib)
set(_tensor_artifacts "${TENSOR_CARGO_TARGET_DIR}")
if(TENSOR_CARGO_TARGET)
  list(APPEND _tensor_cargo_args --target ${TENSOR_CARGO_TARGET})
  string(APPEND _tensor_artifacts "/${TENSOR_CARGO_TARGET}")
endif()
string(APPEND _tensor_artifacts "/${_tensor_profile_dir}")

# (not <build>/lib: `cmake -B build` in the checkout would share it with the Makefile's build/lib)
set(TENSOR_STAGE_DIR "${CMAKE_CURRENT_BINARY_DIR}/tensor-lib")
set(TENSOR_SHARED_FILE "${TENSOR_STAGE_DIR}/libtensor.so.${TENSOR_VERSION}")
set(TENSOR_STATIC_FILE "${TENSOR_STAGE_DIR}/libtensor.a")

file(GLOB_RECURSE _tensor_sources CONFIGURE_DEPENDS "${TENSOR_SOURCE_DIR}/src/*.rs")
# The binutils CMake found (the cross ones in a cross build) for stage.sh.
set(_tensor_tools CC=${CMAKE_C_COMPILER} AR=${CMAKE_AR})
foreach(_tool LINKER OBJCOPY READELF)
  if(CMAKE_${_tool})
    string(REPLACE LINKER LD _var ${_tool})
    list(APPEND _tensor_tools ${_var}=${CMAKE_${_tool}})
  endif()
endforeach()

add_custom_command(
  OUTPUT "${TENSOR_SHARED_FILE}" "${TENSOR_STATIC_FILE}"
  COMMAND ${CMAKE_COMMAND} -E env CARGO_TARGET_DIR=${TENSOR_CARGO_TARGET_DIR}
          ${TENSOR_CARGO} ${_tensor_cargo_args}
  COMMAND ${CMAKE_COMMAND} -E env ${_tensor_tools}
          sh "${TENSOR_SOURCE_DIR}/cmake/stage.sh" "${_tensor_artifacts}/libtensor.a"
          "${TENSOR_STAGE_DIR}" ${TENSOR_VERSION}
  DEPENDS ${_tensor_sources} "${TENSOR_SOURCE_DIR}/Cargo.toml" "${TENSOR_SOURCE_DIR}/Cargo.lock"
          "${TENSOR_SOURCE_DIR}/build.rs" "${TENSOR_SOURCE_DIR}/cbindgen.toml"
          "${TENSOR_SOURCE_DIR}/cmake/tensor.map" "${TENSOR_SOURCE_DIR}/cmake/stage.sh"
          "${TENSOR_SOURCE_DIR}/cmake/static-libs.txt"
  WORKING_DIRECTORY "${TENSOR_SOURCE_DIR}"
  COMMENT "cargo build --profile ${_tensor_profile} (libtensor ${TENSOR_VERSION}); cmake/stage.sh"
  USES_TERMINAL VERBATIM)
add_custom_target(libtensor_cargo ALL DEPENDS "${TENSOR_SHARED_FILE}" "${TENSOR_STATIC_FILE}")

# TENSOR_AOTI: the AOTInductor runtime (crate aoti/, needs libsleef-dev), staged beside
# libtensor by `stage.sh aoti` as `make aoti` does; tensor::aoti in the build, installed too.
if(TENSOR_AOTI)
  file(STRINGS "${TENSOR_SOURCE_DIR}/aoti/Cargo.toml" _tensor_aoti_line
       REGEX "^version *= *\"" LIMIT_COUNT 1)
  string(REGEX REPLACE "^version *= *\"([^\"]+)\".*" "\\1" TENSOR_AOTI_VERSION "${_tensor_aoti_line}")
  string(REGEX REPLACE "\\..*" "" _tensor_aoti_major "${TENSOR_AOTI_VERSION}")
  set(TENSOR_AOTI_FILE "${TENSOR_STAGE_DIR}/libtensor_aoti.so.${TENSOR_AOTI_VERSION}")
  file(GLOB_RECURSE _tensor_aoti_sources CONFIGURE_DEPENDS "${TENSOR_SOURCE_DIR}/aoti/src/*")
  list(REMOVE_ITEM _tensor_cargo_args --lib)
  add_custom_command(
    OUTPUT "${TENSOR_AOTI_FILE}"
    COMMAND ${CMAKE_COMMAND} -E env CARGO_TARGET_DIR=${TENSOR_CARGO_TARGET_DIR}
            ${TENSOR_CARGO} ${_tensor_cargo_args} -p tensor_aoti --lib
    COMMAND ${CMAKE_COMMAND} -E env ${_tensor_tools}
            sh "${TENSOR_SOURCE_DIR}/cmake/stage.sh" aoti "${_tensor_artifacts}/libtensor_aoti.so"
            "${TENSOR_STAGE_DIR}" ${TENSOR_AOTI_VERSION}
    DEPENDS ${_tensor_aoti_sources} "${TENSOR_SOURCE_DIR}/aoti/Cargo.toml"
            "${TENSOR_SOURCE_DIR}/aoti/build.rs" "${TENSOR_SOURCE_DIR}/aoti/tensor_aoti.map"
            "${TENSOR_SOURCE_DIR}/Cargo.lock" "${TENSOR_SOURCE_DIR}/cmake/stage.sh" libtensor_cargo
    WORKING_DIRECTORY "${TENSOR_SOURCE_DIR}"
    COMMENT "cargo build -p tensor_aoti (libtensor_aoti ${TENSOR_AOTI_VERSION}); cmake/stage.sh aoti"
    USES_TERMINAL VERBATIM)
  add_custom_target(libtensor_aoti_cargo ALL DEPENDS "${TENSOR_AOTI_FILE}")
endif()

find_package(Threads REQUIRED)

# The headers as installed (INCLUDEDIR/libtensor/), laid out in <build dir>/include/libtensor
# so that source builds (add_subdirectory, FetchContent) take `#include <libtensor/tensor.h>`
# too. Copies (configure_file: CMake re-copies when `make header` changes one); tensor.hpp
# includes its sibling "tensor.h". <build dir>/include/libtensor is on the include path as
# well, for one more version of `#include "tensor.h"` (as installed; see docs/packaging.md).
set(TENSOR_HEADERS "")
file(READ "${TENSOR_SOURCE_DIR}/cmake/headers.txt" _tensor_header_list)
string(STRIP "${_tensor_header_list}" _tensor_header_list)
string(REPLACE " " ";" _tensor_header_list "${_tensor_header_list}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${TENSOR_SOURCE_DIR}/cmake/headers.txt")
foreach(_header IN LISTS _tensor_header_list)
  configure_file("${TENSOR_SOURCE_DIR}/include/${_header}"
                 "${CMAKE_CURRENT_BINARY_DIR}/include/libtensor/${_header}" COPYONLY)
  list(APPEND TENSOR_HEADERS "${TENSOR_SOURCE_DIR}/include/${_header}")
endforeach()
set(_tensor_include_dirs "${CMAKE_CURRENT_BINARY_DIR}/include"
    "${CMAKE_CURRENT_BINARY_DIR}/include/libtensor")

add_library(libtensor_shared SHARED IMPORTED GLOBAL)
set_target_properties(libtensor_shared PROPERTIES
  IMPORTED_LOCATION "${TENSOR_SHARED_FILE}"
  IMPORTED_SONAME "libtensor.so.${TENSOR_VERSION_MAJOR}"
  INTERFACE_INCLUDE_DIRECTORIES "${_tensor_include_dirs}")
add_dependencies(libtensor_shared libtensor_cargo)

# The native libraries the archive needs: cmake/static-libs.txt, as CMake names them (the same
# list the installed tensorConfig.cmake carries, from the same script).
execute_process(COMMAND sh "${TENSOR_SOURCE_DIR}/cmake/install.sh" cmake-static-libs
                OUTPUT_VARIABLE _tensor_static_libs OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE _tensor_rc)
if(NOT _tensor_rc EQUAL 0)
  message(FATAL_ERROR "cmake/install.sh cmake-static-libs failed")
endif()
string(CONFIGURE "${_tensor_static_libs}" _tensor_static_libs) # (${CMAKE_DL_LIBS})
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${TENSOR_SOURCE_DIR}/cmake/static-libs.txt")
add_library(libtensor_static STATIC IMPORTED GLOBAL)
set_target_properties(libtensor_static PROPERTIES
  IMPORTED_LOCATION "${TENSOR_STATIC_FILE}"
  INTERFACE_INCLUDE_DIRECTORIES "${_tensor_include_dirs}"
  INTERFACE_LINK_LIBRARIES "${_tensor_static_libs}")
add_dependencies(libtensor_static libtensor_cargo)

if(TENSOR_AOTI)
  foreach(_header tensor_aoti.h tensor_aoti.hpp)
    configure_file("${TENSOR_SOURCE_DIR}/include/${_header}"
                   "${CMAKE_CURRENT_BINARY_DIR}/include/libtensor/${_header}" COPYONLY)
  endforeach()
  add_library(libtensor_aoti SHARED IMPORTED GLOBAL)
  set_target_properties(libtensor_aoti PROPERTIES
    IMPORTED_LOCATION "${TENSOR_AOTI_FILE}"
    IMPORTED_SONAME "libtensor_aoti.so.${_tensor_aoti_major}"
    INTERFACE_LINK_LIBRARIES libtensor_shared)
  add_dependencies(libtensor_aoti libtensor_aoti_cargo)
endif()
