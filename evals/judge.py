"""Optional faithfulness judge: an OpenAI-compatible chat endpoint asked one
yes/no question per (answer sentence, passage it cites).

Configured by `evals/run.py --judge-url URL --judge-model NAME` (API key from
the environment variable named by `--judge-key-env`, default
ASKDOCS_JUDGE_API_KEY). Without a URL the judge is skipped and the
faithfulness metric is simply absent from the report.

Sentences and citations are split exactly as the service's CitationChecker
splits them (`deployments.citations`), so "sentence 3" means the same thing in
`unsupported_sentences` and here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import httpx

JUDGE_SYSTEM = (
    "You check whether a passage supports a claim. Answer with exactly one word: "
    "yes if the passage states or directly implies the claim, no otherwise."
)


class JudgeError(RuntimeError):
    """The judge endpoint failed or answered something other than yes/no."""


@dataclass(frozen=True)
class JudgeConfig:
    url: str                   # base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8080/v1
    model: str
    api_key: str = ""
    timeout_s: float = 60.0

    @classmethod
    def from_args(cls, url: str | None, model: str | None, key_env: str) -> JudgeConfig | None:
        if not url:
            return None
        return cls(url=url.rstrip("/"), model=model or "default", api_key=os.environ.get(key_env, ""))


def _ask(client: httpx.Client, cfg: JudgeConfig, passage: str, claim: str) -> bool:
    body = {
        "model": cfg.model,
        "temperature": 0,
        "max_tokens": 3,
        "messages": [
            {"role": "system", "content": JUDGE_SYSTEM},
            {"role": "user", "content": f"Passage:\n<<<\n{passage}\n>>>\n\nClaim: {claim}\n\nDoes the passage support the claim?"},
        ],
    }
    headers = {"authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
    try:
        resp = client.post(f"{cfg.url}/chat/completions", json=body, headers=headers, timeout=cfg.timeout_s)
        resp.raise_for_status()
        text = resp.json()["choices"][0]["message"]["content"]
    except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
        raise JudgeError(f"judge call failed: {exc}") from exc
    word = text.strip().split()[0].strip(".,!").lower() if text.strip() else ""
    if word not in {"yes", "no"}:
        raise JudgeError(f"judge answered {text!r}, not yes/no")
    return word == "yes"


def judge_answer(client: httpx.Client, cfg: JudgeConfig, answer: str, passage_texts: dict[int, str]) -> dict:
    """{"asked": n, "supported": m, "unsupported": [[sentence_index, passage_n], ...]}."""
    from deployments.citations import cited_numbers, is_refusal
    from docindex.sentences import split_sentences

    asked = supported = 0
    unsupported: list[list[int]] = []
    for i, sentence in enumerate(split_sentences(answer)):
        if is_refusal(sentence):
            continue
        for n in sorted({n for n in cited_numbers(sentence) if n in passage_texts}):
            asked += 1
            if _ask(client, cfg, passage_texts[n], sentence):
                supported += 1
            else:
                unsupported.append([i, n])
    return {"asked": asked, "supported": supported, "unsupported": unsupported}
