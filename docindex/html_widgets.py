"""Page widgets a script fills or switches, read as a browser with scripts off would not show them.

LibreOffice's help (2,345 pages) opened every page's first chunk with "LibreOffice 7.4 Help / Contents /
Index 🔎︎" and read each platform switch whole, "Under LibreOffice - PreferencesTools - Options -
LibreOffice - General …": its pages put the site's banner in a body-level <header>, its contents tree and
search box in <aside>s that scripts fill, and each menu path once per platform, all hidden, for a script
to show one. Removed here, before the reader's other chrome rules:

- a <header> directly under <body> that holds no <h1> (a site banner, not an article's title block);
- an <aside> holding a form control (a search box, a menu's toggle): a widget, not a sidebar's text
  (docutils' sidebars and footnotes are <aside>s too, and keep their text);
- of an inline switch whose choices are all hidden, every choice but the default (the one no platform
  class names): "Tools - Options", not "LibreOffice - Preferences" as well.

Its "Related Topics" list of links is a plain selector, in html_reader's _CHROME.
"""
from __future__ import annotations

from typing import Any


def drop_widgets(tree: Any) -> None:
    """Remove `tree`'s script-driven widgets (module docstring) in place."""
    for header in tree.css("body > header"):
        if header.css_first("h1") is None:
            header.decompose()
    for aside in tree.css("aside"):
        if aside.parent is not None and aside.css_first("input, button, select") is not None:
            aside.decompose()
    for switch in tree.css("span.switchinline"):
        choices = [child for child in switch.iter() if child.tag != "-text"]
        if len(choices) > 1 and all("hidden" in child.attributes for child in choices):
            if any(not child.attributes.get("class") for child in choices):
                for child in choices:
                    if child.attributes.get("class"):
                        child.decompose()
