"""Rolling answer statistics for GET /stats: the last N answers of this
ingress replica (with several replicas, each reports its own window)."""
from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from serve_app.percentile import percentile

STAGES = ("retrieval_ms", "gate_ms", "ttft_ms", "generation_ms", "total_ms")


@dataclass(frozen=True)
class AnswerRecord:
    outcome: str                     # "answered" | "refused" | "error" | "cancelled"
    stage: str | None                # refusal stage or error stage
    timings: dict[str, float | None]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class AnswerStats:
    def __init__(self, window: int = 1000) -> None:
        self._records: deque[AnswerRecord] = deque(maxlen=window)

    def record(self, record: AnswerRecord) -> None:
        self._records.append(record)

    def snapshot(self) -> dict[str, Any]:
        records: Iterable[AnswerRecord] = list(self._records)
        refusals = Counter(r.stage for r in records if r.outcome == "refused")
        errors = Counter(r.stage for r in records if r.outcome == "error")
        latency: dict[str, dict[str, float | None]] = {}
        for stage in STAGES:
            values = [v for r in records if (v := r.timings.get(stage)) is not None]
            latency[stage] = {"p50": percentile(values, 50), "p95": percentile(values, 95), "n": len(values)}
        return {
            "window": self._records.maxlen,
            "answers": len(self._records),
            "answered": sum(1 for r in records if r.outcome == "answered"),
            "cancelled": sum(1 for r in records if r.outcome == "cancelled"),
            "refusals": dict(refusals),
            "errors": dict(errors),
            "latency_ms": latency,
            "tokens": {"prompt": sum(r.prompt_tokens for r in records),
                       "completion": sum(r.completion_tokens for r in records)},
            "cost_usd": round(sum(r.cost_usd for r in records), 6),
        }
