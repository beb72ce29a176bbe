"""Per-case scores and their aggregation with bootstrap 95 % intervals.

Every metric is a ratio of sums: each applicable case contributes a numerator
and a denominator (e.g. recall@5: source groups found in the top 5 / groups
required), the metric is sum(num) / sum(den), and its interval comes from
resampling *cases* with replacement (percentile bootstrap). `compare` resamples
the same case indices for both runs (paired bootstrap), so the interval is on
the difference itself and the per-case difficulty cancels out.

A record is the dict `evals/run.py` writes per case (see `ask` and `DONE_FIELDS` there);
retrieval-only records carry `sources` and no answer, so the answer metrics
simply do not apply to them.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from evals.cases import Case

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20261130

Score = tuple[float, float]            # (numerator, denominator) of one case


@dataclass(frozen=True)
class Metric:
    name: str
    higher_is_better: bool
    description: str
    score: Callable[[Case, dict], Score | None]   # None: the case does not count


# ---------------------------------------------------------------- helpers

def normalize_text(text: str) -> str:
    """Lower-case, NFKC, no markdown emphasis/code ticks, no thousands separators."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    return " ".join(text.split())


def _fact_pattern(alt: str) -> re.Pattern[str]:
    """`alt` (normalized) as a whole-token pattern: where it starts or ends with a word
    character, the neighbouring character must not be one ("dir" never matches
    "redirect", "47" never "147" or "a47f"); where it starts or ends with a digit,
    the neighbour must not continue the number either ("47" never matches "4.47" or
    "47.5": numbers match as whole numbers)."""
    head = ""
    if alt[0].isdigit():
        head = r"(?<!\w)(?<!\d[.,])"
    elif re.match(r"\w", alt[0]):
        head = r"(?<!\w)"
    tail = ""
    if alt[-1].isdigit():
        tail = r"(?!\w)(?![.,]\d)"
    elif re.match(r"\w", alt[-1]):
        tail = r"(?!\w)"
    return re.compile(head + re.escape(alt) + tail)


def fact_present(answer: str, fact: str) -> bool:
    """A key fact "a|b|c" is present when any alternative occurs in the answer on token
    boundaries (case-insensitive, thousands separators ignored; see normalize_text).

    The one matching rule for the metric and for the label test (tests/evals/test_cases.py)."""
    haystack = normalize_text(answer)
    alts = (normalize_text(a) for a in fact.split("|"))
    return any(alt and _fact_pattern(alt).search(haystack) for alt in alts)


def gold_words(reference: str) -> set[str]:
    """A reference answer's content words (normalize_text's tokens, no stopwords, no
    one-letter words): what `word_recall` looks for."""
    from deployments.citations import content_words

    return content_words(normalize_text(reference))


def word_recall(reference: str, text: str) -> float:
    """Share of the reference answer's content words that `text` has, as whole tokens
    (case-insensitive, citation markers ignored): how much of a gold answer an answer,
    or a passage, holds. An empty reference counts as fully held."""
    wanted = gold_words(reference)
    if not wanted:
        return 1.0
    have = set(re.findall(r"\w+", normalize_text(text)))
    return len(wanted & have) / len(wanted)


def ranked_sources(record: dict) -> list[str]:
    return [s["source"] for s in record.get("sources") or []]


def groups_found(case: Case, sources: Sequence[str]) -> int:
    found = set(sources)
    return sum(1 for group in case.sources if found.intersection(group))


def first_relevant_rank(case: Case, sources: Sequence[str]) -> int | None:
    relevant = {p for group in case.sources for p in group}
    for rank, source in enumerate(sources, 1):
        if source in relevant:
            return rank
    return None


def has_answer(record: dict) -> bool:
    """The service produced an answer record (not retrieval-only, no error)."""
    return record.get("mode") == "service" and not record.get("error")


def answered(record: dict) -> bool:
    return has_answer(record) and not record.get("refused")


# ---------------------------------------------------------------- per-case scores

def _recall_at(k: int) -> Callable[[Case, dict], Score | None]:
    def score(case: Case, record: dict) -> Score | None:
        if not case.answerable:
            return None
        found = 0 if record.get("error") else groups_found(case, ranked_sources(record)[:k])
        return float(found), float(len(case.sources))
    return score


def _mrr(case: Case, record: dict) -> Score | None:
    if not case.answerable:
        return None
    rank = None if record.get("error") else first_relevant_rank(case, ranked_sources(record))
    return (1.0 / rank if rank else 0.0), 1.0


def _anchor_recall_5(case: Case, record: dict) -> Score | None:
    if not case.answerable or not case.anchors:
        return None
    top = {f"{s['source']}#{s.get('anchor', '')}" for s in (record.get("sources") or [])[:5]}
    return float(sum(1 for a in case.anchors if a in top)), float(len(case.anchors))


def _context_recall(case: Case, record: dict) -> Score | None:
    """Required source groups among the passages the model was given (none after a gate refusal)."""
    if not case.answerable or record.get("mode") != "service":
        return None
    if record.get("error") or record.get("refusal_stage") == "gate":
        return 0.0, float(len(case.sources))
    return float(groups_found(case, ranked_sources(record))), float(len(case.sources))


def _key_fact_recall(case: Case, record: dict) -> Score | None:
    if not case.answerable or record.get("mode") != "service":
        return None
    if not answered(record):
        return 0.0, float(len(case.key_facts))
    answer = record.get("answer") or ""
    return float(sum(1 for f in case.key_facts if fact_present(answer, f))), float(len(case.key_facts))


def _refusal_rate(kinds: frozenset[str], stage: str | None = None) -> Callable[[Case, dict], Score | None]:
    def score(case: Case, record: dict) -> Score | None:
        if case.kind not in kinds or record.get("mode") != "service":
            return None
        refused = has_answer(record) and bool(record.get("refused"))
        if stage is not None:
            refused = refused and record.get("refusal_stage") == stage
        return float(refused), 1.0
    return score


def _invalid_citation_rate(case: Case, record: dict) -> Score | None:
    if not answered(record):
        return None
    valid = set(record.get("citations") or [])
    invalid = set(record.get("invalid_citations") or [])
    return float(len(invalid)), float(len(valid | invalid))


def _cited_answer_rate(case: Case, record: dict) -> Score | None:
    if not case.answerable or not answered(record):
        return None
    return float(bool(record.get("citations"))), 1.0


def _mean_support(case: Case, record: dict) -> Score | None:
    if not answered(record) or record.get("support") is None:
        return None
    return float(record["support"]), 1.0


def _faithfulness(case: Case, record: dict) -> Score | None:
    judge = record.get("judge")
    if not answered(record) or not judge or not judge.get("asked"):
        return None
    return float(judge["supported"]), float(judge["asked"])


def _error_rate(case: Case, record: dict) -> Score | None:
    if record.get("mode") != "service":
        return None
    return float(bool(record.get("error"))), 1.0


ALL = frozenset({"factual", "two_source", "unanswerable", "off_topic"})
ANSWERABLE = frozenset({"factual", "two_source"})
REFUSABLE = frozenset({"unanswerable", "off_topic"})

METRICS: tuple[Metric, ...] = (
    Metric("recall@1", True, "required source groups in the top 1 / groups (answerable)", _recall_at(1)),
    Metric("recall@3", True, "required source groups in the top 3 / groups (answerable)", _recall_at(3)),
    Metric("recall@5", True, "required source groups in the top 5 / groups (answerable)", _recall_at(5)),
    Metric("mrr", True, "mean reciprocal rank of the first relevant passage (answerable)", _mrr),
    Metric("anchor_recall@5", True, "labelled section anchors in the top 5 / anchors (informational)", _anchor_recall_5),
    Metric("context_recall", True, "required source groups among the passages the model got / groups", _context_recall),
    Metric("key_fact_recall", True, "key facts present in the answer / key facts (answerable)", _key_fact_recall),
    Metric("wrong_refusals", False, "answerable cases refused / answerable cases", _refusal_rate(ANSWERABLE)),
    Metric("wrong_gate_refusals", False, "answerable cases refused by the Gate / answerable", _refusal_rate(ANSWERABLE, "gate")),
    Metric("correct_refusals", True, "unanswerable + off-topic cases refused / those cases", _refusal_rate(REFUSABLE)),
    Metric("correct_refusals_unanswerable", True, "in-domain unanswerable cases refused", _refusal_rate(frozenset({"unanswerable"}))),
    Metric("correct_refusals_off_topic", True, "off-topic cases refused", _refusal_rate(frozenset({"off_topic"}))),
    Metric("gate_refusals", False, "refused by the Gate (no model call) / all cases", _refusal_rate(ALL, "gate")),
    Metric("model_refusals", False, "refused by the model's fixed sentence / all cases", _refusal_rate(ALL, "model")),
    Metric("off_topic_gate_refusals", True, "off-topic cases refused by the Gate / off-topic", _refusal_rate(frozenset({"off_topic"}), "gate")),
    Metric("invalid_citation_rate", False, "citation numbers naming no source / distinct citation numbers (answers)", _invalid_citation_rate),
    Metric("cited_answers", True, "answers with at least one valid citation / answers (answerable)", _cited_answer_rate),
    Metric("mean_support", True, "CitationChecker support, mean over answers", _mean_support),
    Metric("faithfulness", True, "judge yes / (sentence, cited passage) questions", _faithfulness),
    Metric("error_rate", False, "cases that ended in an HTTP or stream error / cases", _error_rate),
)
METRICS_BY_NAME = {m.name: m for m in METRICS}


# ---------------------------------------------------------------- aggregation

@dataclass(frozen=True)
class Aggregate:
    name: str
    value: float | None
    numerator: float
    denominator: float
    ci_low: float | None
    ci_high: float | None
    cases: int

    def to_dict(self) -> dict:
        return {
            "value": self.value, "numerator": self.numerator, "denominator": self.denominator,
            "ci95": [self.ci_low, self.ci_high], "cases": self.cases,
        }


def score_table(metric: Metric, cases: Sequence[Case], records: dict[str, dict]) -> np.ndarray:
    """Array of shape (n_applicable, 2): (num, den) per applicable case, in case order."""
    rows = [metric.score(c, records[c.id]) for c in cases if c.id in records]
    rows = [r for r in rows if r is not None]
    return np.array(rows, dtype=float).reshape(-1, 2)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def bootstrap_indices(n: int, samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(samples, n))


def aggregate_table(name: str, table: np.ndarray, *, samples: int = BOOTSTRAP_SAMPLES) -> Aggregate:
    n = len(table)
    num, den = float(table[:, 0].sum()) if n else 0.0, float(table[:, 1].sum()) if n else 0.0
    if n == 0 or den == 0:
        return Aggregate(name, None, num, den, None, None, n)
    idx = bootstrap_indices(n, samples)
    ratios = _ratio(table[idx, 0].sum(axis=1), table[idx, 1].sum(axis=1))
    lo, hi = np.nanpercentile(ratios, [2.5, 97.5])
    return Aggregate(name, num / den, num, den, float(lo), float(hi), n)


def aggregate(cases: Sequence[Case], records: dict[str, dict], metrics: Iterable[Metric] = METRICS) -> dict[str, Aggregate]:
    """Every metric that applies to at least one case."""
    out: dict[str, Aggregate] = {}
    for metric in metrics:
        table = score_table(metric, cases, records)
        if len(table):
            out[metric.name] = aggregate_table(metric.name, table)
    return out


@dataclass(frozen=True)
class Difference:
    name: str
    base: float | None
    new: float | None
    delta: float | None            # new - base
    ci_low: float | None
    ci_high: float | None
    cases: int


def paired_difference(metric: Metric, cases: Sequence[Case], base: dict[str, dict], new: dict[str, dict],
                      *, samples: int = BOOTSTRAP_SAMPLES) -> Difference | None:
    """Bootstrap interval of metric(new) - metric(base) over the cases both runs scored."""
    rows = []
    for case in cases:
        if case.id in base and case.id in new:
            a, b = metric.score(case, base[case.id]), metric.score(case, new[case.id])
            if a is not None and b is not None:
                rows.append((*a, *b))
    if not rows:
        return None
    t = np.array(rows, dtype=float)
    if t[:, 1].sum() == 0 or t[:, 3].sum() == 0:
        return None
    base_value, new_value = t[:, 0].sum() / t[:, 1].sum(), t[:, 2].sum() / t[:, 3].sum()
    idx = bootstrap_indices(len(t), samples)
    diffs = _ratio(t[idx, 2].sum(1), t[idx, 3].sum(1)) - _ratio(t[idx, 0].sum(1), t[idx, 1].sum(1))
    lo, hi = np.nanpercentile(diffs, [2.5, 97.5])
    return Difference(metric.name, base_value, new_value, new_value - base_value, float(lo), float(hi), len(t))
