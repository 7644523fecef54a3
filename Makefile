# libtensor: build, example, tests and installation.
#   make example                 build the library (release) and run the flagship C example
#   make test                    every test: Rust, C and C++ (cargo test)
#   make docs                    HTML API reference in build/docs/html (needs doxygen)
#   make install PREFIX=/opt/x   lib/libtensor.so.0.1.0 (+ .so.0, .so links), lib/libtensor.a,
#                                include/tensor.h[pp], lib/pkgconfig/tensor.pc,
#                                lib/cmake/tensor/tensorConfig{,Version}.cmake
# DESTDIR is honoured for staged installs.

CARGO   ?= cargo
CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
VERSION := 0.1.0
SOMAJOR := 0

RELEASE := target/release
LIBDIR  := $(DESTDIR)$(PREFIX)/lib
INCDIR  := $(DESTDIR)$(PREFIX)/include
# Native libraries the Rust static library needs (cargo rustc -- --print native-static-libs).
STATIC_DEPS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc

.PHONY: all release example test install uninstall clean docs

all: release

release:
	$(CARGO) build --release

# The example links against target/release through build/lib, which also carries the
# libtensor.so.0 name (the library's SONAME) the executable asks for at run time.
example: release
	mkdir -p build/lib
	ln -sf ../../$(RELEASE)/libtensor.so build/lib/libtensor.so
	ln -sf ../../$(RELEASE)/libtensor.so build/lib/libtensor.so.$(SOMAJOR)
	$(CC) -std=c99 -Wall -Wextra -pedantic -O2 -Iinclude examples_c/image_crop.c \
	    -o build/image_crop -Lbuild/lib -Wl,-rpath,'$$ORIGIN/lib' -ltensor
	./build/image_crop

test:
	$(CARGO) test

docs:
	mkdir -p build/docs
	doxygen docs/Doxyfile
	@echo "API reference: build/docs/html/index.html"

install: release
	install -d $(LIBDIR)/pkgconfig $(LIBDIR)/cmake/tensor $(INCDIR)
	install -m 755 $(RELEASE)/libtensor.so $(LIBDIR)/libtensor.so.$(VERSION)
	ln -sf libtensor.so.$(VERSION) $(LIBDIR)/libtensor.so.$(SOMAJOR)
	ln -sf libtensor.so.$(SOMAJOR) $(LIBDIR)/libtensor.so
	install -m 644 $(RELEASE)/libtensor.a $(LIBDIR)/libtensor.a
	install -m 644 include/tensor.h $(INCDIR)/tensor.h
	if [ -f include/tensor.hpp ]; then install -m 644 include/tensor.hpp $(INCDIR)/tensor.hpp; fi
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@STATIC_DEPS@|$(STATIC_DEPS)|g' cmake/tensor.pc.in > $(LIBDIR)/pkgconfig/tensor.pc
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@SOMAJOR@|$(SOMAJOR)|g' \
	    cmake/tensorConfig.cmake.in > $(LIBDIR)/cmake/tensor/tensorConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|g' \
	    cmake/tensorConfigVersion.cmake.in > $(LIBDIR)/cmake/tensor/tensorConfigVersion.cmake

uninstall:
	rm -f $(LIBDIR)/libtensor.so.$(VERSION) $(LIBDIR)/libtensor.so.$(SOMAJOR) \
	    $(LIBDIR)/libtensor.so $(LIBDIR)/libtensor.a $(INCDIR)/tensor.h $(INCDIR)/tensor.hpp \
	    $(LIBDIR)/pkgconfig/tensor.pc $(LIBDIR)/cmake/tensor/tensorConfig.cmake \
	    $(LIBDIR)/cmake/tensor/tensorConfigVersion.cmake
	-rmdir $(LIBDIR)/cmake/tensor

clean:
	rm -rf build
	$(CARGO) clean
