"""A pipeline with one of its four calls failing, for the ingress and stage tests."""
from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any


class FailingPipeline:
    """Wraps a pipeline; `call` ("search", "decide", "stream" or "check") raises
    `error`. A stream raises at its start, or after its first item with
    `after_first=True` (the Generator accepted the request, then failed)."""

    def __init__(self, inner: Any, call: str, error: Exception, *, after_first: bool = False) -> None:
        self.inner, self.call, self.error, self.after_first = inner, call, error, after_first

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def search(self, *args: Any, **kwargs: Any) -> Any:
        if self.call == "search":
            raise self.error
        return await self.inner.search(*args, **kwargs)

    async def decide(self, *args: Any, **kwargs: Any) -> Any:
        if self.call == "decide":
            raise self.error
        return await self.inner.decide(*args, **kwargs)

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        if self.call == "stream" and not self.after_first:
            raise self.error
        async for delta in self.inner.stream(*args, **kwargs):
            yield delta
            if self.call == "stream":
                raise self.error

    async def check(self, *args: Any, **kwargs: Any) -> Any:
        if self.call == "check":
            raise self.error
        return await self.inner.check(*args, **kwargs)
