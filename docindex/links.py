"""Citation links: a collection's base URL and the `url#anchor` deep link of each chunk.

`docindex ingest --base-url URL` stores one base URL per collection (store.py).
A chunk's link is then the base URL, the document's path relative to the
ingest root exactly as stored (`source`, percent-encoded, extension kept: a
base URL such as https://github.com/OWNER/REPO/blob/main/ serves the file
itself), and `#anchor` (the GitHub-style slug of the chunk's heading). A URL
in the document's own front matter (`url:`) wins and is used as written.
Without either there is no link (None), and citations stay `source#anchor`.
"""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlsplit

from .errors import InputError

MAX_BASE_URL = 2000


def check_base_url(url: str) -> str:
    """The base URL as stored (ending in "/"), or InputError saying what is wrong with it.

    Only absolute http(s) URLs with a host; no user name or password (a stored
    URL is printed in every citation), no query and no fragment (the path and
    `#anchor` are appended to it)."""
    text = (url or "").strip()
    if not text:
        raise InputError("the base URL is empty")
    if len(text) > MAX_BASE_URL or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise InputError(f"invalid base URL {text[:80]!r}: too long, or it has spaces or control characters")
    try:
        parts = urlsplit(text)
        _ = parts.port          # raises ValueError for a bad port
    except ValueError as exc:
        raise InputError(f"invalid base URL {text!r}: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InputError(f"invalid base URL {text!r}: it must start with http:// or https://")
    if not parts.hostname:
        raise InputError(f"invalid base URL {text!r}: it has no host")
    if parts.username is not None or parts.password is not None:
        raise InputError("invalid base URL: it must not carry a user name or password "
                         "(it is printed in every citation)")
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise InputError(f"invalid base URL {text!r}: no query or fragment (the path and #anchor are appended)")
    return text if text.endswith("/") else text + "/"


def chunk_url(base_url: str | None, source: str, anchor: str, metadata: dict[str, Any] | str | None) -> str | None:
    """The link a citation of this chunk carries: front matter's `url`, else base URL + source + #anchor."""
    fields = json.loads(metadata) if isinstance(metadata, str) else metadata or {}
    own = fields.get("url") if isinstance(fields, dict) else None
    if isinstance(own, str) and own:
        return own
    if not base_url:
        return None
    return base_url + quote(source, safe="/") + (f"#{quote(anchor, safe='')}" if anchor else "")
