"""crag-mcp's contract, which docindex keeps so either server can sit behind the Retriever.

- `crag_search {query, k}` answers one text item per passage,
  "[cos C  bm25 B  fusion F] <source>" then the chunk text, or the one item
  "(no matching chunks)"; `crag_stats {}` and the `crag://stats` resource
  answer "db: / chunks: / files: / dim:".
- Arguments are validated against each tool's advertised JSON schema before
  the SDK sees them, so a bad argument becomes an `isError` result worded as
  crag-mcp words it ("Invalid arguments for tool 'crag_search': string too
  short (min 1) (path: /query, keyword: minLength)"), not a pydantic dump.
  Rules a schema cannot state (a stopword-only query, "source or doc_id")
  are worded the same way, without a keyword (`ArgumentViolation`).
- Errors docindex raises on purpose (`DocindexError`) become `isError`
  results with their own one-line message; anything else is a bug, logged
  with its traceback on stderr and reported only as "Error executing tool X".
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import jsonschema
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from ..errors import DocindexError, InputError
from ..types import Hit

log = logging.getLogger("docindex.mcp")

NO_MATCH_TEXT = "(no matching chunks)"
# SQLite integers are signed 64-bit: a larger id is the caller's mistake, not an overflow inside the index.
MAX_ID = 2**63 - 1

K_SCHEMA = {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}
CRAG_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "minLength": 1}, "k": K_SCHEMA},
    "required": ["query"],
    "additionalProperties": False,
}
CRAG_STATS_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


class ArgumentViolation(InputError):
    """An argument the schema cannot express a rule for (a blank query, two ids)."""

    def __init__(self, message: str, *, path: str, keyword: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.keyword = keyword


# When several rules fail, report the one crag-mcp's validator reports first.
_KEYWORD_ORDER = {"required": 0, "additionalProperties": 1, "type": 2, "enum": 3,
                  "minLength": 4, "maxLength": 4, "minimum": 5, "maximum": 5}


def _pointer(parts: Iterable[Any]) -> str:
    """RFC 6901 JSON pointer, as crag-mcp prints paths ("" for the root)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def describe_violation(error: jsonschema.ValidationError) -> tuple[str, str, str]:
    """(message, path, keyword) for one schema violation, in crag-mcp's words."""
    keyword = str(error.validator)
    path = list(error.absolute_path)
    value = error.validator_value
    if keyword == "required":
        missing = next(name for name in value if name not in error.instance)
        return "missing required property", _pointer([*path, missing]), keyword
    if keyword == "additionalProperties":
        known = error.schema.get("properties", {})
        extra = next(name for name in error.instance if name not in known)
        return "unexpected property", _pointer([*path, extra]), keyword
    messages: dict[str, Callable[[], str]] = {
        "type": lambda: f"expected type {value}" if isinstance(value, str) else "no listed type matches",
        "enum": lambda: "value not in enum",
        "minLength": lambda: f"string too short (min {value})",
        "maxLength": lambda: f"string too long (max {value})",
        "minimum": lambda: "value below minimum",
        "maximum": lambda: "value above maximum",
    }
    message = messages[keyword]() if keyword in messages else str(error.message)
    return message, _pointer(path), keyword


def invalid_arguments_text(tool: str, message: str, path: str, keyword: str | None) -> str:
    where = f"path: {path}" + (f", keyword: {keyword}" if keyword else "")
    return f"Invalid arguments for tool '{tool}': {message} ({where})"


def error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class SchemaValidatingServer(MCPServer):
    """MCPServer whose tools are validated against their advertised input schema first.

    The SDK would validate with the function's pydantic model and answer with
    pydantic's multi-line dump; clients of crag-mcp expect its one-line wording.
    """

    def __init__(self, *args: Any, tools: list[Tool], **kwargs: Any) -> None:
        super().__init__(*args, tools=tools, **kwargs)
        self._validators = {
            tool.name: jsonschema.Draft202012Validator(tool.parameters) for tool in tools
        }

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        validator = self._validators.get(name)
        if validator is not None:
            errors = sorted(validator.iter_errors(arguments), key=lambda e: _KEYWORD_ORDER.get(str(e.validator), 9))
            if errors:
                message, path, keyword = describe_violation(errors[0])
                log.info("tool %s rejected arguments at %s (%s)", name, path or "/", keyword)
                return error_result(invalid_arguments_text(name, message, path, keyword))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ArgumentViolation):
                log.info("tool %s rejected arguments at %s: %s", name, cause.path, cause)
                return error_result(invalid_arguments_text(name, str(cause), cause.path, cause.keyword))
            if isinstance(cause, DocindexError):
                log.info("tool %s failed: %s", name, cause)
                return error_result(str(cause))
            raise


def schema_tool(fn: Callable[..., Any], schema: dict[str, Any], *, name: str, description: str) -> Tool:
    """A tool whose advertised inputSchema is `schema`, not the one derived from `fn`'s signature."""
    tool = Tool.from_function(fn, name=name, description=description, annotations=READ_ONLY)
    return tool.model_copy(update={"parameters": schema})


def format_passage(hit: Hit, *, with_anchor: bool = False) -> str:
    """crag-mcp's text form of one passage; `search` adds `#anchor` so agents can cite from text alone."""
    where = f"{hit.source}#{hit.anchor}" if with_anchor and hit.anchor else hit.source
    return f"[cos {hit.cosine:.3f}  bm25 {hit.bm25:.2f}  fusion {hit.fusion:.3f}] {where}\n{hit.text}"


def crag_stats_text(db_path: object, stats: dict[str, Any]) -> str:
    """crag-mcp's stats layout: db, chunks, files, dim."""
    return (
        f"db:     {db_path}\n"
        f"chunks: {stats.get('chunks', 0)}\n"
        f"files:  {stats.get('documents', 0)}\n"
        f"dim:    {stats.get('embed_dim') or 0}"
    )
