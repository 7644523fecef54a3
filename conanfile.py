"""Conan 2 recipe for libtensor (docs/packaging.md, "Conan").

    conan create . --build=missing                      # static (the Conan default)
    conan create . --build=missing -o "libtensor/*:shared=True"

Builds with the project's CMake build (cargo, then cmake/stage.sh) and packages its
`cmake --install`, less the shared or the static library and the tensor.pc / CMake package
files, which Conan's generators write for the package folder (CMakeDeps: find_package(tensor),
tensor::tensor; PkgConfigDeps: tensor.pc). Needs cargo on PATH (or in ~/.cargo/bin); cargo
honours CARGO_TARGET_DIR and CARGO_NET_OFFLINE from the environment.
"""

import os
import re

from conan import ConanFile
from conan.errors import ConanException, ConanInvalidConfiguration
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rm, rmdir

required_conan_version = ">=2.0"


class LibtensorConan(ConanFile):
    name = "libtensor"
    description = "PyTorch's Tensor / Storage / TensorImpl design in Rust, as a C library"
    license = "MIT OR Apache-2.0"
    topics = ("tensor", "ndarray", "c-api", "rust")
    package_type = "library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"shared": [True, False]}
    default_options = {"shared": False}
    # cmake/static-libs.txt is exported with the recipe too: package_info() reads the static
    # library's system libraries from it, the one list every build uses.
    exports = "cmake/static-libs.txt"

    # cargo builds from the source folder: one path for the shared and the static build, so a
    # shared CARGO_TARGET_DIR builds the crate once for both.
    no_copy_source = True
    exports_sources = (
        "Cargo.toml", "Cargo.lock", "build.rs", "cbindgen.toml", "CMakeLists.txt",
        "LICENSE-*", "src/*", "include/*", "cmake/*",
        "aoti/*",  # a member of the Cargo workspace (not built here; cargo loads its manifest)
        "benches/*",  # tensor-bench, a member of the Cargo workspace too (its manifest is loaded)
    )

    def set_version(self):
        # The version comes from Cargo.toml, the one source of truth.
        text = load(self, os.path.join(self.recipe_folder, "Cargo.toml"))
        self.version = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)

    def configure(self):
        # A C library: the C++ settings do not change the binary.
        self.settings.rm_safe("compiler.cppstd")
        self.settings.rm_safe("compiler.libcxx")

    def validate(self):
        if self.settings.os != "Linux":
            raise ConanInvalidConfiguration("libtensor's packaging (cmake/stage.sh) is Linux/ELF only")

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["TENSOR_BUILD_TESTS"] = False
        tc.cache_variables["TENSOR_BUILD_EXAMPLES"] = False
        tc.cache_variables["TENSOR_INSTALL"] = True
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        licenses = os.path.join(self.package_folder, "licenses")
        copy(self, "LICENSE-*", self.source_folder, licenses)
        if not os.path.isdir(licenses):
            raise ConanException("LICENSE-MIT / LICENSE-APACHE are missing from the sources")
        cmake = CMake(self)
        cmake.install()
        lib = os.path.join(self.package_folder, "lib")
        # Conan's generators describe the package folder (relocatable); these name the prefix.
        rmdir(self, os.path.join(lib, "pkgconfig"))
        rmdir(self, os.path.join(lib, "cmake"))
        if self.options.shared:
            rm(self, "libtensor.a", lib)
        else:
            rm(self, "libtensor.so*", lib)

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "tensor")
        self.cpp_info.set_property("cmake_target_name", "tensor::tensor")
        kind = "shared" if self.options.shared else "static"
        self.cpp_info.set_property("cmake_target_aliases", [f"tensor::tensor_{kind}"])
        self.cpp_info.set_property("pkg_config_name", "tensor")
        self.cpp_info.libs = ["tensor"]
        # <libtensor/tensor.h>; include/libtensor keeps "tensor.h" working for one more
        # version (as tensor.pc and the CMake package do), dropped in the next minor version.
        self.cpp_info.includedirs = ["include", os.path.join("include", "libtensor")]
        if not self.options.shared:
            deps = load(self, os.path.join(self.recipe_folder, "cmake", "static-libs.txt")).split()
            self.cpp_info.system_libs = [d[2:] for d in deps if d.startswith("-l")]
