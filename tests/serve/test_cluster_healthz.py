"""/healthz on the real cluster while the Generator is saturated (its one slot
generating, another answer queued behind it): the probe answers 200 before
either answer ends. On main before this test, the probe asked the Generator
for its identity through its handle, queued behind both answers, and gave
503 "degraded" after 5 s: a Kubernetes or Docker probe would restart the pod."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from serve_app.ingress import HEALTH_INFO_TTL_S
from tests.serve.conftest import Cluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]
QUESTION = "What does the proxy answer when the queue is full? [[fake:slow=0.5]]"   # ~10 s an answer


async def _saturate_then_probe(url: str) -> tuple[httpx.Response, list[int], list[int]]:
    finished: list[int] = []
    generating = asyncio.Event()

    async def answer(client: httpx.AsyncClient, n: int) -> None:
        async with client.stream("POST", f"{url}/ask", json={"question": QUESTION}) as response:
            async for line in response.aiter_lines():
                if line.startswith("event: token"):
                    generating.set()
        finished.append(n)

    async with httpx.AsyncClient(timeout=120) as client:
        answers = [asyncio.create_task(answer(client, n)) for n in range(2)]   # 1 slot + 1 queued
        await asyncio.wait_for(generating.wait(), 120)
        # Let the ingress's cached index figures expire, so the probe really asks again.
        await asyncio.sleep(HEALTH_INFO_TTL_S + 0.5)
        health = await client.get(f"{url}/healthz")
        finished_at_probe = list(finished)
        await asyncio.gather(*answers)
    return health, finished_at_probe, finished


def test_healthz_answers_while_the_generator_is_saturated(serve_cluster: Cluster) -> None:
    health, finished_at_probe, finished = asyncio.run(_saturate_then_probe(serve_cluster.url))
    assert health.status_code == 200, health.text
    body: dict[str, Any] = health.json()
    assert body["status"] == "ok" and body["served"]["engine"] == "fake" and body["served"]["index_version"] == 3
    assert len(finished_at_probe) < 2 and len(finished) == 2       # the probe came back while answers were generating
