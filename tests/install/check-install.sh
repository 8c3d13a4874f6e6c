#!/usr/bin/env bash
# Installs the built tree into a scratch prefix, builds a consumer project
# against it with find_package(podscope), and runs it.
#   check-install.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR
set -euo pipefail
build=$1 src=$2 scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >"$scratch/install.log"
cmake -S "$src/tests/install/consumer" -B "$scratch/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" -DCMAKE_BUILD_TYPE=Release \
  ${CMAKE_CXX_FLAGS_FOR_CONSUMER:+-DCMAKE_CXX_FLAGS="$CMAKE_CXX_FLAGS_FOR_CONSUMER"} \
  >"$scratch/configure.log"
cmake --build "$scratch/consumer" >"$scratch/build.log"
out=$("$scratch/consumer/consumer" "$scratch/hello.podtrace")
[ "$out" = "hello 50" ] || { echo "consumer printed '$out', expected 'hello 50'" >&2; exit 1; }
out=$("$scratch/consumer/served" "$scratch/captures")
[ "$out" = "captured served" ] || { echo "served printed '$out', expected 'captured served'" >&2; exit 1; }
echo "installed package works: $out"
