#!/usr/bin/env bash
# Install llama-cpp-python (the embedded CPU engine). PyPI ships only an sdist,
# so the first install compiles llama.cpp (~10 min on 2 cores); the wheel is
# kept in .wheels/ so later installs (and `make run`) take seconds.
set -euo pipefail
PIP=${1:-.venv/bin/pip}
VERSION=0.3.36
cd "$(dirname "$0")/.."
mkdir -p .wheels
if ! ls .wheels/llama_cpp_python-${VERSION}-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python ${VERSION} (one time, ~10 min)…" >&2
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF}" \
    "$PIP" wheel -q --no-deps "llama-cpp-python==${VERSION}" -w .wheels
fi
# --no-warn-conflicts: the model packages' undeclared-on-purpose dependencies
# (scripts/check_deps.py checks everything else after `make install`).
"$PIP" install -q --no-warn-conflicts .wheels/llama_cpp_python-${VERSION}-*.whl "diskcache==5.6.3" "jinja2==3.1.6"
