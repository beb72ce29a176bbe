"""`docindex serve-mcp --endpoint URL`: fetch_docs from a deployed askdocs, no local index.

The deployed service sends its doc tree as one tar.gz (`GET /ask/archive`,
docs/api.md). This server pulls it when `fetch_docs` is called, into a cache
keyed by host and collection, and answers exactly as the local `fetch_docs`
does ({path, contentHash, sections, tree, upToDate}).

- Hash-gated: the cached tree's content hash goes out as `If-None-Match`; a
  304 reuses it without a byte. A new archive must match its
  `X-Archive-Sha256`, and its manifest must carry the ETag's content hash.
- Bounded and safe: at most `max_download_bytes` are read; unpacking is
  `docindex.tree_archive.unpack_tree` (no absolute paths, `..`, links or
  oversized members; nothing outside the cache is written).
- Atomic: the tree is unpacked into a temporary sibling and renamed into
  place, then older trees of that collection are removed.
- Collections whose names fold to the same folder name (`p/q`, `p_q`) get
  distinct folders: the folder name carries a hash of the exact name.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult

from ..errors import DocindexError
from ..fetch_docs import FetchResult, _prune_siblings, _swap_into_place, _written_tree
from ..safe_paths import safe_segment
from ..tree_archive import UnsafeArchive, unpack_tree
from .contract import SchemaValidatingServer, schema_tool
from .payloads import json_result

log = logging.getLogger(__name__)

MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024
TIMEOUT_S = 120.0
_TMP_PREFIX = ".tmp-"


class EndpointError(DocindexError):
    """The service could not be reached or refused (one line, with the URL)."""


def archive_url(endpoint: str) -> str:
    """`http://HOST:PORT/ask` (or the bare service URL) → its `/ask/archive`."""
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EndpointError(f"--endpoint must be an http(s) URL like http://HOST:PORT/ask, not {endpoint!r}")
    path = parts.path.rstrip("/")
    path = path + "/archive" if path.endswith("/ask") else path + "/ask/archive"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def default_cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "docindex" / "endpoints"


def collection_folder(cache_root: Path, url: str, collection: str | None) -> Path:
    """`<root>/<host_port>/<collection>-<hash of the exact name>`: never shared by two names."""
    host = safe_segment(urllib.parse.urlsplit(url).netloc.replace(":", "_"), fallback="host")
    name = collection or ""
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
    return cache_root / host / f"{safe_segment(name or 'default', fallback='collection')}-{digest}"


def _current(folder: Path) -> FetchResult | None:
    """The complete tree cached in `folder`, if any."""
    if not folder.is_dir():
        return None
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or not entry.is_dir() or entry.is_symlink():
            continue
        try:
            content_hash = json.loads((entry / ".docindex-tree").read_text(encoding="utf-8"))["contentHash"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        tree = _written_tree(entry, str(content_hash))
        if tree is not None:
            return FetchResult(entry, str(content_hash), sum(len(d.sections) for d in tree), tree, up_to_date=True)
    return None


def _get(url: str, headers: dict[str, str], max_bytes: int) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            status, got = response.status, {k.lower(): v for k, v in response.headers.items()}
            body = response.read(max_bytes + 1)
    except urllib.error.HTTPError as e:
        status, got = e.code, {k.lower(): v for k, v in e.headers.items()}
        body = e.read(64 * 1024)
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise EndpointError(f"cannot reach {url}: {reason}") from None
    if len(body) > max_bytes:
        raise EndpointError(f"{url}: the archive is over {max_bytes} bytes; not fetched")
    return status, body, got


def _refusal(url: str, status: int, body: bytes) -> EndpointError:
    try:
        message = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = body[:200].decode("utf-8", "replace").strip() or "no message"
    return EndpointError(f"{url}: HTTP {status}: {message}")


class EndpointTrees:
    """The doc trees of one deployed service, cached on this machine."""

    def __init__(self, endpoint: str, *, cache_root: Path | None = None, api_key: str | None = None,
                 max_download_bytes: int = MAX_DOWNLOAD_BYTES) -> None:
        self.url = archive_url(endpoint)
        self.cache_root = (cache_root or default_cache_root()).resolve()
        self.api_key = api_key
        self.max_download_bytes = max_download_bytes

    def fetch(self, collection: str | None = None, force: bool = False) -> FetchResult:
        folder = collection_folder(self.cache_root, self.url, collection)
        current = None if force else _current(folder)
        headers = {"Accept": "application/gzip"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if current is not None:
            headers["If-None-Match"] = f'"{current.content_hash}"'
        url = self.url + ("?" + urllib.parse.urlencode({"collection": collection}) if collection else "")
        status, body, got = _get(url, headers, self.max_download_bytes)
        if status == 304 and current is not None:
            return current
        if status != 200:
            raise _refusal(url, status, body)
        content_hash = got.get("etag", "").strip().removeprefix("W/").strip('"')
        if not content_hash or hashlib.sha256(body).hexdigest() != got.get("x-archive-sha256"):
            raise EndpointError(f"{url}: the archive does not match its X-Archive-Sha256 / ETag; not used")
        if current is not None and current.content_hash == content_hash:
            return current
        return self._install(folder, body, content_hash)

    def _install(self, folder: Path, data: bytes, content_hash: str) -> FetchResult:
        folder.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=folder))
        os.rmdir(staging)           # unpack_tree creates it: a name only this process chose
        try:
            unpack_tree(data, staging)
            tree = _written_tree(staging, content_hash)
            if tree is None:
                raise UnsafeArchive("the archive's manifest does not carry the content hash its ETag names")
            version = safe_segment(content_hash[:16], fallback="empty")
            target = folder / version
            _swap_into_place(staging, target, replace=True)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        _prune_siblings(folder, keep=version)
        log.info("fetched %s into %s", self.url, target)
        return FetchResult(target, content_hash, sum(len(d.sections) for d in tree), tree, up_to_date=False)


FETCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "collection": {"type": "string", "minLength": 1, "maxLength": 200,
                       "description": "collection to fetch; the service's only one when omitted"},
        "force": {"type": "boolean", "default": False, "description": "download again even if unchanged"},
    },
    "additionalProperties": False,
}

INSTRUCTIONS = """\
This server reads a deployed askdocs service's documents as files: call \
`fetch_docs`. It downloads the service's doc tree (one markdown file per \
section, with frontmatter: title, source, anchor, url) into a local cache once, \
then only when the service's index changed, and returns the path and the title \
tree. Read the tree first, open only fitting sections, grep the path for \
specifics, and cite source#anchor (or the url when there is one).
"""


def build_endpoint_server(trees: EndpointTrees) -> SchemaValidatingServer:
    def fetch_docs(collection: str | None = None, force: bool = False) -> CallToolResult:
        result = trees.fetch(collection, force)
        state = "unchanged since the last call" if result.up_to_date else "downloaded"
        outline = (result.path / "INDEX.md").read_text(encoding="utf-8")
        text = (f"{result.sections} section files {state} under {result.path} (from {trees.url})\n"
                f"contentHash: {result.content_hash}\n\n{outline}")
        return json_result(result.to_dict(), text=text)

    tool = schema_tool(fetch_docs, FETCH_SCHEMA, name="fetch_docs", description=(
        "Download the deployed service's collection as markdown files, one per section with YAML "
        "frontmatter (title, source, anchor, url, heading_path), into a local cache; returns "
        "{path, contentHash, sections, tree, upToDate}. Downloads only when the service's index changed."))
    return SchemaValidatingServer("docindex", instructions=INSTRUCTIONS, tools=[tool])


def run_endpoint_stdio(endpoint: str, cache_root: Path | None, api_key: str | None) -> None:
    from .server import _log_to_stderr

    _log_to_stderr()
    trees = EndpointTrees(endpoint, cache_root=cache_root, api_key=api_key)
    log.info("serving fetch_docs from %s over stdio (cache: %s)", trees.url, trees.cache_root)
    build_endpoint_server(trees).run("stdio")
