"""Per-channel int8 re-quantization of the shipped MiniLM, built once and cached.

The shipped ``model.onnx`` stores int8 weights but dequantizes them at run
time, so it runs at fp32 speed. Re-quantizing its MatMul weights per channel
with ONNX Runtime's dynamic quantizer (after a basic graph-optimization pass)
runs ~1.5-2.5x faster on this CPU. Per-tensor int8 loses too much (cosine
~0.94), and so does quantizing the embedding Gather: only MatMuls are touched.

The re-quantized file is used only if it agrees with the shipped one on a fixed
calibration set: mean cosine >= 0.99 and worst cosine >= 0.98. The verdict is
cached beside the file, so a rejected build is not retried on every start.
Building needs the ``onnx`` package; without it the shipped file is used.

Signed int8 weights suit CPUs with AVX-512 VNNI (u8 x s8 dot products). Without
VNNI (an AVX2-only CPU) ONNX Runtime's u8 x s8 path can saturate 16-bit sums (its
quantization docs suggest reduce_range there), and MiniLM lost too much (stop 48,
an AMD EPYC without AVX-512: worst calibration cosine 0.977), so the shipped file
serves there. Unsigned weights take its u8 x u8 path instead: worst 0.989 on the
same CPU (reduce_range: 0.983), query embedding P50 6.3 ms against 9.9. That build
is tried only with DOCINDEX_REQUANTIZE=unsigned (`VARIANTS` in order, the first
accepted serves): on that CPU it also cost a little held-out retrieval and two dev
key facts (KNOWN_LIMITATIONS.md, stop 49), so speed is the user's choice there.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from .hashing import sha256_file

log = logging.getLogger(__name__)

MIN_MEAN_COSINE = 0.99
MIN_WORST_COSINE = 0.98
_DISABLE_VALUES = {"0", "false", "no", "off"}

VARIANTS = (("int8-per-channel", "QInt8"), ("uint8-per-channel", "QUInt8"))
"""(cache-file suffix, ONNX Runtime weight type), tried in this order: the first whose build passes serves.
By default only the first; DOCINDEX_REQUANTIZE=unsigned tries both."""

# Varied on purpose: prose, questions, code, config, CJK, long and short.
CALIBRATION_TEXTS = [
    "How do I configure TLS for the HTTP transport?",
    "The server validates every tool call against the JSON schema before dispatch.",
    "Installation\n\nRun `make install` to create the virtual environment and install the pinned dependencies.",
    "```c\nint main(void) {\n    mcp_server_t *s = mcp_server_new();\n    return mcp_server_run(s);\n}\n```",
    "timeout_ms: 30000\nmax_connections: 64\nlog_level: debug",
    "What changed in version 0.6.0?",
    "染发前需要做哪些准备？",
    "会员卡可以退款吗？预约取消需要提前多久通知门店？",
    "Symlinks that point outside the allowed root are rejected with EACCES.",
    "The soak test runs for eight hours and fails if resident memory grows by more than 5%.",
    "fuzzing",
    "Benchmarks compare p50 and p95 latency against the committed baseline; a regression "
    "over 10% fails the gate. " * 6,
    "Release notes: fixed a use-after-free in the stdio transport; added streaming responses; "
    "deprecated the legacy handshake.",
    "Threat model: an attacker controls the content of documents returned by the server.",
    "pip install askdocs && docindex ingest docs/ --db index.db --collection docs",
    "Le serveur refuse les requêtes trop grandes.",
]


@dataclass(frozen=True)
class Fidelity:
    mean_cosine: float
    worst_cosine: float

    @property
    def accepted(self) -> bool:
        return self.mean_cosine >= MIN_MEAN_COSINE and self.worst_cosine >= MIN_WORST_COSINE


def cache_dir() -> Path:
    """DOCINDEX_CACHE_DIR, else $XDG_CACHE_HOME/docindex, else ~/.cache/docindex."""
    if explicit := os.environ.get("DOCINDEX_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "docindex"


def requantize(source: Path, target: Path, weight_type: str = "QInt8") -> None:
    """Write a per-channel 8-bit (MatMul weights only) copy of `source` to `target`."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="docindex-quant-") as tmp:
        optimized = Path(tmp) / "optimized.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(optimized)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # the quantizer prints a pre-processing hint at WARNING
        try:
            quantize_dynamic(
                str(optimized),
                str(target),
                per_channel=True,
                weight_type=QuantType[weight_type],
                op_types_to_quantize=["MatMul"],
            )
        finally:
            root.setLevel(level)


def measure_fidelity(reference_model: Path, candidate_model: Path, texts: list[str] | None = None) -> Fidelity:
    """Cosine between the two models' sentence embeddings of the same texts."""
    from .embedder import OnnxEmbedder, tokenizer_path

    texts = texts or CALIBRATION_TEXTS
    reference = OnnxEmbedder(reference_model, tokenizer_path()).embed(texts)
    # One text per run, as the quantized model is used (see embedder.BATCH_SIZE_QUANTIZED).
    candidate = OnnxEmbedder(candidate_model, tokenizer_path(), batch_size=1).embed(texts)
    cosines = (reference * candidate).sum(axis=1)
    return Fidelity(mean_cosine=float(cosines.mean()), worst_cosine=float(cosines.min()))


def best_model_path(source: Path | None = None) -> Path:
    """The first cached re-quantized model (`VARIANTS` order) that passed the fidelity check, else `source`.

    Builds and checks each on first use (~5-10 s). DOCINDEX_REQUANTIZE=0 disables it; =unsigned also
    tries the unsigned-weight build where the signed one is rejected.
    """
    from .embedder import shipped_model_path

    source = source or shipped_model_path()
    mode = os.environ.get("DOCINDEX_REQUANTIZE", "1").strip().lower()
    if mode in _DISABLE_VALUES:
        return source
    digest = sha256_file(source)[:16]
    for suffix, weight_type in VARIANTS if mode == "unsigned" else VARIANTS[:1]:
        try:
            model = _checked_variant(source, f"minilm-{digest}-{suffix}", weight_type)
        except ImportError:
            log.info("onnx is not installed: using the shipped MiniLM without re-quantization")
            return source
        except Exception as exc:  # a cache problem must never stop search or ingest
            log.warning("re-quantization failed (%s): using the shipped model", exc)
            return source
        if model is not None:
            return model
    return source


def _checked_variant(source: Path, stem: str, weight_type: str) -> Path | None:
    """The variant's cached model if its verdict accepts it, building and judging it once; None if rejected."""
    folder = cache_dir()
    model, verdict_file = folder / f"{stem}.onnx", folder / f"{stem}.json"
    if verdict_file.is_file():
        try:
            verdict = json.loads(verdict_file.read_text())
            if verdict.get("accepted") and model.is_file():
                return model
            if not verdict.get("accepted"):
                return None
        except (OSError, ValueError):
            pass  # unreadable verdict: rebuild below
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=stem, suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        requantize(source, tmp, weight_type)
        fidelity = measure_fidelity(source, tmp)
        if fidelity.accepted:
            os.replace(tmp, model)  # atomic: concurrent builders just overwrite each other
        _write_verdict(verdict_file, fidelity)
    finally:
        tmp.unlink(missing_ok=True)
    if fidelity.accepted:
        return model
    log.warning("re-quantized model %s rejected (%s)", stem, fidelity)
    return None


def _write_verdict(path: Path, fidelity: Fidelity) -> None:
    payload = {**asdict(fidelity), "accepted": fidelity.accepted,
               "thresholds": {"mean": MIN_MEAN_COSINE, "worst": MIN_WORST_COSINE}}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2))
    os.replace(tmp, path)

