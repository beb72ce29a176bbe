"""Keep the prompt's scaffolding out of what a client sees.

A small model echoes its prompt: fence markers (`<<<SRC-<nonce> [1] …`,
`SRC-<nonce>>>>`), the bare nonce, the closing instruction ("Answer with
citations like [1]."). None of it may reach a client, and a citation inside
echoed scaffolding must not count. `ScaffoldFilter` removes it from a token
stream as the tokens arrive: text that could still become scaffolding (a
tail like `SR`, `<<<SRC-0f6f`, `Answer with cit`) is held back until the
next token decides, and everything else passes at once, so streaming and
time to first token are unchanged for an ordinary answer.
"""
from __future__ import annotations

import re

from deployments.prompt import INSTRUCTION

_HEX = r"[0-9a-f]"


class ScaffoldFilter:
    """feed(text) → the text safe to send now; flush() → the rest at the end."""

    def __init__(self, nonce: str = "") -> None:
        self.nonce = nonce
        self._pending = ""
        self._literals = [lit for lit in (INSTRUCTION, INSTRUCTION[:-1], nonce, "<<<", ">>>") if lit]
        parts = [
            r"<{3,}\s*(?:SRC|Q)-" + _HEX + r"*[^\n]*\n?",          # a fence's opening line, label included
            r"\[?(?:SRC|Q)-" + _HEX + r"{4,}\]?>*",                # a closing fence or a bare reference
            r"<{3,}|>{3,}",
            re.escape(INSTRUCTION) + "?",
        ]
        if nonce:
            parts.insert(0, re.escape(nonce))
        self._remove = re.compile("|".join(f"(?:{p})" for p in parts))

    def _could_continue(self, tail: str) -> bool:
        """Whether `tail` (a suffix of what we have) may still grow into scaffolding."""
        if any(lit.startswith(tail) for lit in self._literals):
            return True
        if re.fullmatch(r"\[?(?:S|SR|SRC|SRC-" + _HEX + r"*|Q|Q-" + _HEX + r"*)", tail):
            return True
        return tail.startswith("<<<") and "\n" not in tail      # an opening fence line still coming

    def _split(self, text: str) -> tuple[str, str]:
        longest = max(len(lit) for lit in self._literals) + 200   # a fence label (a path) included
        for start in range(max(0, len(text) - longest), len(text)):
            if self._could_continue(text[start:]):
                return text[:start], text[start:]
        return text, ""

    def clean(self, text: str) -> str:
        return self._remove.sub("", text)

    def feed(self, text: str) -> str:
        ready, self._pending = self._split(self._pending + text)
        return self.clean(ready)

    def flush(self) -> str:
        rest, self._pending = self._pending, ""
        return self.clean(rest)


def strip_scaffolding(text: str, nonce: str = "") -> str:
    """The whole-text form of `ScaffoldFilter` (for answers that are not streamed)."""
    f = ScaffoldFilter(nonce)
    return f.feed(text) + f.flush()
