"""docindex/summary.py: extractive summaries and tags, without a server."""
from __future__ import annotations

from docindex.summary import prose_sentences, summarize

TEXT = """\
# Backups

Backups run every night at two o'clock and keep fourteen copies.

## Restoring

To restore a backup, stop the service and run `restore --from DATE`.
The restore replaces every file of the service with the copy from DATE.

```sh
restore --from 2024-01-01 --force
```

- a list item is not prose
| a | table |

Restoring a backup of the service takes about ten minutes per gigabyte.
"""


def test_only_prose_sentences_are_candidates() -> None:
    sentences = prose_sentences([TEXT])
    assert sentences[0] == "Backups run every night at two o'clock and keep fourteen copies."
    assert not [s for s in sentences if "--force" in s or s.startswith(("#", "-", "|"))]


def test_summary_sentences_are_the_documents_own_in_document_order() -> None:
    result = summarize("Backups", ["Backups", "Restoring"], [TEXT, TEXT], max_sentences=2)
    sentences = prose_sentences([TEXT])
    picked = [s for s in sentences if s in result.summary]
    assert len(picked) == 2 and result.summary == " ".join(picked)     # no sentence twice though chunks repeat
    assert "restore" in result.summary.lower()                         # the document's main subject wins
    assert result.tags[0] == "restoring" and "backups" not in result.tags   # the title is not a tag
    assert "service" in result.tags


def test_a_long_sentence_is_cut_at_a_word_and_empty_documents_summarize_to_nothing() -> None:
    long = " ".join(["word"] * 400) + "."
    assert len(summarize("T", [], [long], max_chars=100).summary) <= 100
    empty = summarize("T", [], ["# Only a heading", "```\ncode\n```"])
    assert empty.summary == "" and empty.tags == ()
