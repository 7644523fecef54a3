# libtensor: build, example, tests and installation.
#   make                         build (cargo build --release) and stage the shipped libraries
#                                in build/lib (cmake/stage.sh): libtensor.so.VERSION (+ .debug),
#                                libtensor.so.MAJOR, libtensor.so, libtensor.a (only the public
#                                tensor_*/storage_* symbols are global)
#   make example                 build the library and run the flagship C example
#   make aoti                    also build the AOTInductor runtime (crate aoti/) and stage
#                                build/lib/libtensor_aoti.so.AOTI_VERSION (+ .debug, .so.0, .so);
#                                it links Debian's libsleef (libsleef-dev; libsleef3 at run time)
#   make install WITH_AOTI=1     also install it: libtensor_aoti.so*, tensor_aoti.h / .hpp,
#                                pkgconfig/tensor_aoti.pc, cmake/tensor/tensorAotiTargets.cmake
#   make test                    every test: Rust, C and C++ (cargo test)
#   make header                  refresh the committed include/tensor.h from src/ffi/ (cbindgen)
#   make check-header            fail while include/tensor.h is stale (CI)
#   make docs                    HTML API reference in build/docs/html (needs doxygen)
#   make install PREFIX=/opt/x   installs what `make` built (it never runs cargo; cmake/install.sh):
#                                LIBDIR/libtensor.so.VERSION (stripped) + .so.MAJOR, .so links,
#                                LIBDIR/libtensor.so.VERSION.debug (INSTALL_DEBUG=0 to skip),
#                                LIBDIR/libtensor.a, INCLUDEDIR/libtensor/tensor.h, tensor.hpp,
#                                tensor_opencv.hpp, LIBDIR/pkgconfig/tensor.pc,
#                                LIBDIR/cmake/tensor/*.cmake
# LIBDIR (default lib) and INCLUDEDIR (default include) are relative to PREFIX or absolute,
# as GNUInstallDirs has them: LIBDIR=lib64, LIBDIR=lib/x86_64-linux-gnu. DESTDIR is honoured.

CARGO      ?= cargo
CC         ?= cc
PREFIX     ?= /usr/local
DESTDIR    ?=
LIBDIR     ?= lib
INCLUDEDIR ?= include
INSTALL_DEBUG ?= 1
# Off by default: libtensor_aoti needs libsleef at build and run time and brings the gemm and
# zip crates; libtensor itself needs neither.
WITH_AOTI  ?= 0
CARGO_TARGET_DIR ?= target
# One source of truth for the version: Cargo.toml.
VERSION := $(shell sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
AOTI_VERSION := $(shell sed -n 's/^version *= *"\([^"]*\)".*/\1/p' aoti/Cargo.toml | head -n 1)

RELEASE := $(CARGO_TARGET_DIR)/release
STAGE   := build/lib
.PHONY: all release aoti header check-header example test install uninstall clean docs

all: release

release:
	$(CARGO) build --release
	sh cmake/stage.sh $(RELEASE)/libtensor.a $(STAGE) $(VERSION)

aoti: release
	$(CARGO) build --release -p tensor_aoti
	sh cmake/stage.sh aoti $(RELEASE)/libtensor_aoti.so $(STAGE) $(AOTI_VERSION)

# The header is committed; generating it needs cbindgen (the `header` feature), which a
# plain build never compiles.
header:
	TENSOR_UPDATE_HEADER=1 $(CARGO) check --features header

# Fails while include/tensor.h differs from the header cbindgen generates from src/ffi/ (CI).
# `cargo check` runs the build script (which generates it) without compiling the library.
check-header:
	mkdir -p build
	$(CARGO) check --features header --message-format=json-render-diagnostics > build/header.json
	@gen=$$(sed -n 's/.*\["TENSOR_GENERATED_HEADER","\([^"]*\)"\].*/\1/p' build/header.json | tail -n 1); \
	if [ -z "$$gen" ] || ! diff -u include/tensor.h "$$gen"; then \
	  echo "include/tensor.h differs from the header generated from src/ffi/ ($$gen):" >&2; \
	  echo "  run 'make header' and commit it" >&2; exit 1; fi; \
	echo "include/tensor.h is the header generated from src/ffi/"

# The example links against build/lib, which also carries the libtensor.so.MAJOR name (the
# library's SONAME) the executable asks for at run time.
example: release
	$(CC) -std=c99 -Wall -Wextra -pedantic -O2 -Iinclude examples_c/image_crop.c \
	    -o build/image_crop -Lbuild/lib -Wl,-rpath,'$$ORIGIN/lib' -ltensor
	./build/image_crop

test:
	$(CARGO) test

docs:
	mkdir -p build/docs
	doxygen docs/Doxyfile
	@echo "API reference: build/docs/html/index.html"

# cmake/install.sh is the one installation, `cmake --install` runs it too.
install:
	@if [ ! -f $(STAGE)/libtensor.so.$(VERSION) ] || [ ! -f $(STAGE)/libtensor.a ]; then \
	  echo "make install: nothing is built in $(STAGE)/ (libtensor $(VERSION)):" >&2; \
	  echo "  run 'make' first, as your user; 'make install' only copies what it built" >&2; \
	  exit 1; fi
	DESTDIR='$(DESTDIR)' INSTALL_DEBUG='$(INSTALL_DEBUG)' TENSOR_AOTI='$(WITH_AOTI)' \
	    sh cmake/install.sh install $(STAGE) $(VERSION) '$(PREFIX)' '$(LIBDIR)' '$(INCLUDEDIR)'

uninstall:
	DESTDIR='$(DESTDIR)' sh cmake/install.sh uninstall $(STAGE) $(VERSION) '$(PREFIX)' '$(LIBDIR)' \
	    '$(INCLUDEDIR)'

clean:
	rm -rf build
	$(CARGO) clean
