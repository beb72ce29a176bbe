"""The page's own text, where the page marks it: what lies outside its `<main>` (or `role="main"`) as the site's.
Off (html_reader.MAIN_ONLY): measured at stop 56 and not shipped.

HTML says which part of a page is its main content, and most documentation generators say it (Sphinx's themes,
MkDocs, Docusaurus, Hugo's). What a site puts around it on every page, a banner, a version line, a credit, is
found elsewhere by name (html_reader's `_CHROME`, per generator) or by its links (html_navigation); what neither
catches is read as the page's text. Read over every page of 65 manuals (`benchmarks/main_region.py`), the rule
changes 8: scikit-learn's "Toggle Menu", "Other versions" and "Please cite us if you use the software."; Mako's
release line, copyright and image credit; Dask distributed's "Theme by the Executable Book Project"; libvirt's
"Website Wiki Developers list Users list"; SymPy's (Furo's) sidebar toggles; pandas' "On this page"; MkDocs' page
title in its own contents list; a stray "1" on two of Kea's pages. On the others that mark a main region, nothing
outside it is left to read. Ingested both ways, the 8 rank their gold pages as before (MRR@10 equal on 7,
scikit-learn 0.823 -> 0.825 with one question fewer in its top 5), and the answers hold less of the reference
answers' words on three (Mako, the one dev manual, 0.341 -> 0.326, by where the chunks now break; scikit-learn,
Dask distributed), more on pandas, the same on four; no answer quoted the removed text before.
A reading fix that helps no dev set does not ship.

Only where it is safe: the main regions must hold at least MAIN_SHARE of the text left after the other chrome
rules (a `<main>` a script fills, or one that wraps a fragment, is not the page), and a page whose `<h1>`s all lie
outside them keeps everything (a theme that titles the page in a header above `<main>`; an `<h1>` outside beside
one inside is the site's name: Mako's header, the PyData theme's logo).
"""
from __future__ import annotations

from typing import Any

from .html_navigation import inside
from .page_kinds import visible

MAIN = "main, [role=main]"
MAIN_SHARE = 0.5


def outside_main(tree: Any) -> list[Any]:
    """The nodes of `tree`'s body outside its main regions, to remove; [] where the page marks none, or where
    removing them is not safe (module docstring)."""
    body = tree.body
    if body is None:
        return []
    mains = _outermost(tree.css(MAIN))
    if not mains or any(main.mem_id == body.mem_id for main in mains):
        return []
    if sum(_shown(main) for main in mains) < MAIN_SHARE * _shown(body):
        return []
    main_ids = {main.mem_id for main in mains}
    titles = tree.css("h1")
    if titles and not any(inside(heading, main_ids) for heading in titles):
        return []
    frames = {body.mem_id: body}        # the body and each main region's ancestors: kept, their other children not
    for main in mains:
        node = main.parent
        while node is not None and node.mem_id != body.mem_id:
            frames[node.mem_id] = node
            node = node.parent
    kept = main_ids | frames.keys()
    return [child for frame in frames.values() for child in frame.iter(include_text=True)
            if child.mem_id not in kept and (child.tag != "-text" or (child.text(deep=False) or "").strip())]


_NOT_SHOWN = "script, style, template, noscript"


def _shown(node: Any) -> int:
    """The characters of `node`'s text a reader sees: not whitespace, not scripts or styles."""
    return visible(node.text(deep=True)) - sum(visible(hidden.text(deep=True)) for hidden in node.css(_NOT_SHOWN))


def _outermost(nodes: list[Any]) -> list[Any]:
    ids = {node.mem_id for node in nodes}
    return [node for node in nodes if not inside(node, ids)]
