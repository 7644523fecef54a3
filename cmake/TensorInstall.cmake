# `cmake --install` for libtensor (TENSOR_INSTALL), with GNUInstallDirs semantics: the
# libraries go to CMAKE_INSTALL_LIBDIR (lib, lib64, lib/<multiarch>), the headers to
# CMAKE_INSTALL_INCLUDEDIR/libtensor; tensor.pc and the CMake package are written for those
# directories.
# The same templates serve `make install` (see the Makefile). DESTDIR is honoured.
include(GNUInstallDirs)
set(_lib "${CMAKE_INSTALL_LIBDIR}")
set(_inc "${CMAKE_INSTALL_INCLUDEDIR}")

install(FILES "${TENSOR_SHARED_FILE}" DESTINATION "${_lib}"
        PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                    WORLD_READ WORLD_EXECUTE)
# Symlinks are installed as symlinks.
install(FILES "${TENSOR_SHARED_FILE}.debug" "${TENSOR_STAGE_DIR}/libtensor.so.${TENSOR_VERSION_MAJOR}"
        "${TENSOR_STAGE_DIR}/libtensor.so" "${TENSOR_STATIC_FILE}" DESTINATION "${_lib}")
install(FILES ${TENSOR_HEADERS} DESTINATION "${_inc}/libtensor")

# CMake package: relocatable, paths relative to its own directory when LIBDIR/INCLUDEDIR are.
set(VERSION ${TENSOR_VERSION})
set(SOMAJOR ${TENSOR_VERSION_MAJOR})
file(RELATIVE_PATH CONFIG_TO_PREFIX "/p/${_lib}/cmake/tensor" "/p")
# The directories as tensorConfig.cmake (CONFIG_*) and tensor.pc (PC_*) name them.
foreach(_kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_kind}}")
    set(CONFIG_${_kind} "${CMAKE_INSTALL_${_kind}}")
    set(PC_${_kind} "${CMAKE_INSTALL_${_kind}}")
  else()
    set(CONFIG_${_kind} "\${_tensor_prefix}/${CMAKE_INSTALL_${_kind}}")
    set(PC_${_kind} "\${prefix}/${CMAKE_INSTALL_${_kind}}")
  endif()
endforeach()
configure_file("${TENSOR_SOURCE_DIR}/cmake/tensorConfig.cmake.in"
               "${CMAKE_CURRENT_BINARY_DIR}/tensorConfig.cmake" @ONLY)
configure_file("${TENSOR_SOURCE_DIR}/cmake/tensorConfigVersion.cmake.in"
               "${CMAKE_CURRENT_BINARY_DIR}/tensorConfigVersion.cmake" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/tensorConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/tensorConfigVersion.cmake"
        DESTINATION "${_lib}/cmake/tensor")

# tensor.pc names the prefix, which `cmake --install --prefix DIR` only knows at install time.
# Libs.private: the Makefile's STATIC_DEPS (one list for both installs).
file(STRINGS "${TENSOR_SOURCE_DIR}/Makefile" STATIC_DEPS REGEX "^STATIC_DEPS *:=" LIMIT_COUNT 1)
string(REGEX REPLACE "^STATIC_DEPS *:= *" "" STATIC_DEPS "${STATIC_DEPS}")
if(IS_ABSOLUTE "${_lib}")
  set(_pc_dest "${_lib}/pkgconfig")
else()
  set(_pc_dest "\${CMAKE_INSTALL_PREFIX}/${_lib}/pkgconfig")
endif()
install(CODE "
  set(VERSION \"${VERSION}\")
  set(STATIC_DEPS \"${STATIC_DEPS}\")
  set(PC_LIBDIR [[${PC_LIBDIR}]])
  set(PC_INCLUDEDIR [[${PC_INCLUDEDIR}]])
  set(PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${TENSOR_SOURCE_DIR}/cmake/tensor.pc.in\" \"${CMAKE_CURRENT_BINARY_DIR}/tensor.pc\" @ONLY)
  file(INSTALL DESTINATION \"${_pc_dest}\" TYPE FILE
       FILES \"${CMAKE_CURRENT_BINARY_DIR}/tensor.pc\")
")
