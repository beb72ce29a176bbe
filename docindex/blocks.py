"""What every reader produces: a title and a flat list of blocks.

Kept apart from the readers (extract.py, pdf.py) so that each reader depends
on these types, not on the other readers (no extract <-> pdf import cycle).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

BlockKind = Literal["heading", "para", "code"]


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    text: str
    level: int = 0          # 1-6 for headings


@dataclass
class Extracted:
    title: str | None                       # None: the caller falls back to the file name
    blocks: list[Block]
    metadata: dict[str, Any] = field(default_factory=dict)
