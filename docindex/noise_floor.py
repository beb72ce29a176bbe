"""How high a question about nothing in a collection reaches there: its noise floor.

The Gate's fixed thresholds (deployments/gate_rule.py) were chosen where everyday questions reach
cosines of 0.42-0.48 (the PostgreSQL and Python manuals: "How far is the Moon from the Earth?"
finds the earthdistance module). On SDL2's API reference everyday questions stay under 0.32, and
real questions told as a user's situation ("My sprite sheet bitmap uses bright magenta as its
background. How do I make those pixels transparent when I blit it?") reach 0.40-0.55 with little
lexical coverage, so 5 of 16 were refused (stop 41). The floor is the third best of the cosines that
PROBES, everyday questions written for this and in no eval set, reach among a collection's first
PROBE_K passages; the Gate may pass a question whose best cosine clears it by a margin.

Searched once per index version and collection (~40 searches: 0.2-0.5 s on 20k chunks), kept per
open Index; only asked for where a Gate needs it (the MCP tools crag_search and search), never by `docindex search`.
"""
from __future__ import annotations

from collections.abc import Callable
from weakref import WeakKeyDictionary

from .index import Index
from .ranking import Ranking

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


_FLOORS: WeakKeyDictionary[Index, dict[tuple[int, str | None, Ranking | None], float]] = WeakKeyDictionary()


def probe_search(index: Index, collection: str | None,
                 ranking: Ranking | None = None) -> Callable[[str], float | None]:
    """A probe's best cosine among `collection`'s first PROBE_K passages in `index` (None: nothing found)."""
    def best_cosine(probe: str) -> float | None:
        hits = index.search(probe, PROBE_K, collection, ranking=ranking)
        return max((hit.cosine for hit in hits), default=None)

    return best_cosine


def collection_floor(index: Index, collection: str | None, ranking: Ranking | None = None) -> float:
    """`collection`'s noise floor in `index` (None: the whole index) under `ranking` (None: the
    index's own, as the MCP tools search), searched once per index version."""
    key = (index.version, collection, ranking)
    floors = _FLOORS.setdefault(index, {})
    if key not in floors:
        if any(version != key[0] for version, *_ in floors):
            floors.clear()                      # an ingest moved the index: older floors are stale
        floors[key] = noise_floor(probe_search(index, collection, ranking))
    return floors[key]
