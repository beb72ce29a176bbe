"""Levers tried on the extractive engine's choice, dev data only (two shipped in stop 28: see the results).

    python -m evals.extractive_levers     # → evals/results/extractive-levers.json

Each lever changes one thing of the shipped engine (deployments/engines/extractive.py) and is
scored, as the shipped engine is, on the cMCP `tune` half (key-fact recall,
evals/extractive_tune.py) and on the DEV halves of the two out-of-sample corpora (the question's
evidence string in the answer, evals/extractive_oos.py). A lever is kept only if it helps all
three and hurts none; the test halves are not opened here.

- `cover w`: selection adds w × the idf-weighted share of the question's words a sentence adds
  to those the chosen sentences already have (two-part questions: cover both parts);
- `suffix stems`: question and sentence words lose -ing/-ed/-es/-s/-ly before the 5-letter prefix;
- `number cue w` / `code cue w`: a question asking for a count or limit ("how many", "maximum",
  "default value") adds w to sentences with a digit; a how-to question ("how do I") adds w to
  sentences with a code span;
- `k n` / `clip c`: the engine is given n passages, or passages clipped at c characters (the
  served prompt: 4 and 900);
- `near-duplicate r` (stop 28; shipped since: 0.9): a further sentence is skipped when it shares ≥ r of its words
  with one already chosen (shipped 0.6): API references list sibling entries that share most
  words ("base64.b32encode(s): Encode…", "base64.urlsafe_b64encode(s): Encode…");
- `signature terms` (stop 28; shipped since): a one-line call or operator signature with a return arrow
  (`replace ( string text, from text, to text ) → text`, PostgreSQL's function tables) is a
  term its next paragraph defines, like `os.makedirs(…)`; the shipped rule skips every line
  with "→" (examples, `repeat('Pg', 4) → PgPgPgPg`, have one too).
- `clipped sentences quoted` / `bare lead-ins quoted` (stop 31; shipped: neither is quoted): a
  sentence cut off by the prompt's 900-character clip ("… a maximum of 60 requests per …"), and a
  sentence that introduces a list or code ("… provides the following credentials:") with neither
  after it in the passage; `pointers quoted` (shipped: not quoted): "See X for additional tips";
  `lead-ins without their code skipped, all` / `… quoted`: a lead-in whose code is too long
  to carry; shipped: skipped only when it points at it ("the following", "below", "as follows":
  "In that file add the following CSS:"), neutral on the dev data; skipping all of them cost the
  Python dev half an evidence string (26 -> 25).

    python -m evals.extractive_levers shipped "before stop 31"    # some rows only: printed, not written
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np

from deployments.citations import content_words
from deployments.engines import extractive as X
from deployments.passage import Passage
from docindex import quotable, quotable_clean, quotable_terms
from evals import extractive_oos, extractive_tune
from evals.cases import load_cases
from evals.extractive_tune import Memo, half, ready

RESULTS = extractive_oos.RESULTS
_NUMBER_Q = re.compile(r"\b(how (many|much|long|large|often)|limit|maximum|minimum|default value|which version)\b", re.I)
_HOW_TO_Q = re.compile(r"^\s*(how (do|can|should) (i|you|we)|how to|what command|which command)\b", re.I)
_SUFFIX = re.compile(r"(?:ing|ed|es|s|ly)$")
# A sentence that opens by pointing back at the one before it ("This kind of string can be mutated",
# "These options …"): alone in an answer it names nothing.
_ANAPHORA = re.compile(r"^(?:this|these|that|those|they|such|here|the (?:latter|former|above))\b(?!\s*:)", re.I)
LONG = 40
"""`length w`: a sentence of LONG words or more gains w, a shorter one its share of it."""


class LeverEngine(X.ExtractiveEngine):
    """The shipped engine with one lever set (all default to off)."""

    def __init__(self, *, cover: float = 0.0, number_cue: float = 0.0, code_cue: float = 0.0,
                 adjacent: float = 0.0, same_passage: float = 0.0, length: float = 0.0, anaphora: float = 0.0,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.cover, self.number_cue, self.code_cue = cover, number_cue, code_cue
        self.adjacent, self.same_passage, self.length, self.anaphora = adjacent, same_passage, length, anaphora

    def _scored(self, question, found, k, headings, stored):  # type: ignore[no-untyped-def]
        scores, lexical, rank = super()._scored(question, found, k, headings, stored)
        if self.number_cue and _NUMBER_Q.search(question):
            scores = scores + self.number_cue * np.array([any(ch.isdigit() for ch in c.text) for c in found])
        if self.code_cue and _HOW_TO_Q.search(question):
            scores = scores + self.code_cue * np.array(["`" in c.text for c in found])
        if self.anaphora:
            scores = scores - self.anaphora * np.array([bool(_ANAPHORA.match(c.text)) for c in found])
        if self.length:
            scores = scores + self.length * np.array([min(len(c.text.split()), LONG) / LONG for c in found])
        return scores, lexical, rank

    def select(self, question, found, scores, order, max_tokens):  # type: ignore[no-untyped-def]
        """The shipped selection, plus `cover` × the share of the question's words a sentence adds,
        `adjacent` for the sentence right after a chosen one in its passage, `same_passage` for
        a sentence of the best sentence's passage."""
        if not (self.cover or self.adjacent or self.same_passage):
            return super().select(question, found, scores, order, max_tokens)
        following = {}                # candidate index → the index of the candidate after it in its passage
        by_place = sorted(range(len(found)), key=lambda i: (found[i].n, found[i].start))
        for a, b in zip(by_place, by_place[1:]):
            if found[a].n == found[b].n:
                following[a] = b
        top, best = int(order[0]), float(scores[order[0]])
        words = content_words(question)
        asked = X._stems(words)
        weights = X.rarity(words, [c.text for c in found])
        total = sum(weights.get(t, 1.0) for t in asked) or 1.0
        has = [X._stems(content_words(c.text)) & asked for c in found]
        covered, chosen, budget = set(has[top]), [top], max_tokens - X._cost(found[top])
        eligible = [int(i) for i in order[1:] if float(scores[i]) >= self.keep_ratio * best]
        while len(chosen) < self.max_sentences:
            pick, value = None, -math.inf
            for i in eligible:
                if i in chosen or X._cost(found[i]) > budget:
                    continue
                near = max(X.redundancy(found[i].text, found[j].text) for j in chosen)
                if near >= X.NEAR_DUPLICATE:
                    continue
                added = sum(weights.get(t, 1.0) for t in has[i] - covered) / total
                marginal = (float(scores[i]) - self.diversity * near + self.cover * added
                            + self.adjacent * any(following.get(j) == i for j in chosen)
                            + self.same_passage * (found[i].n == found[top].n))
                if marginal > value:
                    pick, value = i, marginal
            if pick is None:
                break
            chosen.append(pick)
            covered |= has[pick]
            budget -= X._cost(found[pick])
        out = [found[i] for i in chosen]
        return out[:1] + sorted(out[1:], key=lambda c: (c.n, c.start))


def _oos_row(scored: dict) -> dict:
    """An out-of-sample half's columns: evidence strings in the answers, and the share of the
    gold answers' words they hold where the corpus has gold answers."""
    return {"evidence": scored["evidence_in_answer"], "words": scored["mean_words"],
            **({"gold": scored["gold_in_answer"]} if "gold_in_answer" in scored else {})}


def _suffix_stems(words: set[str]) -> set[str]:
    out = set()
    for w in words:
        cut = _SUFFIX.sub("", w)
        out.add((cut if len(w) > 4 and len(cut) >= 3 else w)[:5])
    return out


@contextmanager
def _setting(owner: Any, name: str, value: Any) -> Iterator[None]:
    """`owner.name` set to `value` inside the block (None: left as shipped)."""
    shipped = getattr(owner, name)
    setattr(owner, name, shipped if value is None else value)
    try:
        yield
    finally:
        setattr(owner, name, shipped)


def _cmcp_contexts(k: int, clip: int, ranking: Any = None) -> tuple[list, dict[str, list[Passage]]]:
    """The cMCP tune half's cases and their passages as served, with the stored quote vectors."""
    from docindex.index import Index

    index = Index("var/eval.db")
    cases = [c for c in load_cases() if half(c) == "tune"]
    return cases, {c.id: extractive_tune.passages_for(index, c, "cmcp", True, k=k, clip=clip, ranking=ranking)
                   for c in cases}


LEVERS: list[tuple[str, dict[str, Any]]] = [
    ("shipped", {}),
    *[(f"cover {w:g}", {"cover": w}) for w in (0.1, 0.2, 0.3)],
    ("suffix stems", {"stems": True}),
    ("suffix stems + cover 0.3", {"stems": True, "cover": 0.3}),
    *[(f"number cue {w:g}", {"number_cue": w}) for w in (0.05, 0.1)],
    *[(f"code cue {w:g}", {"code_cue": w}) for w in (0.05, 0.1)],
    *[(f"k {k}", {"k": k}) for k in (5, 6)],
    ("clip 1400", {"clip": 1400}),
    # stop 28: shipped = signature terms + near-duplicate 0.9 + commented code (and identifiers quoted as
    # written, a fix with no switch); the rows before them, then each alone
    ("before stop 28", {"signatures": False, "near_duplicate": 0.6, "commented_code": False}),
    ("no signature terms", {"signatures": False}),
    ("signature terms + near-duplicate 0.6", {"near_duplicate": 0.6}),
    *[(f"signature terms + near-duplicate {r:g}", {"near_duplicate": r}) for r in (0.5, 0.7, 0.8, 0.95, 1.01)],
    *[(f"no signature terms + near-duplicate {r:g}", {"signatures": False, "near_duplicate": r})
      for r in (0.5, 0.7, 0.8, 0.9, 1.01)],
    *[(f"shipped + diversity {d:g}", {"diversity": d}) for d in (0.2, 0.4, 0.5)],
    ("no commented code", {"commented_code": False}),
    # stop 29: what keeps more of a gold answer (benchmarks/oos/<corpus>/answers.jsonl)
    *[(f"keep ratio {r:g}", {"keep_ratio": r}) for r in (0.3, 0.4, 0.6)],
    *[(f"adjacent {w:g}", {"adjacent": w}) for w in (0.05, 0.1, 0.2)],
    *[(f"same passage {w:g}", {"same_passage": w}) for w in (0.05, 0.1, 0.2)],
    ("4 sentences (over the 3-sentence target: a bound)", {"max_sentences": 4}),
    *[(f"length {w:g}", {"length": w}) for w in (0.05, 0.1, 0.15, 0.2)],
    *[(f"rank bonus {w:g}", {"rank_bonus": w}) for w in (0.0, 0.05, 0.1)],
    *[(f"length {w:g} + rank bonus {r:g}", {"length": w, "rank_bonus": r}) for w in (0.1, 0.15) for r in (0.05, 0.1)],
    # the passages the answer is given: chunks by convex score fusion (cosine share a), not RRF
    *[(f"passages by convex {a:g}", {"convex": a}) for a in (0.7, 0.8)],
    # stop 31 (shipped: neither is quoted): a sentence cut by the prompt's clip, a lead-in with nothing after it
    ("before stop 31", {"clipped": False, "lead_ins": False, "code_lead_ins": False, "pointers": False}),
    ("clipped sentences quoted", {"clipped": False}),
    ("bare lead-ins quoted", {"lead_ins": False}),
    ("lead-ins without their code skipped, all (not shipped)", {"code_lead_ins": True}),
    ("lead-ins without their code quoted (before the deictic rule)", {"code_lead_ins": False}),
    ("pointers quoted", {"pointers": False}),
    # stop 33: a sentence that opens by pointing back ("This kind of string can be mutated") scores w less
    *[(f"anaphora {w:g}", {"anaphora": w}) for w in (0.03, 0.06, 0.1)],
    # stop 39 (shipped): a paragraph stopping on "with"/"to"/"run"… right over code is a lead-in
    ("dangling lead-ins quoted alone (before stop 39)", {"dangling": False}),
    ("SQL statements as terms (before stop 39)", {"statements": False}),
    # stop 40 (shipped: only a footnote-like "[7]" is dropped from a quote)
    ("every bracketed number dropped (before stop 40)", {"markers": "removed"}),
    ("bracketed numbers all kept", {"markers": "kept"}),
    ("see-also text quoted (before stop 48)", {"see_also": False}),
    # stop 49 (shipped: kept): a signature's parameter stars, "Cleaner(**kw)", were stripped as emphasis
    ("parameter stars dropped (before stop 49)", {"parameter_stars": False}),
    # stop 50 (shipped: only brackets that read as a citation, "[4]", become parentheses): "obj[key]" was "obj(key)"
    ("every bracket as parentheses (before stop 50)", {"brackets": "all"}),
    # stop 51 (shipped: a list item's later sentences lead with the option its head names, "css_class: Defaults to …")
    ("item labels off (before stop 51)", {"item_labels": False}),
    ("see-also lines as terms (before stop 52)", {"see_also_content": False}),
    # stop 52 (shipped: 0.05): a sentence that mostly repeats the question's words ("You might want to use astropy on
    # a telescope control machine behind a strict firewall") ranks w x the share of its words the question has lower
    *[(f"echo {w:g}", {"echo": w}) for w in (0.0, 0.02, 0.03, 0.07, 0.1, 0.2)],
    # stop 53 (shipped: not quoted): "… run the following command." whose code the prompt's clip cut off
    ("lead-ins whose target the clip cut quoted (before stop 53)", {"cut_targets": False}),
    # stop 53: a sentence that only says what the example below it shows ("Example of a session to …")
    ("example captions quoted (before stop 53)", {"captions": False}),
    ("example captions skipped over code only", {"captions": "code"}),
    ("example captions skipped everywhere", {"captions": True}),
    # stop 53 (shipped): "… meets the following criteria" with no stop, over a list, carries it
    ("lead-ins on 'the following …' without a stop quoted alone (before stop 53)", {"following": False}),
    # stop 54 (not shipped): a field line naming no value ("Availability: all but Mac OS") alone above a text is
    # metadata, no term of it; it also took Jinja's "Import name: …" off its text (35 manuals 0.4033 -> 0.4028)
    ("metadata fields alone no terms (not shipped)", {"metadata_fields": True}),
    # stop 57 (not shipped): a short term's later sentences lead with it ("mode: Defaults to a very secure 0600")
    *[(f"term on later sentences up to {n} characters (not shipped)", {"term_later": True, "term_later_chars": n})
      for n in (25, 40, 60)],
    # stop 58 (shipped): a lower-case phrase of plain words ("splits a multiplexed Ogg stream into separate files") is
    # the entry above's text, no further spelling of the term below it
    ("definition-list texts as term lines (before stop 58)", {"descriptions": False}),
]


# Module switches a lever row may set: (module, attribute, the row's key); a key left out keeps the shipped value.
SWITCHES: tuple[tuple[Any, str, str], ...] = (
    (X, "NEAR_DUPLICATE", "near_duplicate"),
    (quotable, "SIGNATURE_TERMS", "signatures"),
    (quotable, "COMMENTED_CODE", "commented_code"),
    (quotable, "CLIPPED_SKIPPED", "clipped"),
    (quotable, "BARE_LEAD_INS_SKIPPED", "lead_ins"),
    (quotable, "LEAD_INS_WITHOUT_CODE_SKIPPED", "code_lead_ins"),
    (quotable, "POINTERS_SKIPPED", "pointers"),
    (quotable, "DANGLING_LEAD_INS", "dangling"),
    (quotable, "STATEMENTS_NOT_TERMS", "statements"),
    (quotable, "SEE_ALSO_SKIPPED", "see_also"),
    (quotable, "CUT_TARGETS_BARE", "cut_targets"),
    (quotable_clean, "MARKERS", "markers"),
    (quotable_clean, "PARAMETER_STARS", "parameter_stars"),
    (quotable_clean, "BRACKETS", "brackets"),
    (quotable_terms, "ITEM_LABELS", "item_labels"),
    (quotable_terms, "TERM_LATER_SENTENCES", "term_later"),
    (quotable_terms, "TERM_LATER_MAX_CHARS", "term_later_chars"),
    (quotable_terms, "EXAMPLE_CAPTIONS", "captions"),
    (quotable_terms, "FOLLOWING_WITHOUT_STOP", "following"),
    (quotable_terms, "METADATA_FIELDS_NOT_TERMS", "metadata_fields"),
    (quotable_terms, "SEE_ALSO_CONTENT_NOT_TERMS", "see_also_content"),
    (quotable_terms, "DESCRIPTIONS_END_TERMS", "descriptions"),
)


def main() -> int:
    from docindex.minilm import default_embedder

    embedder = Memo(default_embedder())
    embedder.dim = embedder.embedder.dim      # type: ignore[attr-defined]  # the quote vectors' width
    load = os.getloadavg()[0]
    contexts: dict[tuple[int, int, float | None], dict[str, Any]] = {}
    rows = []
    only = set(sys.argv[1:])          # lever names to run, printed only (default: all, into extractive-levers.json)
    for name, lever in LEVERS:
        if only and name not in only:
            continue
        k, clip, convex = lever.get("k", 4), lever.get("clip", 900), lever.get("convex")
        if (k, clip, convex) not in contexts:
            from docindex.ranking import Ranking

            ranking = None if convex is None else Ranking(fusion="convex", convex_dense=convex)
            contexts[(k, clip, convex)] = {
                "cmcp": _cmcp_contexts(k, clip, ranking),
                **{c: extractive_oos.oos_contexts(c, "dev", k, clip, ranking) for c in ("postgresql", "python")}}
        data = contexts[(k, clip, convex)]
        knobs = {key: v for key, v in lever.items()
                 if key in ("cover", "number_cue", "code_cue", "diversity", "adjacent", "same_passage",
                            "keep_ratio", "max_sentences", "length", "rank_bonus", "anaphora", "echo")}
        engine = ready(LeverEngine(**knobs), embedder)
        with ExitStack() as stack:
            stack.enter_context(_setting(X, "_stems", _suffix_stems if lever.get("stems") else None))
            for owner, attr, key in SWITCHES:
                stack.enter_context(_setting(owner, attr, lever.get(key)))
            row = {"lever": name,
                   "cmcp_tune_key_facts": extractive_tune.score(engine, *data["cmcp"])["key_fact_recall"],
                   **{f"{c}_dev_{key}": value for c in ("postgresql", "python")
                      for key, value in _oos_row(extractive_oos.score(engine, *data[c])).items()},
                   **{f"{c}_dev_gold_in_passages": extractive_oos.gold_bounds(*data[c]).get("gold_in_passages")
                      for c in ("postgresql", "python")}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if only:                          # a subset prints its rows and writes nothing
        return 0
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
              "machine": f"{os.cpu_count()} cores, load {load:.1f} at start",
              "questions": {"cmcp_tune": len(contexts[(4, 900, None)]["cmcp"][0]),
                            **{f"{c}_dev": len(contexts[(4, 900, None)][c][0]) for c in ("postgresql", "python")}},
              "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "extractive-levers.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
