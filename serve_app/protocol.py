"""The wire format of POST /ask (DESIGN.md §4): request body, SSE events and
the JSON envelope. One `sse()` helper frames every event."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

QUESTION_MAX_CHARS = 2000   # API contract: long enough for any real question, bounds prompt size
K_MIN, K_MAX = 1, 20        # API contract: more than 20 passages never fit a small model's context

Stage = Literal["retrieval", "generation", "internal"]


class AskRequest(BaseModel):
    # strict: "3" is not a k, unknown fields are typos the client should hear about
    model_config = ConfigDict(extra="forbid", strict=True)

    question: str = Field(min_length=1, max_length=QUESTION_MAX_CHARS)
    k: int | None = Field(None, ge=K_MIN, le=K_MAX)
    collection: str | None = Field(None, min_length=1, max_length=200)

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question is blank")
        return value


class SourceOut(BaseModel):
    n: int
    source: str
    anchor: str
    title: str
    text: str
    cosine: float
    bm25: float
    fusion: float
    url: str | None = None      # the citation link (docindex ingest --base-url, or front matter); None: none


class SourcesEvent(BaseModel):
    sources: list[SourceOut]


class TokenEvent(BaseModel):
    text: str


class UsageOut(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Timings(BaseModel):
    retrieval_ms: float = 0.0
    gate_ms: float = 0.0
    ttft_ms: float | None = None
    generation_ms: float = 0.0
    total_ms: float = 0.0


class EvidenceOut(BaseModel):
    """The span of passage `n`'s text (character offsets) that best supports
    answer sentence `sentence` (0-based, as in unsupported_sentences)."""

    sentence: int
    n: int
    start: int
    end: int
    overlap: float


class DoneEvent(BaseModel):
    answer: str
    citations: list[int]
    invalid_citations: list[int]
    unsupported_sentences: list[int]
    support: float
    evidence: list[EvidenceOut] = Field(default_factory=list)
    refused: bool
    refusal_stage: Literal["gate", "model"] | None
    # names in the question its documents never mention (the Gate's name clause weighed them); [] when none
    unknown_names: list[str] = Field(default_factory=list)
    truncated: bool
    usage: UsageOut
    timings: Timings
    cost_usd: float
    trace_id: str


class ErrorEvent(BaseModel):
    stage: Stage
    message: str
    partial: str | None = None
    trace_id: str


Event = SourcesEvent | TokenEvent | DoneEvent | ErrorEvent
EVENT_NAMES: dict[type[BaseModel], str] = {
    SourcesEvent: "sources", TokenEvent: "token", DoneEvent: "done", ErrorEvent: "error"}


def sse(event: Event) -> bytes:
    """One SSE frame: `event: <name>` + one `data:` line of compact JSON."""
    exclude = {"partial"} if isinstance(event, ErrorEvent) and event.partial is None else None
    return f"event: {EVENT_NAMES[type(event)]}\ndata: {event.model_dump_json(exclude=exclude)}\n\n".encode()


class EnvelopeError(BaseModel):
    stage: str
    message: str
    trace_id: str | None = None
    partial: str | None = None


class AnswerData(DoneEvent):
    sources: list[SourceOut]


class Envelope(BaseModel):
    """`?stream=false`: the done payload plus sources, or the error."""

    success: bool
    data: AnswerData | None = None
    error: EnvelopeError | None = None
