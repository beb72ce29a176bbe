"""What this deployment serves, known to the ingress from its own settings.

/healthz reports it (`served`: code commit, engine, model, index version) so
an eval or an operator can record exactly what answered. Nothing here asks
the Generator: a call to it waits for one of its few slots, behind every
answer being generated, and a health probe must never wait on generation.

The model is named by its file or folder basename (`SmolLM2-135M-Instruct.Q4_1.gguf`),
never by an absolute path: /healthz is open to anyone who can reach it.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from deployments.engines.base import EngineSpec
from deployments.engines.models import DEFAULT_ALIASES, DEFAULT_MODEL_FILE

REPO = Path(__file__).resolve().parents[1]
_SHA = re.compile(r"^[0-9a-f]{40}$")
# The engine's own name for "no model given", where it is not the default GGUF.
_DEFAULT_NAMES = {"fake": "fake"}


def model_name(spec: EngineSpec) -> str:
    """The served model as a client may see it: a basename for files and folders,
    the name itself for a served model name (the openai engine's `Qwen/Qwen2.5-7B`)."""
    model = (spec.model or "").strip()
    if model in DEFAULT_ALIASES:
        return _DEFAULT_NAMES.get(spec.name, DEFAULT_MODEL_FILE if spec.name in ("llamacpp", "vllm") else "")
    looks_like_path = model.startswith(("/", "./", "../", "~")) or model.lower().endswith(".gguf")
    if looks_like_path or os.path.exists(os.path.expanduser(model)):
        return Path(os.path.expanduser(model).rstrip("/")).name
    return model


def git_commit(repo: Path = REPO) -> str | None:
    """HEAD of the checkout this code runs from, read from .git without running git;
    None outside a checkout (an installed package, a Docker image without .git)."""
    git = repo / ".git"
    try:
        if git.is_file():                                   # a worktree: "gitdir: PATH"
            git = (repo / git.read_text().split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head if _SHA.match(head) else None
        ref = head.split(":", 1)[1].strip()
        common = git / "commondir"
        roots = [git] + ([(git / common.read_text().strip()).resolve()] if common.is_file() else [])
        for root in roots:
            loose = root / ref
            if loose.is_file():
                sha = loose.read_text().strip()
                return sha if _SHA.match(sha) else None
            packed = root / "packed-refs"
            if packed.is_file():
                for line in packed.read_text().splitlines():
                    sha, _, name = line.partition(" ")
                    if name == ref and _SHA.match(sha):
                        return sha
    except (OSError, IndexError):
        return None
    return None


def served_identity(spec: EngineSpec) -> dict[str, Any]:
    """`served` without the index version (the index tells that; see /healthz)."""
    return {"commit": git_commit(), "engine": spec.name, "model": model_name(spec)}
