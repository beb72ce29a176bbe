"""Any OpenAI-compatible chat server (vLLM serve, llama.cpp server, Ollama, a
hosted API) over httpx streaming.

`slots` must be what the server really runs at once (e.g. llama.cpp
`--parallel`, vLLM `--max-num-seqs`): the Generator's max_ongoing_requests is
set to it, so overload queues in Serve instead of inside the server.
Retries before the first token live in the Generator (shared by all engines).

Citation-constrained decoding: OpenAI's API has no grammar field, so it is
sent only where the server is known to take one — `grammar_field:
llama-server` sends `grammar` (GBNF), `grammar_field: vllm` sends
`structured_outputs: {grammar}` (vLLM >= 0.12). The default `none` sends
nothing: the answer is then unconstrained and the CitationChecker still
reports invalid citations (docs/engines.md).
"""
from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from typing import Any

import httpx

from deployments.citation_grammar import citation_gbnf
from deployments.engines.base import Delta, Engine, FinishReason, GenParams, Prompt, Usage, finish_reason
from deployments.errors import ConfigError, EngineError, EngineTimeout, EngineUnavailable
from deployments.sse import aiter_events

GRAMMAR_FIELDS = ("none", "llama-server", "vllm")


class OpenAIEngine(Engine):
    name = "openai"

    def __init__(self, *, model: str, slots: int = 1, base_url: str = "http://127.0.0.1:8080/v1",
                 api_key_env: str = "OPENAI_API_KEY", chunk_timeout_s: float = 30.0,
                 connect_timeout_s: float = 5.0, grammar_field: str = "none",
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if grammar_field not in GRAMMAR_FIELDS:
            raise ConfigError(f"openai grammar_field must be one of {', '.join(GRAMMAR_FIELDS)}, got {grammar_field!r}")
        super().__init__(model=model, slots=slots)
        self.grammar_field = grammar_field
        self.base_url = base_url.rstrip("/")
        # The key is read from the environment, never from YAML args (which Serve stores).
        self._api_key = os.environ.get(api_key_env, "")
        # httpx's read timeout applies to each chunk read: a stalled stream fails
        # after chunk_timeout_s even when the whole answer takes much longer.
        self._timeout = httpx.Timeout(connect=connect_timeout_s, read=chunk_timeout_s, write=10.0, pool=10.0)
        self._client: httpx.AsyncClient | None = None
        self._transport = transport          # tests inject httpx.MockTransport
        self._active: dict[str, httpx.Response] = {}

    async def start(self) -> None:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        self._client = httpx.AsyncClient(base_url=self.base_url, timeout=self._timeout, headers=headers,
                                         transport=self._transport,
                                         limits=httpx.Limits(max_connections=max(self.slots, 1) * 2))

    def _payload(self, prompt: Prompt, params: GenParams) -> dict[str, Any]:
        payload = {
            "model": self.model, "messages": prompt.as_dicts(), "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": params.max_tokens, "temperature": params.temperature,
        }
        if params.stop:
            payload["stop"] = list(params.stop)
        if params.constrain_citations and prompt.passages and self.grammar_field != "none":
            grammar = citation_gbnf(len(prompt.passages))
            if self.grammar_field == "llama-server":
                payload["grammar"] = grammar
            else:
                payload["structured_outputs"] = {"grammar": grammar}
        return payload

    async def stream(self, prompt: Prompt, params: GenParams) -> AsyncGenerator[Delta, None]:
        if self._client is None:
            raise EngineUnavailable("openai engine not started")
        finish: FinishReason | None = None
        usage: Usage | None = None
        try:
            async with self._client.stream("POST", "/chat/completions", json=self._payload(prompt, params)) as resp:
                if resp.status_code >= 500 or resp.status_code == 429:
                    raise EngineUnavailable(f"model server answered HTTP {resp.status_code}")
                if resp.status_code >= 400:
                    raise EngineError(f"model server rejected the request (HTTP {resp.status_code})")
                self._active[params.request_id] = resp
                async for event in aiter_events(resp.aiter_lines()):
                    data = event.data.strip()
                    if not data:
                        continue
                    if data == "[DONE]":
                        break
                    chunk = json.loads(data)
                    if chunk.get("usage"):
                        u = chunk["usage"]
                        usage = Usage(u.get("prompt_tokens", 0), u.get("completion_tokens", 0))
                    for choice in chunk.get("choices") or []:
                        text = (choice.get("delta") or {}).get("content") or ""
                        if text:
                            yield Delta(text=text)
                        if choice.get("finish_reason"):
                            finish = finish_reason(choice["finish_reason"])
        except httpx.TimeoutException as e:
            raise EngineTimeout(f"model server sent nothing for {self._timeout.read:.0f} s") from e
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as e:
            raise EngineUnavailable(f"model server unreachable ({type(e).__name__})") from e
        except json.JSONDecodeError as e:
            raise EngineError("model server sent a malformed stream chunk") from e
        finally:
            self._active.pop(params.request_id, None)
        if finish is not None:
            # The final (finish) delta carries usage; the Generator raises
            # IncompleteStream when a server ends without any finish reason.
            yield Delta(finish_reason=finish, usage=usage or Usage())

    async def abort(self, request_id: str) -> None:
        # Closing the HTTP response drops the connection; OpenAI-compatible
        # servers (vLLM, llama.cpp) abort the sequence when the client leaves.
        resp = self._active.pop(request_id, None)
        if resp is not None:
            await resp.aclose()

    async def check_health(self) -> None:
        if self._client is None:
            raise EngineUnavailable("openai engine not started")
        try:
            resp = await self._client.get("/models")
        except httpx.HTTPError as e:
            raise EngineUnavailable(f"model server unreachable ({type(e).__name__})") from e
        if resp.status_code >= 500:
            raise EngineUnavailable(f"model server answered HTTP {resp.status_code}")

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
