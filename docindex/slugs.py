"""Heading anchors as GitHub makes them: what a chunk's citation links to (`file.md#anchor`)."""
from __future__ import annotations

import re
import unicodedata

_SLUG_DROP = re.compile(r"[^\w\- ]", re.UNICODE)


def slugify(heading: str) -> str:
    """GitHub's anchor for a heading: lower-case, punctuation dropped, spaces → '-'."""
    text = unicodedata.normalize("NFC", heading).strip().lower()
    return _SLUG_DROP.sub("", text).replace(" ", "-")


class Slugger:
    """Unique slugs within one document, numbered the way GitHub (github-slugger) does."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def slug(self, heading: str) -> str:
        base = slug = slugify(heading)
        while slug in self._seen:
            self._seen[base] += 1
            slug = f"{base}-{self._seen[base]}"
        self._seen[slug] = 0
        return slug
