"""API keys: every route but /healthz (and the static page, which a browser
loads without headers) needs a valid bearer; comparison in constant time;
keys never reach a log record or a response."""
from __future__ import annotations

import hmac
import logging

import httpx
import pytest

from serve_app import ingress
from serve_app.ingress import create_app
from tests.reliability.conftest import PLAIN_PASSAGES, StaticPipeline, settings

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]
KEYS = ["k-alpha-8f3a1c", "k-beta-77e0d2"]
QUESTION = "How does Serve scale?"
GUARDED = [("POST", "/ask"), ("POST", "/ask?stream=false"), ("GET", "/stats"), ("GET", "/openapi.json"),
           ("GET", "/collections")]
BAD_HEADERS = [{}, {"authorization": "Bearer"}, {"authorization": "Bearer "}, {"authorization": "Bearer nope"},
               {"authorization": f"Basic {KEYS[0]}"}, {"authorization": f"Bearer {KEYS[0]}x"},
               {"authorization": f"Bearer {KEYS[0][:-1]}"}, {"authorization": KEYS[0]},
               {"authorization": f"Bearer {KEYS[0]},{KEYS[1]}"}]


def _client() -> httpx.AsyncClient:
    app = create_app(StaticPipeline(PLAIN_PASSAGES), settings(api_keys=",".join(KEYS)))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def _call(client: httpx.AsyncClient, method: str, path: str, headers: dict) -> httpx.Response:
    body = {"json": {"question": QUESTION}} if method == "POST" else {}
    return await client.request(method, path, headers=headers, **body)


async def test_every_guarded_route_refuses_missing_or_wrong_tokens() -> None:
    async with _client() as client:
        for method, path in GUARDED:
            for headers in BAD_HEADERS:
                response = await _call(client, method, path, headers)
                assert response.status_code == 401, (method, path, headers)
                assert response.headers["www-authenticate"] == "Bearer"
                assert response.json()["error"]["stage"] == "auth"


async def test_every_guarded_route_accepts_each_key_and_healthz_needs_none() -> None:
    async with _client() as client:
        for key in KEYS:
            for method, path in GUARDED:
                response = await _call(client, method, path, {"authorization": f"bearer {key}"})
                assert response.status_code == 200, (method, path)
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/")).status_code in (200, 404)     # static page, no data


async def test_keys_are_compared_with_hmac_compare_digest_against_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(ingress.hmac, "compare_digest", spy)
    async with _client() as client:
        assert (await client.get("/stats", headers={"authorization": f"Bearer {KEYS[0]}"})).status_code == 200
        assert (await client.get("/stats", headers={"authorization": "Bearer wrong"})).status_code == 401
    # No early exit: a match on the first key still compares against the second.
    assert [b for _, b in calls] == [k.encode() for k in KEYS] * 2


async def test_keys_never_reach_logs_or_responses(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with _client() as client:
        texts = []
        for key in (*KEYS, KEYS[0] + "x"):
            for method, path in GUARDED:
                texts.append((await _call(client, method, path, {"authorization": f"Bearer {key}"})).text)
        texts.append((await client.get("/healthz")).text)
        # a failing answer logs with the trace id: it must not carry the header either
        texts.append((await client.post("/ask", json={"question": QUESTION + " [[fake:error]]"},
                                        headers={"authorization": f"Bearer {KEYS[1]}"})).text)
    logged = "\n".join(r.getMessage() + str(r.args) + str(r.exc_info) for r in caplog.records)
    for key in KEYS:
        assert key not in logged
        assert all(key not in text for text in texts)
    assert KEYS[0] not in repr(settings(api_keys=",".join(KEYS)))
