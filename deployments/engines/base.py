"""The one interface every generation engine implements.

fake | openai | llamacpp | vllm each live in their own module and register in
`deployments.engines.registry`. The Generator deployment owns exactly one
engine; its `slots` (concurrent sequences the engine really runs) must equal
the deployment's `max_ongoing_requests` so overload queues in Serve (and turns
into 503s) instead of hiding inside the engine.

Contract of `stream()`:
- yields `Delta`s with text; the LAST delta carries `finish_reason`
  ("stop" | "length" | "abort") and `usage`;
- errors are raised (`deployments.errors.EngineError` subclasses), never yielded;
- a stream that ends without a finish reason is the engine's bug: the
  Generator raises `IncompleteStream` for it;
- when the consumer is cancelled (client disconnect), the engine must stop
  computing for that request (abort), then re-raise CancelledError.
"""
from __future__ import annotations

import abc
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from deployments.passage import Passage

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class Prompt:
    """Chat messages; engines apply their own chat template.

    `messages[0]` is the stable system prompt (rules) so engines with prefix
    caching reuse it across requests.

    The structured parts travel beside the rendered text: `question` and
    `passages` (source n is `passages[n-1]`, text as clipped for the prompt)
    for engines that answer without a model (extractive) and for the citation
    grammar (its markers are 1..len(passages)); `nonce` is the fence nonce,
    so the scaffolding filter knows what must never reach a client.
    """

    messages: tuple[Message, ...]
    question: str = ""
    passages: tuple[Passage, ...] = ()
    nonce: str = ""

    def as_dicts(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in self.messages]

    def text(self) -> str:
        """Flat text (for token estimates, logs and the echoing fake engine)."""
        return "\n\n".join(m.content for m in self.messages)


@dataclass(frozen=True)
class GenParams:
    request_id: str
    max_tokens: int = 256
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    constrain_citations: bool = True
    """Engines that can constrain decoding answer only the refusal sentence or
    sentences closed by [n] markers naming this prompt's sources
    (deployments/citation_grammar.py); `Settings.constrain_citations` turns it off."""
    ignore_eos: bool = False
    """Generate max_tokens tokens whatever the model would end with (llamacpp and vllm; a
    benchmark's fixed length, benchmarks/engines.py --fixed-length). Not for answers: with the
    citation grammar an answer may have nothing left to say but the end."""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


FinishReason = Literal["stop", "length", "abort"]
_FINISH_REASONS: dict[str, FinishReason] = {"stop": "stop", "length": "length", "abort": "abort"}


def finish_reason(reported: str | None) -> FinishReason:
    """What an engine library or server reports as its finish reason, as a Delta carries it: "stop",
    "length" and "abort" as they are; anything else ("content_filter", "tool_calls", a new one) is "stop"."""
    return _FINISH_REASONS.get(reported or "", "stop")


@dataclass(frozen=True)
class Delta:
    text: str = ""
    finish_reason: FinishReason | None = None
    usage: Usage | None = None


class Engine(abc.ABC):
    """A text generation backend. Capabilities are class attributes."""

    name: ClassVar[str]

    def __init__(self, *, model: str, slots: int) -> None:
        self.model = model
        self.slots = slots

    async def start(self) -> None:
        """Load weights / open connections. Called once before any stream."""

    @abc.abstractmethod
    def stream(self, prompt: Prompt, params: GenParams) -> AsyncGenerator[Delta, None]:
        """Generate; see the module docstring for the contract."""

    async def abort(self, request_id: str) -> None:
        """Stop computing for `request_id` (idempotent, unknown ids ignored)."""

    async def check_health(self) -> None:
        """Raise EngineUnavailable if the engine cannot serve."""

    async def close(self) -> None:
        """Release the engine's resources."""


@dataclass
class EngineSpec:
    """What `build_app` passes to the Generator: engine name + its kwargs."""

    name: str
    model: str = ""
    slots: int = 1
    options: dict[str, Any] = field(default_factory=dict)
