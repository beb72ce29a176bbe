"""An N-chunk index, built and measured in one run: build, size, memory, open, search, recall.

    nice -n 10 .venv/bin/python benchmarks/scale.py --chunks 200000 [--calls 300] [--keep DIR]

1. Text: corpora/cmcp chunked by docindex's own extractor and chunker (ingest
   with a stub embedder), then replicated under new source names until N
   chunks: copy 0 is the real text, every other copy drops a different ~15% of
   the words of each chunk (deterministic, seeded by the copy), so BM25
   posting lists grow as in a larger corpus.
2. Vectors: synthetic clustered 384-d unit vectors (benchmarks/ann_data.py,
   seed 1), recorded under the real model's name so `docindex serve-mcp`
   serves the index as is; no hours of embedding. Queries are embedded for
   real (MiniLM), so search latency includes the query embedding.
3. Rows, vectors and FTS5 are written in one transaction, and the search
   files (ANN graph, BM25 postings: docindex/ann_build.py) inside it before
   COMMIT, exactly as `docindex ingest` does.
4. Measured: build time (rows / search files), size on disk (SQLite + the
   search files), open time and RSS in this process (Index(db) and its first
   search), search P50/P95 in-process (hybrid, k=5), the MCP stdio round trip
   (`crag_search`, k=5) against `docindex serve-mcp` with that server's RSS,
   and dense recall@10 of the ANN path against the exact scan of the same
   vectors: for in-distribution queries (ann_data.queries, seed 3) and for
   the real questions' MiniLM vectors (which fall outside the synthetic
   clusters, a harder case).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import numpy as np

if str(Path(__file__).resolve().parents[1]) not in sys.path:   # run as a script: the repository's packages
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.ann_data import DIM, clustered, exact_top, queries, recall  # noqa: E402
from benchmarks.docindex_common import CORPORA, REPO, machine, percentiles, write_results  # noqa: E402
from benchmarks.mcp_roundtrip import QUESTIONS, _drop_words  # noqa: E402
from docindex import ann, ann_build, ann_sidecar, lexical_topk, store  # noqa: E402
from docindex.embedder import MODEL_DIM, MODEL_NAME  # noqa: E402
from docindex.index import Index  # noqa: E402
from docindex.ingest import ingest  # noqa: E402
from serve_app.percentile import percentile  # noqa: E402

K = 5
RECALL_QUERIES = 200


class _StubEmbedder:
    """Chunking needs token counts, not vectors: ingest of the base corpus with this is quick."""

    name = "scale-stub"
    dim = DIM

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.full((len(texts), self.dim), 1.0 / np.sqrt(self.dim), dtype=np.float32)

    def count_tokens(self, text: str) -> int:
        return int(len(text.split()) * 1.3) + 2


def base_chunks(workdir: Path, corpus: Path) -> tuple[list[tuple], dict[int, tuple]]:
    """The corpus's chunks (doc_id, ordinal, level, anchor, heading_path, text, fts body) and documents."""
    db = workdir / "cmcp-chunks.db"
    ingest([corpus], db, "base", embedder=_StubEmbedder())
    with Index(db, embedder=_StubEmbedder(), exact=True) as index:
        conn = index._conn    # a benchmark may read the raw rows
        documents = {row[0]: row[1:] for row in conn.execute("SELECT id, source, title FROM documents")}
        chunks = conn.execute(
            "SELECT c.doc_id, c.ordinal, c.level, c.anchor, c.heading_path, c.text, f.body FROM chunks c "
            "JOIN chunks_fts f ON f.rowid = c.id ORDER BY c.doc_id, c.ordinal").fetchall()
    return chunks, documents


def build(db: Path, n: int, workdir: Path, *, min_chunks: int | None = None, corpus: Path = CORPORA / "cmcp") -> dict:
    """An n-chunk index at `db` (collection "scaled"); returns the build's timings."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    chunks, documents = base_chunks(workdir, corpus)
    by_doc: dict[int, list[tuple]] = {}
    for row in chunks:
        by_doc.setdefault(row[0], []).append(row[1:])
    vectors = clustered(n, seed=1)
    t1 = time.perf_counter()
    conn, _ = store.open_for_ingest(db)
    written = 0
    try:
        conn.execute("BEGIN IMMEDIATE")
        copy = 0
        while written < n:
            rng = np.random.default_rng(copy)
            for doc_id, (source, title) in documents.items():
                rows = [(o, lvl, a, tuple(json.loads(p)), t if not copy else _drop_words(t, rng),
                         b if not copy else _drop_words(b, rng)) for o, lvl, a, p, t, b in by_doc.get(doc_id, [])]
                rows = rows[: n - written]
                if not rows:
                    continue
                new_id = store.insert_document(conn, collection="scaled", source=f"copy{copy:05d}/{source}",
                                               path="/synthetic", sha256=f"{copy}-{doc_id}", size=0, mtime_ns=0,
                                               title=title, metadata={})
                store.insert_chunks(conn, new_id, "scaled", rows, vectors[written:written + len(rows)])
                written += len(rows)
            copy += 1
        store.record_embedder(conn, MODEL_NAME, MODEL_DIM)
        version = store.bump_index_version(conn)
        t2, cpu2 = time.perf_counter(), time.process_time()
        token = ann_build.write(conn, db, version, changed="scaled", min_chunks=min_chunks)
        t3, cpu3 = time.perf_counter(), time.process_time()
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return {"chunks": written, "base_and_vectors_s": round(t1 - t0, 1), "rows_s": round(t2 - t1, 1),
            "search_files_s": round(t3 - t2, 1), "build_s": round(t3 - t0, 1), "search_files": token is not None,
            # CPU seconds of this process (the ANN build may use 2 threads): what the load does not inflate
            "rows_cpu_s": round(cpu2 - cpu0, 1), "search_files_cpu_s": round(cpu3 - cpu2, 1)}


def add_impact_order(db: Path) -> dict:
    """An index kept from a run before the search files carried the postings' impact order
    (docindex/lexical_topk.py) or their impacts (stop 50): write them, as the build now does
    (ann_sidecar.save_arrays)."""
    folder = ann_sidecar.folder(db)
    manifests = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not manifests:
        return {}
    arrays = folder / json.loads(manifests[-1].read_text())["arrays"]
    if (arrays / "by_impact.npy").is_file() and (arrays / "impacts.npy").is_file():
        return {}
    t0 = time.perf_counter()
    ids = np.load(arrays / "chunk_ids.npy", mmap_mode="r")
    postings = ann_sidecar.load_postings(arrays, np.asarray(ids), int(json.loads(manifests[-1].read_text())["n_docs"]))
    impacts = lexical_topk.posting_impacts(postings)
    if not (arrays / "by_impact.npy").is_file():
        np.save(arrays / "by_impact.npy", lexical_topk.impact_order(postings, impacts))
    np.save(arrays / "impacts.npy", impacts)
    return {"impact_order_added_s": round(time.perf_counter() - t0, 1)}


def disk_mb(db: Path) -> dict:
    sqlite = sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())
    folder = ann_sidecar.folder(db)
    files = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0
    return {"sqlite_mb": round(sqlite / 2**20, 1), "search_files_mb": round(files / 2**20, 1)}


def rss_mb(pid: int | str = "self") -> dict:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {name: round(int(fields[key].split()[0]) / 1024) for name, key in (("rss_mb", "VmRSS"), ("peak_mb", "VmHWM"))}


def in_process(db: Path, rounds: int) -> dict:
    """Open, first search, P50/P95 of hybrid k=5 searches, dense recall@10 of the ANN path vs exact."""
    from docindex.minilm import default_embedder

    embedder = default_embedder(threads=1)
    embedder.embed(["warm up"])
    before = rss_mb()["rss_mb"]
    t0 = time.perf_counter()
    index = Index(db, embedder=embedder)
    open_s = time.perf_counter() - t0
    index.search(QUESTIONS[0], k=K)
    first_s = time.perf_counter() - t0
    opened_mb = rss_mb()["rss_mb"] - before
    latencies = []
    stages: dict[str, list[float]] = {}
    cpu0 = time.process_time()
    for _ in range(rounds):
        for question in QUESTIONS:
            timings: dict[str, float] = {}
            t = time.perf_counter()
            index.search(question, k=K, timings=timings)
            latencies.append((time.perf_counter() - t) * 1e3)
            for stage, ms in timings.items():
                stages.setdefault(stage, []).append(ms)
    cpu_ms = (time.process_time() - cpu0) * 1e3 / max(1, len(latencies))
    snapshot = index._snapshot
    assert snapshot is not None
    result = {"open_s": round(open_s, 2), "open_and_first_search_s": round(first_s, 2),
              "index_rss_mb": opened_mb, "uses_ann": sorted(snapshot.anns),
              "bm25_impact_ordered": snapshot.lexical.by_impact is not None,
              "search_ms": percentiles(latencies), "search_cpu_ms_mean": round(cpu_ms, 2), "searches": len(latencies),
              "stage_ms_p50": {stage: round(float(percentile(v, 50) or 0.0), 2) for stage, v in stages.items()}}
    result["bm25_ms_p50"] = bm25_paths(index, rounds)
    for name, qs in (("synthetic", queries(RECALL_QUERIES, seed=3)), ("real_questions", embedder.embed(QUESTIONS))):
        truth = snapshot.ids[exact_top(snapshot.matrix, np.asarray(qs, dtype=np.float32), 10)]
        found = [ann.top_ids(snapshot.anns, snapshot.slices, snapshot.ids, snapshot.matrix, None, q, 10)
                 for q in np.asarray(qs, dtype=np.float32)]
        result[f"recall_at_10_{name}"] = None if found[0] is None else round(recall(np.array(found), truth), 4)
    index.close()
    return result


def bm25_paths(index: Index, rounds: int) -> dict:
    """BM25 alone (chunk postings, CANDIDATES rows) over the questions: the whole lists walked, and
    the heads of impact-ordered postings wherever they are read (as search does). Same results."""
    from docindex.index import CANDIDATES
    from docindex.textsearch import query_terms

    snapshot = index._snapshot
    assert snapshot is not None
    out: dict[str, float] = {}
    for name, least in (("walk", 10**15), ("as_search", None)):
        samples = []
        for _ in range(rounds):
            for question in QUESTIONS:
                terms = query_terms(question)
                phrases = index._tokenizer.tokens(index._conn, terms)
                t = time.perf_counter()
                snapshot.lexical.scores(phrases, 0, len(snapshot.ids), CANDIDATES,
                                        lambda i, terms=terms: index._phrase_scores(terms[i], snapshot),
                                        early_stop_min=least)
                samples.append((time.perf_counter() - t) * 1e3)
        out[name] = round(float(percentile(samples, 50) or 0.0), 2)
        out[f"{name}_p95"] = round(float(percentile(samples, 95) or 0.0), 2)
    return out


async def mcp(db: Path, calls: int) -> dict:
    """`docindex serve-mcp` on db: start to first answer, round-trip P50/P95, the server's RSS."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "docindex.cli", "serve-mcp", "--db", str(db)],
                                   cwd=str(REPO))
    t0 = time.perf_counter()
    async with Client(params, read_timeout_seconds=120) as client:
        await client.call_tool("crag_search", {"query": QUESTIONS[0], "k": K})
        first_s = time.perf_counter() - t0
        stats = await client.read_resource("docindex://stats")
        pid = json.loads(stats.contents[0].text)["server_pid"]
        for i in range(10):
            await client.call_tool("crag_search", {"query": QUESTIONS[i % len(QUESTIONS)], "k": K})
        samples = []
        for i in range(calls):
            t = time.perf_counter()
            result = await client.call_tool("crag_search", {"query": QUESTIONS[i % len(QUESTIONS)], "k": K})
            samples.append((time.perf_counter() - t) * 1e3)
            assert not result.is_error, result.content[0].text
        server = rss_mb(pid)
    return {"start_to_first_answer_s": round(first_s, 2), "round_trip_ms": percentiles(samples), "calls": calls,
            "server_rss_mb": server["rss_mb"], "server_peak_rss_mb": server["peak_mb"]}


def run(n: int, workdir: Path, *, rounds: int = 5, calls: int = 300, min_chunks: int | None = None,
        with_mcp: bool = True, corpus: Path = CORPORA / "cmcp", measure_only: bool = False) -> dict:
    """Everything the script reports, for an n-chunk index built in `workdir` from `corpus`'s text
    (`measure_only`: the index a previous run left there, not rebuilt; no build figures)."""
    db = workdir / f"scale-{n}.db"
    built = {"chunks": n, "measure_only": True, **add_impact_order(db)} if measure_only else \
        build(db, n, workdir, min_chunks=min_chunks, corpus=corpus)
    out = {"build": built, "disk": disk_mb(db), "in_process": in_process(db, rounds)}
    if with_mcp:
        out["mcp"] = anyio.run(mcp, db, calls)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, required=True)
    parser.add_argument("--calls", type=int, default=300, help="MCP round trips timed")
    parser.add_argument("--rounds", type=int, default=5, help="in-process rounds over the 24 questions")
    parser.add_argument("--keep", type=Path, default=None, help="build in this folder and keep the index")
    parser.add_argument("--no-write", action="store_true", help="print the results, do not write results files")
    parser.add_argument("--measure-only", action="store_true",
                        help="with --keep: measure the index a previous run kept there (results: scale_N_measure)")
    parser.add_argument("--name", default=None,
                        help="results file stem (default scale_N, or scale_N_measure): another machine's run beside")
    args = parser.parse_args()
    if args.measure_only and not (args.keep and (args.keep / f"scale-{args.chunks}.db").is_file()):
        parser.error(f"--measure-only needs --keep DIR holding scale-{args.chunks}.db from an earlier run")
    info = machine()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=REPO).stdout.strip()
    started = time.perf_counter()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        workdir, cleanup = args.keep, None
    else:
        workdir = Path(tempfile.mkdtemp(prefix="docindex-scale-", dir=os.environ.get("SCALE_TMP")))
        cleanup = workdir
    try:
        measured = run(args.chunks, workdir, rounds=args.rounds, calls=args.calls, measure_only=args.measure_only)
    finally:
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
    result = {"machine": info, "commit": commit, "command": " ".join(["benchmarks/scale.py", *sys.argv[1:]]),
              "ann_min_chunks": ann.min_chunks(), "ef_search": ann.ef_for(args.chunks), "wall_s": 0.0, **measured}
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=1))
    if not args.no_write:
        name = args.name or f"scale_{args.chunks}" + ("_measure" if args.measure_only else "")
        write_results(name, result, markdown(result))


def markdown(r: dict) -> str:
    m, b, d, p = r["machine"], r["build"], r["disk"], r["in_process"]
    lines = [f"# docindex at {b['chunks']:,} chunks", "",
             f"`{r['command']}` on a {m['machine']}, Python {m['python']}, {m['date']}, commit {r['commit']}; "
             f"1-minute load average at start {m['load_avg_1m_at_start']} (2 cores shared with other sessions). "
             f"Whole run {r['wall_s']} s. ANN from {r['ann_min_chunks']:,} chunks, ef {r['ef_search']}.", "",
             "| what | value |", "|---|---|",
             ("| build | not rebuilt: the index an earlier run kept (--measure-only)"
              + (f"; its postings' impact order added in {b['impact_order_added_s']} s" if "impact_order_added_s" in b
                 else "") + " |") if b.get("measure_only") else
             f"| build (chunk cmcp, vectors / rows + FTS5 / search files) | {b['build_s']} s "
             f"({b['base_and_vectors_s']} / {b['rows_s']} / {b['search_files_s']}); CPU: chunk + rows "
             f"{b.get('rows_cpu_s', '-')} s, search files {b.get('search_files_cpu_s', '-')} s |",
             f"| size on disk (SQLite / search files) | {d['sqlite_mb']} MB / {d['search_files_mb']} MB |",
             f"| open in-process (Index(db)) / with first search | {p['open_s']} s / {p['open_and_first_search_s']} s |",
             f"| RSS added by the open index in-process | {p['index_rss_mb']} MB |",
             f"| search in-process, hybrid k=5, P50 / P95 ({p['searches']} searches) | "
             f"{p['search_ms']['p50']} / {p['search_ms']['p95']} ms (CPU {p.get('search_cpu_ms_mean', '-')} ms mean) |",
             "| in-process stages, P50 ms | " + ", ".join(f"{k} {v}" for k, v in p.get("stage_ms_p50", {}).items()) + " |",
             f"| BM25 reads the heads of impact-ordered postings | {p.get('bm25_impact_ordered', '-')} |",
             "| BM25 alone, P50 / P95 ms: whole lists walked; as search runs it | " + (
                 "{walk} / {walk_p95}; {as_search} / {as_search_p95}".format(**p["bm25_ms_p50"])
                 if "bm25_ms_p50" in p else "-") + " |",
             f"| dense recall@10 vs exact: synthetic queries / real questions | "
             f"{p['recall_at_10_synthetic']} / {p['recall_at_10_real_questions']} |"]
    if "mcp" in r:
        c = r["mcp"]
        lines += [f"| MCP crag_search round trip P50 / P95 ({c['calls']} calls) | "
                  f"{c['round_trip_ms']['p50']} / {c['round_trip_ms']['p95']} ms |",
                  f"| serve-mcp: start to first answer | {c['start_to_first_answer_s']} s |",
                  f"| serve-mcp RSS (now / peak) | {c['server_rss_mb']} / {c['server_peak_rss_mb']} MB |"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
