"""How high a question about nothing in a collection reaches there: its noise floor.

The Gate's fixed thresholds (deployments/gate_rule.py) were chosen where everyday questions reach
cosines of 0.42-0.48 (the PostgreSQL and Python manuals: "How far is the Moon from the Earth?"
finds the earthdistance module). On SDL2's API reference everyday questions stay under 0.32, and
real questions told as a user's situation ("My sprite sheet bitmap uses bright magenta as its
background. How do I make those pixels transparent when I blit it?") reach 0.40-0.55 with little
lexical coverage, so 5 of 16 were refused (stop 41). The floor is the third best of the cosines that
PROBES, everyday questions written for this and in no eval set, reach among a collection's first
PROBE_K passages; the Gate may pass a question whose best cosine clears it by a margin.

A second floor does the same for the passages' quotable sentences (stored quote vectors, quotable.py):
a question told in a user's words can meet one sentence closely in a passage whose whole text it meets
loosely ("Is there a function that turns one-hot encoded 0/1 indicator columns back into a single
categorical column?": pandas' from_dummies page, chunk 0.48, its sentence 0.52), while everyday questions
stay as low on sentences as on passages (stop 43, benchmarks/results/gate_noise_floor.md).

Searched once per index version and collection (~40 searches: 0.2-0.5 s on 20k chunks), kept per
open Index; only asked for where a Gate needs it (the MCP tools crag_search and search), never by `docindex search`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from .index import Index
from .ranking import Ranking
from .types import Hit

PROBE_K = 4     # the passages the Gate sees (the prompt's k)
PROBES = (
    "How do I make a sourdough starter from scratch?",
    "What is the tallest mountain in Africa?",
    "How often should I water a cactus?",
    "Who painted the ceiling of the Sistine Chapel?",
    "What are the rules of cricket?",
    "How do I get a red wine stain out of a carpet?",
    "What is the best way to learn to play the piano as an adult?",
    "How many bones are in the human body?",
    "What should I pack for a week-long hiking trip?",
    "How do I change a flat tire on my car?",
    "What causes the northern lights?",
    "Which country won the most Olympic gold medals in 2016?",
    "How do I train my puppy to stop biting?",
    "What is a good stretching routine for lower back pain?",
    "How long does it take to fly from London to Tokyo?",
    "What is the plot of Pride and Prejudice?",
    "How do I knit a scarf for beginners?",
    "What vitamins are in spinach?",
    "How do I save money on groceries each month?",
    "When did the Roman Empire fall?",
    "What is the difference between a crocodile and an alligator?",
    "How do I plant tomatoes in a small garden?",
    "What is the capital city of Canada?",
    "How can I improve my sleep at night?",
    "Who wrote the Odyssey?",
    "How do I make cold brew coffee at home?",
    "What is the speed of sound in air?",
    "How do I negotiate a higher salary at a new job?",
    "What are the symptoms of the flu?",
    "How do I fold a fitted sheet?",
    "Which is the largest ocean on Earth?",
    "What are good exercises to strengthen my knees?",
    "How do volcanoes form?",
    "What is the best season to see cherry blossoms?",
    "How do I write a wedding speech?",
    "What does a financial advisor charge?",
    "How do bees make honey?",
    "How do I clean a cast iron pan?",
    "What is the population of Brazil?",
    "How do I start running if I have never run before?",
)


FLOOR_RANK = 3
"""The floor is the probes' FLOOR_RANK-th highest best cosine, not their highest: one probe that happens to
meet a page (Exim's spec: one at 0.324, the next at 0.220) set the whole collection's floor. Chosen on dev data
with the margin (stop 42, gate_noise_margin in serve_app/settings.py)."""


def noise_floor(best_cosine: Callable[[str], float | None]) -> float:
    """The FLOOR_RANK-th highest of `best_cosine(probe)` over PROBES (None: nothing found, skipped), the lowest
    found when fewer are; 0.0 when none."""
    found = sorted((cosine for cosine in map(best_cosine, PROBES) if cosine is not None), reverse=True)
    return found[min(FLOOR_RANK, len(found)) - 1] if found else 0.0


@dataclass(frozen=True)
class Floors:
    """A collection's noise floors: of the passages' cosine, and of their best quotable sentence's (None: the
    index stores no quote vectors for what the probes found)."""

    cosine: float
    sentence: float | None


_FLOORS: WeakKeyDictionary[Index, dict[tuple[int, str | None, Ranking | None], Floors]] = WeakKeyDictionary()


def probe_hits(index: Index, collection: str | None, ranking: Ranking | None = None) -> Callable[[str], list[Hit]]:
    """A probe's first PROBE_K passages of `collection` in `index`, with their best sentences' cosines."""
    return lambda probe: index.search(probe, PROBE_K, collection, ranking=ranking, sentences=True)


def best_cosines(hits: list[Hit]) -> tuple[float | None, float | None]:
    """The best passage cosine and the best sentence cosine among `hits` (None: none)."""
    sentences = [hit.sentence_cosine for hit in hits if hit.sentence_cosine is not None]
    return max((hit.cosine for hit in hits), default=None), max(sentences, default=None)


def floors_of(found: dict[str, tuple[float | None, float | None]]) -> Floors:
    """The floors from each probe's `best_cosines` (a probe missing: nothing found)."""
    cosine = noise_floor(lambda probe: found.get(probe, (None, None))[0])
    sentence = noise_floor(lambda probe: found.get(probe, (None, None))[1])
    return Floors(cosine, sentence if any(pair[1] is not None for pair in found.values()) else None)


def collection_floors(index: Index, collection: str | None, ranking: Ranking | None = None) -> Floors:
    """`collection`'s noise floors in `index` (None: the whole index) under `ranking` (None: the
    index's own, as the MCP tools search), searched once per index version."""
    key = (index.version, collection, ranking)
    floors = _FLOORS.setdefault(index, {})
    if key not in floors:
        if any(version != key[0] for version, *_ in floors):
            floors.clear()                      # an ingest moved the index: older floors are stale
        search = probe_hits(index, collection, ranking)
        floors[key] = floors_of({probe: best_cosines(search(probe)) for probe in PROBES})
    return floors[key]
