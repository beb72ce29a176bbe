"""`docindex ingest --ray [ADDRESS]`: reading, chunking and embedding spread over a Ray
cluster with Ray Data; writing stays in this process, in ingest()'s one transaction.

    driver (this process)                       Ray Data, map_batches over actors
    discover → BEGIN IMMEDIATE → known docs ─►  read_file(): stat, bounds, SHA-256, extract, chunk
                                                embed: MiniLM, one text per ORT run, 1 thread
    record() each result, in candidate order ◄─ (preserve_order)
    → bump index version → COMMIT

Workers run the very function the local path runs (ingest.read_file) with the same
tokenizer and the same model file, so chunks are identical and, on the same CPU,
vectors are identical bit for bit: the default quantized MiniLM is run one text
at a time on one intra-op thread (embedder.BATCH_SIZE_QUANTIZED), so a vector
does not depend on its batch-mates or on which process computed it. On another
CPU type or a GPU they agree within float tolerance only.

Workers open the files themselves (at the paths the driver discovered), so on a
cluster the documents must be mounted at the same path on every node
(k8s/rayjob-ingest.yaml). On a cluster that advertises GPUs, embedding runs in
its own actors with one GPU each (ONNX Runtime's CUDA provider when the image
has it), reading and chunking on CPU actors.

Needs Ray Data (pandas, pyarrow): the `ray-ingest` extra, which `make install` installs.
"""
from __future__ import annotations

import logging
import os
import pickle
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from . import quotable
from .bounds import DEFAULT_MAX_FILE_BYTES
from .discover import Candidate, discover
from .errors import IngestError, InputError
from .ingest import IngestReport, ingest
from .ingest_read import Embedded, FileResult, embed_in_slices, read_file

EXTRA = "ray-ingest"
FILES_PER_BATCH = 4             # files per map_batches call: small, so results stream
BLOCKS_PER_WORKER = 16          # Ray Data blocks (one actor task each) per actor: see _pool
START_ATTEMPTS = 3              # a new local Ray that timed out starting is retried (see _connected)
CONNECT_TIMEOUT_S = 5.0         # a HOST:PORT that does not answer this fast is reported unreachable
# Passed to every worker so the driver and the workers resolve the same model file.
_WORKER_ENV = ("DOCINDEX_CACHE_DIR", "DOCINDEX_REQUANTIZE", "XDG_CACHE_HOME")


def ingest_with_ray(paths: list[Path], db: Path, collection: str, *, address: str | None = None,
                    workers: int | None = None, force: bool = False, progress: bool = False,
                    follow_external_links: bool = False,
                    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, base_url: str | None = None,
                    quote_vectors: bool = True) -> IngestReport:
    """ingest() with its per-file work done on Ray. `address`: None or "auto" (RAY_ADDRESS,
    else the cluster `ray start` left on this machine, else a new local one), "local" (a new
    local Ray for this run), "HOST:PORT" or "ray://HOST:PORT".
    `workers`: actors reading and embedding at once (default: the cluster's CPUs).
    `quote_vectors`: the chunks' quotable sentences are embedded by the actors too, with
    the chunks (docindex/quotable.py); --no-quote-vectors skips them.

    Everything that can fail fast does so before the index is opened: the extra, the
    paths, the address. Raises InputError / IngestError / StoreError like ingest()."""
    _require_ray_data()
    if workers is not None and workers < 1:
        raise InputError(f"--ray-workers must be at least 1, not {workers}")
    discover([Path(p) for p in paths], follow_external_links=follow_external_links)   # bad paths: before Ray
    with _connected(address, workers):
        prepare = _RayPrepare(workers, quote_vectors)
        return ingest(paths, db, collection, force=force, progress=progress,
                      follow_external_links=follow_external_links, max_file_bytes=max_file_bytes,
                      prepare=prepare, base_url=base_url, quote_vectors=quote_vectors)


def _require_ray_data() -> None:
    try:
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise InputError(f"--ray needs Ray Data, which is not installed ({exc.name or exc}): "
                         f"pip install 'askdocs[{EXTRA}]' (make install does)") from None


def check_address(address: str | None) -> str | None:
    """The address as ray.init() takes it; a HOST:PORT must accept a TCP connection."""
    if address is None or address == "auto":
        return None             # ray.init()'s own search: RAY_ADDRESS, a running cluster, else a new one
    if address == "local":
        return address
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if parts.scheme not in ("tcp", "ray") or not host or not port:
        raise InputError(f"--ray {address}: not a Ray address (auto, local, HOST:PORT or ray://HOST:PORT); "
                         "put PATHS before --ray")
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise InputError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None
    return address


@contextmanager
def _connected(address: str | None, workers: int | None) -> Iterator[None]:
    address = check_address(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")                 # as `make run`'s cluster
    import ray

    env = {name: os.environ[name] for name in _WORKER_ENV if name in os.environ}
    options: dict[str, Any] = dict(log_to_driver=False, logging_level=logging.WARNING)
    if env:
        options["runtime_env"] = {"env_vars": env}
    if address == "local":
        options.update(num_cpus=workers, include_dashboard=False)
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            ray.init(address=address, **options)
            break
        except Exception as exc:    # Ray raises plain Exception too (a node that did not start)
            ray.shutdown()
            # A new local node must register within Ray's fixed 30 s; on a loaded box it may not.
            if attempt < START_ATTEMPTS and "timed out during startup" in str(exc):
                logging.getLogger(__name__).warning("the local Ray node did not start in time; retrying")
                continue
            raise InputError(f"cannot use the Ray cluster at {address or 'auto'}: {_first_line(exc)}") from None
    try:
        yield
    finally:
        ray.shutdown()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class _RayPrepare:
    """ingest()'s `prepare` hook: the candidates through Ray Data, results back in order."""

    def __init__(self, workers: int | None, quote_vectors: bool = True) -> None:
        import ray

        self.quotes = quote_vectors
        resources = ray.cluster_resources()       # type: ignore[no-untyped-call]
        self.cpus = max(1, int(resources.get("CPU", 1)))
        self.gpus = int(resources.get("GPU", 0))
        if workers and workers > self.cpus:     # actors that cannot be placed would wait forever
            logging.getLogger(__name__).warning("--ray-workers %d: the cluster has %d CPUs; using %d",
                                                workers, self.cpus, self.cpus)
        self.workers = min(workers or self.cpus, self.cpus)

    def __call__(self, candidates: list[Candidate], known: dict[str, Any], *, force: bool,
                 max_bytes: int) -> Iterator[tuple[FileResult, Embedded | None]]:
        import ray
        import ray.data
        from ray.exceptions import RayError

        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True     # written in the local path's order
        context.enable_progress_bars = False
        logging.getLogger("ray.data").setLevel(logging.ERROR)       # one line per dataset otherwise
        items = [{"work": pickle.dumps((c, known.get(c.source), force, max_bytes))} for c in candidates]
        if not items:
            return
        blocks = min(len(items), BLOCKS_PER_WORKER * self.workers)
        dataset: ray.data.Dataset = ray.data.from_items(items, override_num_blocks=blocks)
        if self.gpus:       # read and chunk on CPUs, embed on GPUs
            readers = max(1, min(self.workers, self.cpus))
            dataset = dataset.map_batches(_Reader, batch_size=FILES_PER_BATCH, num_cpus=1,
                                          compute=_pool(readers))
            dataset = dataset.map_batches(_GpuEmbedder, batch_size=FILES_PER_BATCH, num_gpus=1,
                                          fn_constructor_kwargs={"quotes": self.quotes},
                                          compute=_pool(self.gpus))
        else:               # one actor per CPU does both: nothing crosses the object store twice
            dataset = dataset.map_batches(_Worker, batch_size=FILES_PER_BATCH, num_cpus=1,
                                          fn_constructor_kwargs={"quotes": self.quotes},
                                          compute=_pool(self.workers))
        try:
            for row in dataset.iter_rows():
                result, vectors = pickle.loads(row["out"])
                yield result, vectors
        except RayError as exc:
            raise IngestError(f"a Ray worker failed; nothing was written: {_first_line(exc)}") from None


def _pool(size: int) -> Any:
    """`size` actors, each sent one block at a time. A block is one actor task; with Ray Data's
    default of 2 in flight per actor and 4 blocks per actor, the blocks were as good as dealt out
    at the start, and on half the PostgreSQL manual (583 files, 2 actors) one actor sat idle for
    the last ~20 of 126 s while the other finished its share (stop 31's CPU timeline in
    KNOWN_LIMITATIONS.md). 16 smaller blocks per actor, each given to whichever actor is free,
    bound that tail by one block."""
    import ray.data

    return ray.data.ActorPoolStrategy(size=size, max_tasks_in_flight_per_actor=1)


class _Worker:
    """A Ray Data actor: reads and chunks files (ingest_read.read_file) and/or embeds their
    chunks, and their quotable sentences when `quotes`."""

    def __init__(self, read: bool = True, embed: bool = True, gpu: bool = False, quotes: bool = True) -> None:
        self._count_tokens = _token_counter() if read else None
        self._embedder = _worker_embedder(gpu) if embed else None
        self._quotes = quotes

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """`work` rows (pickled read_file arguments) or `out` rows of a reading stage → `out`
        rows: pickled (FileResult, Embedded or None)."""
        if self._count_tokens is not None:
            results = []
            for work in batch["work"]:
                candidate, known, force, max_bytes = pickle.loads(work)
                results.append(read_file(candidate, known, self._count_tokens, force=force, max_bytes=max_bytes))
        else:
            results = [pickle.loads(out)[0] for out in batch["out"]]
        return {"out": np.array([pickle.dumps((r, self._embed(r))) for r in results], dtype=object)}

    def _embed(self, result: FileResult) -> Embedded | None:
        if result.pending is None or self._embedder is None:
            return None
        chunks = result.pending.chunks
        quotes = quotable.chunk_blobs([c.text for c in chunks], self._vectors,
                                      [c.section for c in chunks]) if self._quotes else None
        return Embedded(self._vectors([chunk.embed_text for chunk in chunks]), quotes)

    def _vectors(self, texts: list[str]) -> np.ndarray:
        assert self._embedder is not None           # only an embedding actor gets here
        return embed_in_slices(self._embedder, texts)


class _Reader(_Worker):
    def __init__(self) -> None:
        super().__init__(embed=False)


class _GpuEmbedder(_Worker):
    def __init__(self, quotes: bool = True) -> None:
        super().__init__(read=False, gpu=True, quotes=quotes)


def _token_counter() -> Any:
    """What the embedder's count_tokens counts (the same tokenizer file, no truncation,
    no padding), without loading the ONNX model into a reading actor."""
    from tokenizers import Tokenizer

    from .embedder import tokenizer_path

    counter = Tokenizer.from_file(str(tokenizer_path()))
    counter.no_truncation()
    counter.no_padding()
    return lambda text: len(counter.encode(text).ids)


def _worker_embedder(gpu: bool) -> Any:
    from .minilm import default_embedder

    if not gpu:
        return default_embedder(threads=1, workers=1)     # what the local path runs, per thread
    import onnxruntime as ort

    from .embedder import BATCH_SIZE_QUANTIZED, OnnxEmbedder, tokenizer_path
    from .quantize import best_model_path

    providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in ort.get_available_providers()]
    if providers[0] != "CUDAExecutionProvider":
        logging.getLogger(__name__).warning("this GPU node's onnxruntime has no CUDA provider: embedding on its CPU")
    return OnnxEmbedder(best_model_path(), tokenizer_path(), threads=1, batch_size=BATCH_SIZE_QUANTIZED,
                        providers=providers)
