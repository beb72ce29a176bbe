"""/healthz never waits on a Generator slot, and says what is served.

In process: the ingress over `HandlePipeline` with stand-in handles whose
Generator never answers (every slot busy). On the real cluster:
tests/serve/test_cluster_healthz.py."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from deployments.engines.base import EngineSpec
from deployments.engines.models import DEFAULT_MODEL_FILE
from serve_app.handles import HandlePipeline
from serve_app.ingress import create_app
from serve_app.served import git_commit, model_name
from tests.serve.conftest import REPO, fake_settings


class _Method:
    def __init__(self, handle: _Handle, name: str) -> None:
        self.handle, self.name = handle, name

    def remote(self, *args: Any) -> Any:
        self.handle.calls.append(self.name)
        return self.handle.answers[self.name]()


class _Handle:
    """A DeploymentHandle stand-in: `.options(...)` is itself, `.method.remote()` an awaitable."""

    def __init__(self, **answers: Any) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def options(self, **_: Any) -> _Handle:
        return self

    def __getattr__(self, name: str) -> _Method:
        return _Method(self, name)


async def _never() -> None:
    await asyncio.Event().wait()         # a Generator whose slots are all busy


async def _index_info() -> dict[str, Any]:
    return {"collections": ["docs"], "chunks": 3, "version": 7, "embedder": "model.onnx"}


@pytest.mark.asyncio(loop_scope="session")
async def test_healthz_answers_while_every_generator_slot_is_busy() -> None:
    generator = _Handle(info=_never, stream=_never)
    pipeline = HandlePipeline(_Handle(index_info=_index_info), _Handle(), generator, _Handle())
    app = create_app(pipeline, fake_settings())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await asyncio.wait_for(client.get("/healthz"), 60)     # generous: it must not hang
    assert response.status_code == 200, response.text
    health = response.json()
    assert health["status"] == "ok" and health["index"] == {"chunks": 3, "version": 7}
    assert health["served"] == {"commit": git_commit(), "engine": "fake", "model": "fake", "index_version": 7,
                                "embedder": "model.onnx"}
    assert generator.calls == []                 # the probe never asked the Generator


def test_the_served_model_is_a_basename_never_a_path(tmp_path: Path) -> None:
    gguf = tmp_path / "models" / "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf"
    assert model_name(EngineSpec("llamacpp", model=str(gguf))) == gguf.name
    assert model_name(EngineSpec("llamacpp", model="")) == DEFAULT_MODEL_FILE
    assert model_name(EngineSpec("vllm", model="default")) == DEFAULT_MODEL_FILE
    assert model_name(EngineSpec("vllm", model=str(tmp_path) + "/")) == tmp_path.name       # an HF folder
    assert model_name(EngineSpec("openai", model="Qwen/Qwen2.5-7B-Instruct")) == "Qwen/Qwen2.5-7B-Instruct"
    assert model_name(EngineSpec("fake")) == "fake"


def test_the_commit_is_this_checkouts_head_or_none(tmp_path: Path) -> None:
    import subprocess

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    assert git_commit() == (head.stdout.strip() if head.returncode == 0 else None)
    assert git_commit(tmp_path) is None           # no .git: an installed package, a bare image
