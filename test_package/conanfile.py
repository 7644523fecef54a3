"""conan create's test of the libtensor package: find_package(tensor) + tensor::tensor through
CMakeDeps, a C program built with <libtensor/tensor.h> (and one with "tensor.h"), run; a static
package must not leave the program loading libtensor.so; PkgConfigDeps must write tensor.pc."""

import os
from io import StringIO

from conan import ConanFile
from conan.errors import ConanException
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout


class LibtensorTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps", "PkgConfigDeps", "VirtualRunEnv"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["EXPECTED_VERSION"] = str(self.dependencies["libtensor"].ref.version)
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if not os.path.isfile(os.path.join(self.generators_folder, "tensor.pc")):
            raise ConanException("PkgConfigDeps did not write tensor.pc")
        if not can_run(self):
            return
        shared = self.dependencies["libtensor"].options.shared
        for exe in ("test_package", "test_package_flat"):
            path = os.path.join(self.cpp.build.bindir, exe)
            self.run(path, env="conanrun")
            out = StringIO()
            self.run(f"ldd {path}", env="conanrun", stdout=out)
            if ("libtensor.so" in out.getvalue()) != bool(shared):
                raise ConanException(f"{exe}: shared={shared} but ldd says:\n{out.getvalue()}")

