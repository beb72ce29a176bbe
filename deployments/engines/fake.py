"""A deterministic engine for tests and benchmarks: no model, exact timing.

By default it answers from the prompt's sources: the first sentence of each
of the first two fenced sources, each followed by its citation marker, so the
CitationChecker sees a fully supported answer. With no sources it says the
refusal sentence.

Behaviour per request is steered by directives in the question text (they
reach the prompt untouched), so ONE deployed app can exercise every path:

    [[fake:error]]        raise EngineUnavailable before any token
    [[fake:flaky=N]]      fail the first N attempts of this request, then answer
    [[fake:midfail]]      raise EngineError after the first token
    [[fake:truncate]]     stop after 3 tokens with finish reason "length"
    [[fake:nofinish]]     end the stream without a finish reason
    [[fake:echo]]         answer with the whole prompt text (prompt-injection tests)
    [[fake:refuse]]       answer with the refusal sentence
    [[fake:uncited]]      answer with a sentence that cites nothing
    [[fake:slow=S]]       S seconds per token for this request

Aborts are recorded in `self.aborted` and, when `abort_log` is set, appended
(one request id per line) to that file, so a test in another process can see
that a client disconnect reached the engine.
"""
from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import AsyncGenerator
from pathlib import Path

from deployments.engines.base import Delta, Engine, FinishReason, GenParams, Prompt, Usage
from deployments.errors import EngineError, EngineUnavailable
from deployments.prompt import REFUSAL_SENTENCE

_DIRECTIVE = re.compile(r"\[\[fake:(\w+)(?:=([\d.]+))?\]\]")
_SOURCE = re.compile(r"<<<SRC-(?P<nonce>[0-9a-f]+) \[(?P<n>\d+)\][^\n]*\n(?P<body>.*?)\nSRC-(?P=nonce)>>>", re.S)
_TOKEN = re.compile(r"\S+\s*")
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)", re.S)


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    m = _FIRST_SENTENCE.match(flat)
    sentence = m.group(1) if m else flat[:200]
    return sentence.rstrip(".!?")


class FakeEngine(Engine):
    name = "fake"

    def __init__(self, *, model: str = "fake", slots: int = 1, first_token_s: float = 0.0,
                 token_s: float = 0.0, abort_log: str | None = None, answer: str | None = None) -> None:
        super().__init__(model=model or "fake", slots=slots)
        self.first_token_s = first_token_s
        self.token_s = token_s
        self.abort_log = Path(abort_log) if abort_log else None
        self.fixed_answer = answer
        self.aborted: list[str] = []
        self.started = False
        self.streams = 0                    # stream() calls, so tests can see "no model call"
        self._attempts: dict[str, int] = defaultdict(int)

    async def start(self) -> None:
        self.started = True

    def _answer(self, prompt: Prompt, directives: dict[str, str]) -> str:
        if "echo" in directives:
            return prompt.text()
        if "refuse" in directives:
            return REFUSAL_SENTENCE
        if "uncited" in directives:
            return "The moon is made of green cheese."
        if self.fixed_answer is not None:
            return self.fixed_answer
        sources = list(_SOURCE.finditer(prompt.messages[-1].content))
        if not sources:
            return REFUSAL_SENTENCE
        return " ".join(f"{_first_sentence(m['body'])} [{m['n']}]." for m in sources[:2])

    async def stream(self, prompt: Prompt, params: GenParams) -> AsyncGenerator[Delta, None]:
        self.streams += 1
        directives = {name: value for name, value in _DIRECTIVE.findall(prompt.messages[-1].content)}
        self._attempts[params.request_id] += 1
        if "error" in directives:
            raise EngineUnavailable("fake engine: simulated outage")
        if "flaky" in directives and self._attempts[params.request_id] <= int(float(directives["flaky"] or 1)):
            raise EngineUnavailable("fake engine: simulated transient failure")
        token_s = float(directives["slow"]) if directives.get("slow") else self.token_s
        tokens = _TOKEN.findall(self._answer(prompt, directives))
        limit = 3 if "truncate" in directives else params.max_tokens
        prompt_tokens = len(prompt.text().split())

        if self.first_token_s:
            await asyncio.sleep(self.first_token_s)
        for i, token in enumerate(tokens[:limit]):
            if i and token_s:
                await asyncio.sleep(token_s)
            if i == 1 and "midfail" in directives:
                raise EngineError("fake engine: simulated failure mid-stream")
            yield Delta(text=token)
        if "nofinish" in directives:
            return
        emitted = min(len(tokens), limit)
        finish: FinishReason = "length" if len(tokens) > limit else "stop"
        self._attempts.pop(params.request_id, None)
        yield Delta(finish_reason=finish, usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=emitted))

    async def abort(self, request_id: str) -> None:
        if request_id in self.aborted:
            return
        self.aborted.append(request_id)
        self._attempts.pop(request_id, None)
        if self.abort_log:
            with self.abort_log.open("a") as f:
                f.write(request_id + "\n")
