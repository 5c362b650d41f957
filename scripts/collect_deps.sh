#!/bin/sh
# Copies what a build needs from this machine's Debian packages into .deps/ (git ignores it),
# so that a machine with only nvcc, cmake and g++ (a GPU machine, say) can build the checkout:
# CMakeLists.txt falls back to .deps/ for each package it does not find.
#
#   scripts/collect_deps.sh          # on a machine with the packages (scripts/install_deps.sh)
#
# .deps/include  asio, fmt (used header-only there: FMT_HEADER_ONLY), Catch2 v2, CLI11,
#                nlohmann/json, zlib.h, and OpenBLAS's cblas.h under openblas/
# .deps/lib      libz, and OpenBLAS with the Fortran runtime it needs (optional: without it
#                the CPU GEMM uses the reference kernel)
# .deps/cmake    Catch2's Catch.cmake (catch_discover_tests)
set -eu
cd "$(dirname "$0")/.."
deps=.deps
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
libdir=/usr/lib/$multiarch

need() {
  for path in "$@"; do
    [ -e "$path" ] || { echo "collect_deps: $path is missing: run scripts/install_deps.sh first" >&2; exit 1; }
  done
}
need /usr/include/asio.hpp /usr/include/asio /usr/include/fmt /usr/include/catch2/catch.hpp /usr/include/CLI \
     /usr/include/nlohmann /usr/include/zlib.h /usr/include/zconf.h /usr/lib/cmake/Catch2/Catch.cmake

rm -rf "$deps"
mkdir -p "$deps/include" "$deps/lib" "$deps/cmake"
cp -r /usr/include/asio.hpp /usr/include/asio /usr/include/fmt /usr/include/catch2 /usr/include/CLI \
      /usr/include/nlohmann /usr/include/zlib.h /usr/include/zconf.h "$deps/include/"
cp /usr/lib/cmake/Catch2/Catch.cmake /usr/lib/cmake/Catch2/CatchAddTests.cmake "$deps/cmake/"
# -L: the files, not the links (libz.so -> libz.so.1.2.13).
cp -L "$libdir/libz.so" "$deps/lib/libz.so"
cp -L "$libdir/libz.so.1" "$deps/lib/libz.so.1"

openblas=$(readlink -f "$libdir/libopenblas.so.0" 2>/dev/null || true)
cblas=/usr/include/$multiarch/openblas-pthread
if [ -n "$openblas" ] && [ -f "$openblas" ] && [ -f "$cblas/cblas.h" ]; then
  mkdir -p "$deps/include/openblas"
  cp "$cblas"/*.h "$deps/include/openblas/"
  cp "$openblas" "$deps/lib/libopenblas.so"
  # What libopenblas links besides glibc: the Fortran runtime (found through LD_LIBRARY_PATH).
  for lib in libgfortran.so.5 libquadmath.so.0; do
    if [ -e "$libdir/$lib" ]; then cp -L "$libdir/$lib" "$deps/lib/$lib"; fi
  done
else
  echo "collect_deps: no OpenBLAS here; builds from .deps will use the reference GEMM" >&2
fi
du -sh "$deps" | sed 's/^/collect_deps: /'
