# `cmake --install` for libtensor (TENSOR_INSTALL), with GNUInstallDirs semantics: the
# libraries go to CMAKE_INSTALL_LIBDIR (lib, lib64, lib/<multiarch>), the headers to
# CMAKE_INSTALL_INCLUDEDIR/libtensor; tensor.pc and the CMake package are written for those
# directories. cmake/install.sh does it, the installation `make install` runs too, with the
# prefix known at install time (`cmake --install --prefix DIR`); DESTDIR is honoured. The files
# it installed go to CMake's install manifest.
include(GNUInstallDirs)
if(TENSOR_AOTI)
  set(_tensor_install_aoti 1)
else()
  set(_tensor_install_aoti 0)
endif()
install(CODE "set(_tensor_install_aoti ${_tensor_install_aoti})
set(_tensor_install_args [[${TENSOR_SOURCE_DIR}/cmake/install.sh]] install
  [[${TENSOR_STAGE_DIR}]] [[${TENSOR_VERSION}]])
set(_tensor_install_dirs [[${CMAKE_INSTALL_LIBDIR}]] [[${CMAKE_INSTALL_INCLUDEDIR}]])")
install(CODE [[
execute_process(COMMAND ${CMAKE_COMMAND} -E env TENSOR_AOTI=${_tensor_install_aoti}
                        sh ${_tensor_install_args} "${CMAKE_INSTALL_PREFIX}" ${_tensor_install_dirs}
                RESULT_VARIABLE _tensor_rc OUTPUT_VARIABLE _tensor_files)
if(NOT _tensor_rc EQUAL 0)
  message(FATAL_ERROR "cmake/install.sh failed (${_tensor_rc})")
endif()
string(REGEX REPLACE "\n$" "" _tensor_files "${_tensor_files}")
string(REPLACE "\n" ";" _tensor_files "${_tensor_files}")
foreach(_tensor_file IN LISTS _tensor_files)
  message(STATUS "Installing: ${_tensor_file}")
endforeach()
list(APPEND CMAKE_INSTALL_MANIFEST_FILES ${_tensor_files})
]])
