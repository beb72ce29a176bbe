"""Errors raised by the docindex library.

DocindexError
├─ InputError               bad user input (CLI args, tool args)
│  ├─ EmptyQuery            query empty, or only stopwords/punctuation for every retriever
│  ├─ CollectionNotFound    no such collection in this index
│  └─ DocumentNotFound      no such document (source or doc_id)
├─ IngestError              nothing ingestible (missing path, empty directory)
└─ StoreError               the index file cannot be used
   ├─ NotAnIndex            not SQLite, or SQLite without our schema (corrupt / foreign)
   ├─ SchemaMismatch        written by an older or newer docindex schema
   └─ EmbedderMismatch      index built with another embedding model

Mapped once at each edge: ClickException in the CLI, `isError` tool results
in the MCP server. Messages are one readable line.
"""
from __future__ import annotations


class DocindexError(Exception):
    """Root of every error docindex raises on purpose."""


class InputError(DocindexError):
    """Bad input from a user or a client."""


class EmptyQuery(InputError):
    """The query has nothing searchable."""


class CollectionNotFound(InputError):
    """The named collection does not exist in this index."""


class DocumentNotFound(InputError):
    """The named document does not exist."""


class IngestError(DocindexError):
    """Nothing could be ingested from the given paths."""


class StoreError(DocindexError):
    """The index file cannot be used."""


class NotAnIndex(StoreError):
    """The file is not a docindex database (corrupt or foreign)."""


class SchemaMismatch(StoreError):
    """The file was written by another schema version."""


class EmbedderMismatch(StoreError):
    """The index was built with a different embedding model."""
