"""A stand-in for the askdocs ingress that speaks the exact SSE protocol of
DESIGN.md §4, so the page can be tested in a browser while the real ingress
is being written. The question picks the scenario.

It cuts its stream at awkward places on purpose (inside an event, inside a
JSON string, between the CR and LF of a line end) to prove the page
reassembles events split across network reads.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

PAGE = Path(__file__).resolve().parents[2] / "serve_app" / "static" / "index.html"

SOURCES = [
    {
        "n": 1, "source": "guides/serving.md", "anchor": "autoscaling", "title": "Serving › Autoscaling",
        "text": "Replicas scale between min_replicas and max_replicas.\n<b>not bold</b> & raw <script>x</script>",
        "cosine": 0.712, "bm25": 11.43, "fusion": 0.0325,
    },
    {
        "n": 2, "source": "guides/limits.md", "anchor": "backpressure", "title": "Limits › Backpressure",
        "text": "When every replica is busy, requests queue; beyond the queue the proxy answers 503.",
        "cosine": 0.654, "bm25": 8.02, "fusion": 0.0318,
    },
]
ANSWER_TOKENS = [
    "Replicas", " scale", " between", " min", " and", " max", " [", "1", "].",
    " Beyond", " the", " queue", " the", " proxy", " answers", " 503", " [2", "]", " [7].",
    " It", " also", " bakes", " bread", " [1].",
]
# "section" questions: four passages of one section (same file, anchor and heading
# path), Markdown in their text, HTML that must never run, an evidence span
# that crosses **bold**.
SECTION_TEXTS = [
    "Run the **installer** first.\n<img src=x onerror=\"window.pwned=1\"> and [a link](javascript:window.pwned=2)\n\n"
    "```bash\nmake install && echo \"<b>done</b>\"\n```\n\n- item one with `inline code`\n- item _two_",
    "Then set `ASKDOCS_MODEL` to a **GGUF** file.",
    "## Options\n\n1. first option\n2. second option",
    "> A quoted *note* about the setup.",
]
SECTION_SOURCES = [
    {"n": i + 1, "source": "guide.md", "anchor": "setup", "title": "Guide › Setup", "text": text,
     "cosine": 0.7 - i / 20, "bm25": 5.0, "fusion": 0.03}
    for i, text in enumerate(SECTION_TEXTS)
]
SECTION_SOURCES[0]["url"] = "https://docs.example/v2/guide.md#setup"      # docindex ingest --base-url
SECTION_SOURCES[1]["url"] = "javascript:window.pwned=3"                   # a hostile document's front matter
SECTION_ANSWER = "Run the installer first [1]. Then set the model [2]."
SECTION_EVIDENCE = [{"sentence": 0, "n": 1, "start": 0, "end": len("Run the **installer** first."), "overlap": 1.0}]
COLLECTIONS = ["guides", "recipes"]
REQUESTS: list[dict] = []      # every /ask body, for the tests (the server runs in their process)
REFUSAL = "I cannot answer this from the provided documents."
TIMINGS = {"retrieval_ms": 12.4, "gate_ms": 0.4, "ttft_ms": 48.0, "generation_ms": 410.0, "total_ms": 431.2}


def event(name: str, payload: dict) -> str:
    # sse-starlette (which the ingress uses) ends lines with CRLF.
    return f"event: {name}\r\ndata: {json.dumps(payload)}\r\n\r\n"


def awkward_chunks(text: str) -> list[bytes]:
    """Cuts one event into 3 pieces: mid-JSON and between CR and LF."""
    raw = text.encode()
    cr = raw.index(b"\r\n\r\n") + 1
    return [raw[: cr // 2], raw[cr // 2 : cr], raw[cr:]]


async def answer_stream(trace_id: str) -> AsyncIterator[bytes]:
    for piece in awkward_chunks(event("sources", {"sources": SOURCES})):
        yield piece
    for text in ANSWER_TOKENS:
        await asyncio.sleep(0.03)  # the page must show tokens as they arrive
        yield event("token", {"text": text}).encode()
    done = {
        "answer": "".join(ANSWER_TOKENS), "citations": [1, 2, 7], "invalid_citations": [7],
        "unsupported_sentences": [2], "support": 0.61, "refused": False, "refusal_stage": None,
        "truncated": False, "usage": {"prompt_tokens": 312, "completion_tokens": len(ANSWER_TOKENS)},
        "timings": TIMINGS, "cost_usd": 0.0, "trace_id": trace_id,
    }
    for piece in awkward_chunks(event("done", done)):
        yield piece


async def section_stream(trace_id: str) -> AsyncIterator[bytes]:
    yield event("sources", {"sources": SECTION_SOURCES}).encode()
    yield event("token", {"text": SECTION_ANSWER}).encode()
    done = {
        "answer": SECTION_ANSWER, "citations": [1, 2], "invalid_citations": [], "unsupported_sentences": [],
        "support": 1.0, "evidence": SECTION_EVIDENCE, "refused": False, "refusal_stage": None, "truncated": False,
        "unknown_names": ["PKCE", "code_challenge"],      # the question names them; no chunk uses them
        "usage": {"prompt_tokens": 100, "completion_tokens": 12}, "timings": TIMINGS, "cost_usd": 0.0,
        "trace_id": trace_id,
    }
    yield event("done", done).encode()


async def refusal_stream(trace_id: str) -> AsyncIterator[bytes]:
    yield event("sources", {"sources": SOURCES[1:]}).encode()
    done = {
        "answer": REFUSAL, "citations": [], "invalid_citations": [], "unsupported_sentences": [],
        "support": 0.0, "refused": True, "refusal_stage": "gate", "unknown_names": ["Sonos"], "truncated": False,
        "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        "timings": {**TIMINGS, "ttft_ms": None, "generation_ms": 0.0}, "cost_usd": 0.0, "trace_id": trace_id,
    }
    yield event("done", done).encode()


async def failing_stream(trace_id: str) -> AsyncIterator[bytes]:
    yield event("sources", {"sources": SOURCES}).encode()
    for text in ["Replicas", " scale"]:
        await asyncio.sleep(0.03)
        yield event("token", {"text": text}).encode()
    yield event("error", {"stage": "generation", "message": "The model stopped responding.",
                          "partial": "Replicas scale", "trace_id": trace_id}).encode()


async def ask(request: Request) -> Response:
    if request.headers.get("authorization") == "Bearer wrong-key":
        return JSONResponse({"detail": "missing or wrong API key"}, status_code=401)
    body = await request.json()
    REQUESTS.append(body)
    question = str(body.get("question", ""))
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    if "busy" in question:
        return JSONResponse({"detail": "at capacity"}, status_code=503, headers={"Retry-After": "7"})
    if "weather" in question:
        stream = refusal_stream(trace_id)
    elif "fail" in question:
        stream = failing_stream(trace_id)
    elif "section" in question:
        stream = section_stream(trace_id)
    else:
        stream = answer_stream(trace_id)
    return StreamingResponse(stream, media_type="text/event-stream")


async def index(request: Request) -> Response:
    return FileResponse(PAGE)


async def collections(request: Request) -> Response:
    return JSONResponse({"collections": COLLECTIONS})


app = Starlette(routes=[
    Route("/", index),
    Route("/collections", collections),
    Route("/ask", ask, methods=["POST"]),
])
