"""Navigation found by its shape, whatever a generator calls it: blocks that are mostly link text (menus,
breadcrumbs, "on this page" and "see also" lists, language bars) and pagination ("« Previous Next »").
html_reader removes what these find before reading a page."""
from __future__ import annotations

import re
from typing import Any

from .page_kinds import visible as _visible

_LINK_BLOCKS = "div, ul, ol, dl, table, p"
LINK_DENSITY = 0.75     # share of a block's visible characters inside links at which it is navigation
MIN_LINKS = 3
_PAGINATION = re.compile(r"^[\s«»‹›←→|·]*(?:(?:previous|prev|next|up|home|top|contents)[\s«»‹›←→|·]*)+$",
                         re.IGNORECASE)
_PAGINATION_BLOCKS = {"div", "p", "span", "ul", "ol", "li"}
_PAGE_LEVEL = {"body", "main"}
"""Where a pagination link stands alone, in no block: LinuxDoc-Tools puts "Next Previous Contents" straight into
<body>, above and below every page (BIRD's guides, old HOWTOs), and the page's first chunk opened with them."""


def link_dense(tree: Any) -> list[Any]:
    """The outermost blocks of `tree` that are navigation by link density (no heading or code inside)."""
    found: list[Any] = []
    ids: set[int] = set()
    for node in tree.css(_LINK_BLOCKS):
        if inside(node, ids) or node.css_first("h1, h2, h3, h4, h5, h6, pre") is not None:
            continue
        links = node.css("a")
        if len(links) < MIN_LINKS:
            continue
        total, linked = _visible_and_linked(node, links)
        if total and linked >= LINK_DENSITY * total and not (PROSE_KEPT and _holds_prose(node)):
            found.append(node)
            ids.add(node.mem_id)
    return found


# A block holding a paragraph of prose is not navigation as a whole, however many links sit beside it:
# PostgreSQL's part pages wrap their introduction and their table of contents in one div.partintro,
# 80 % link text, and the introduction went with it. Its link-dense parts are still found on their own.
PROSE_KEPT = True
PROSE_MIN_CHARS = 80


def _holds_prose(node: Any) -> bool:
    for paragraph in node.css("p"):
        total, linked = _visible_and_linked(paragraph, paragraph.css("a"))
        if total >= PROSE_MIN_CHARS and linked < LINK_DENSITY * total:
            return True
    return False


def _visible_and_linked(node: Any, links: list[Any]) -> tuple[int, int]:
    """The visible characters of `node`, and how many of them are inside `links` (its <a> elements)."""
    return _visible(node.text(deep=True)), sum(_visible(a.text(deep=True)) for a in links)


def pagination(tree: Any) -> list[Any]:
    """The outermost blocks whose whole text is pagination words around a link of them: found from the
    links up, so a page is read once per such link, not once per block."""
    found: list[Any] = []
    ids: set[int] = set()
    paginates: dict[int, bool] = {}     # each block's text read once, however many links it holds

    def only_pagination(node: Any) -> bool:
        if node.mem_id not in paginates:
            paginates[node.mem_id] = bool(_PAGINATION.match(node.text(deep=True) or ""))
        return paginates[node.mem_id]

    for link in tree.css("a"):
        if not _PAGINATION.match(link.text(deep=True) or ""):
            continue
        top, node = None, link.parent
        while node is not None and node.tag in _PAGINATION_BLOCKS and only_pagination(node):
            top, node = node, node.parent
        if top is None and node is not None and node.tag in _PAGE_LEVEL:      # node: still the link's parent
            top = link                                          # the link itself: nothing around it to take
        if top is not None and top.mem_id not in ids:
            found.append(top)
            ids.add(top.mem_id)
    return [node for node in found if not inside(node, ids)]      # the outermost ones


def inside(node: Any, ids: set[int]) -> bool:
    """Whether an ancestor of `node` is one of the nodes whose `mem_id`s are `ids`."""
    parent = node.parent
    while parent is not None:
        if parent.mem_id in ids:
            return True
        parent = parent.parent
    return False
