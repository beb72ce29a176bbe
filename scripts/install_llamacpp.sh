#!/usr/bin/env bash
# Install llama-cpp-python (the embedded CPU engine). PyPI ships only an sdist,
# so the first install compiles llama.cpp (~6-10 min on 2 cores) from that sdist
# with scripts/patches/*.patch applied (GCC < 14 miscompiles llama.cpp's AMX
# tile setup: see the patch). The wheel is kept in .wheels/ and in the user's
# cache, keyed by version and patches, so later installs, fresh clones included,
# take seconds.
set -euo pipefail
PIP=${1:-.venv/bin/pip}
VERSION=0.3.36
cd "$(dirname "$0")/.."
PATCHES=(scripts/patches/llama-cpp-amx-tilecfg.patch)
KEY=$(cat "${PATCHES[@]}" | sha256sum | cut -c1-12)
HERE=.wheels/llama-cpp-python-${VERSION}-${KEY}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/askdocs/wheels/llama-cpp-python-${VERSION}-${KEY}
wheel() { ls "$1"/llama_cpp_python-${VERSION}-*.whl 2>/dev/null | head -n1; }
put() { mkdir -p "$2" && cp "$1" "$2/.partial.$$" && mv "$2/.partial.$$" "$2/$(basename "$1")"; }  # never half a wheel

if [ -z "$(wheel "$HERE")" ] && [ -n "$(wheel "$CACHE")" ]; then
  put "$(wheel "$CACHE")" "$HERE"
fi
if [ -z "$(wheel "$HERE")" ]; then
  echo "building llama-cpp-python ${VERSION} with ${#PATCHES[@]} patch(es) (one time, ~6-10 min)…" >&2
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  "$PIP" download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==${VERSION}" -d "$WORK"
  tar -xzf "$WORK"/llama_cpp_python-${VERSION}.tar.gz -C "$WORK"
  for patch in "${PATCHES[@]}"; do  # patch(1) comes with build-essential; git apply where it is missing
    if command -v patch >/dev/null; then
      patch -s -p1 -d "$WORK/llama_cpp_python-${VERSION}" < "$patch"
    else
      (cd "$WORK/llama_cpp_python-${VERSION}" && git apply "$OLDPWD/$patch")
    fi
  done
  mkdir -p "$WORK/out"
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF}" \
    "$PIP" wheel -q --no-deps "$WORK/llama_cpp_python-${VERSION}" -w "$WORK/out"
  put "$(wheel "$WORK/out")" "$CACHE" || echo "could not cache the wheel in $CACHE (kept in $HERE)" >&2
  put "$(wheel "$WORK/out")" "$HERE"
fi
# --no-warn-conflicts: the model packages' undeclared-on-purpose dependencies
# (scripts/check_deps.py checks everything else after `make install`).
# --force-reinstall --no-deps: a wheel of the same version built without the
# patches may be installed already.
"$PIP" install -q --no-warn-conflicts --force-reinstall --no-deps "$(wheel "$HERE")"
"$PIP" install -q --no-warn-conflicts "diskcache==5.6.3" "jinja2==3.1.6"
