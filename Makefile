# libtensor: build, example, tests and installation.
#   make                         build (cargo build --release) and stage the shipped libraries
#                                in build/lib (cmake/stage.sh): libtensor.so.VERSION (+ .debug),
#                                libtensor.so.MAJOR, libtensor.so, libtensor.a (only the public
#                                tensor_*/storage_* symbols are global)
#   make example                 build the library and run the flagship C example
#   make test                    every test: Rust, C and C++ (cargo test)
#   make header                  refresh the committed include/tensor.h from src/ffi/ (cbindgen)
#   make check-header            fail while include/tensor.h is stale (CI)
#   make docs                    HTML API reference in build/docs/html (needs doxygen)
#   make install PREFIX=/opt/x   installs what `make` built (it never runs cargo):
#                                LIBDIR/libtensor.so.VERSION (stripped) + .so.MAJOR, .so links,
#                                LIBDIR/libtensor.so.VERSION.debug (INSTALL_DEBUG=0 to skip),
#                                LIBDIR/libtensor.a, INCLUDEDIR/libtensor/tensor.h, tensor.hpp,
#                                tensor_opencv.hpp, tensor_ffmpeg.hpp, LIBDIR/pkgconfig/tensor.pc,
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
CARGO_TARGET_DIR ?= target
# One source of truth for the version: Cargo.toml.
VERSION := $(shell sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))

RELEASE := $(CARGO_TARGET_DIR)/release
STAGE   := build/lib
# Native libraries the Rust static library needs (cargo rustc -- --print native-static-libs,
# less -lgcc_s: the C driver adds the unwinder itself, libgcc_s or with -static libgcc_eh).
STATIC_DEPS := -lutil -lrt -lpthread -lm -ldl -lc

# Install directories: absolute, and as written in tensor.pc / tensorConfig.cmake (relative to
# the prefix when they are inside it, so the CMake package stays relocatable).
abs_libdir := $(if $(filter /%,$(LIBDIR)),$(LIBDIR),$(PREFIX)/$(LIBDIR))
abs_incdir := $(if $(filter /%,$(INCLUDEDIR)),$(INCLUDEDIR),$(PREFIX)/$(INCLUDEDIR))
rel_libdir := $(patsubst $(PREFIX)/%,%,$(abs_libdir))
rel_incdir := $(patsubst $(PREFIX)/%,%,$(abs_incdir))
pc_path     = $(if $(filter /%,$(1)),$(1),$${prefix}/$(1))
cm_path     = $(if $(filter /%,$(1)),$(1),$${_tensor_prefix}/$(1))
# From LIBDIR/cmake/tensor back up to the prefix: one ".." per directory.
cm_to_prefix := $(shell echo "$(rel_libdir)/cmake/tensor" | sed 's|[^/][^/]*|..|g')
LIB_DEST := $(DESTDIR)$(abs_libdir)
INC_DEST := $(DESTDIR)$(abs_incdir)/libtensor
HEADERS  := tensor.h tensor.hpp tensor_opencv.hpp tensor_ffmpeg.hpp

.PHONY: all release header check-header example test install uninstall clean docs

all: release

release:
	$(CARGO) build --release
	sh cmake/stage.sh $(RELEASE)/libtensor.a $(STAGE) $(VERSION)

# The header is committed; generating it needs cbindgen (the `header` feature), which a
# plain build never compiles.
header:
	TENSOR_UPDATE_HEADER=1 $(CARGO) build --features header

# Fails while include/tensor.h differs from the header cbindgen generates from src/ffi/ (CI).
check-header:
	mkdir -p build
	$(CARGO) build --features header --message-format=json-render-diagnostics > build/header.json
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

install:
	@if [ ! -f $(STAGE)/libtensor.so.$(VERSION) ] || [ ! -f $(STAGE)/libtensor.a ]; then \
	  echo "make install: nothing is built in $(STAGE)/ (libtensor $(VERSION)):" >&2; \
	  echo "  run 'make' first, as your user; 'make install' only copies what it built" >&2; \
	  exit 1; fi
	install -d $(LIB_DEST)/pkgconfig $(LIB_DEST)/cmake/tensor $(INC_DEST)
	install -m 755 $(STAGE)/libtensor.so.$(VERSION) $(LIB_DEST)/libtensor.so.$(VERSION)
	if [ "$(INSTALL_DEBUG)" = 1 ]; then install -m 644 $(STAGE)/libtensor.so.$(VERSION).debug \
	    $(LIB_DEST)/libtensor.so.$(VERSION).debug; fi
	ln -sf libtensor.so.$(VERSION) $(LIB_DEST)/libtensor.so.$(SOMAJOR)
	ln -sf libtensor.so.$(SOMAJOR) $(LIB_DEST)/libtensor.so
	install -m 644 $(STAGE)/libtensor.a $(LIB_DEST)/libtensor.a
	install -m 644 $(addprefix include/,$(HEADERS)) $(INC_DEST)/
	sed -e 's|@PC_PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@PC_LIBDIR@|$(call pc_path,$(rel_libdir))|g' \
	    -e 's|@PC_INCLUDEDIR@|$(call pc_path,$(rel_incdir))|g' \
	    -e 's|@STATIC_DEPS@|$(STATIC_DEPS)|g' cmake/tensor.pc.in > $(LIB_DEST)/pkgconfig/tensor.pc
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@SOMAJOR@|$(SOMAJOR)|g' \
	    -e 's|@CONFIG_TO_PREFIX@|$(cm_to_prefix)|g' \
	    -e 's|@CONFIG_LIBDIR@|$(call cm_path,$(rel_libdir))|g' \
	    -e 's|@CONFIG_INCLUDEDIR@|$(call cm_path,$(rel_incdir))|g' \
	    cmake/tensorConfig.cmake.in > $(LIB_DEST)/cmake/tensor/tensorConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|g' \
	    cmake/tensorConfigVersion.cmake.in > $(LIB_DEST)/cmake/tensor/tensorConfigVersion.cmake

uninstall:
	rm -f $(LIB_DEST)/libtensor.so.$(VERSION) $(LIB_DEST)/libtensor.so.$(VERSION).debug \
	    $(LIB_DEST)/libtensor.so.$(SOMAJOR) $(LIB_DEST)/libtensor.so $(LIB_DEST)/libtensor.a \
	    $(addprefix $(INC_DEST)/,$(HEADERS)) $(LIB_DEST)/pkgconfig/tensor.pc \
	    $(LIB_DEST)/cmake/tensor/tensorConfig.cmake $(LIB_DEST)/cmake/tensor/tensorConfigVersion.cmake
	-rmdir $(LIB_DEST)/cmake/tensor $(INC_DEST)

clean:
	rm -rf build
	$(CARGO) clean
