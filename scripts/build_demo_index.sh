#!/usr/bin/env bash
# Build the demo index (the project's own docs/ + README.md) into var/demo.db.
# Reused as is when none of those files changed since the last build (a stamp
# beside it, var/demo.db.sources.sha256, holds their hash); otherwise
# `docindex ingest` updates it incrementally (unchanged files are skipped by
# their SHA-256).
#
# It only ever writes the demo DB: ASKDOCS_DB (a user's own index, served by
# `ASKDOCS_DB=… make run`) is ignored here, so a user's index never gets the
# demo collection or a stamp file.
#
#   bash scripts/build_demo_index.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
DB=var/demo.db
COLLECTION=${ASKDOCS_DEMO_COLLECTION:-askdocs}
SOURCES=(docs README.md)
STAMP="$DB.sources.sha256"
EXIT_SKIPPED=3      # `docindex ingest`: done, some files skipped (docs/ holds images)

existing=()
for s in "${SOURCES[@]}"; do [[ -e "$s" ]] && existing+=("$s"); done
if [[ ${#existing[@]} -eq 0 ]]; then
  echo "build_demo_index: none of ${SOURCES[*]} exists" >&2
  exit 1
fi
# Hash of every file's path and content, in a stable order, and of the reading rules' version: new
# rules (an upgrade) read the same files into other chunks, so the index is brought up to date.
reading=$(grep -m1 '^READING_VERSION = ' docindex/blocks.py 2>/dev/null || true)
want=$( { find "${existing[@]}" -type f \( -name '*.md' -o -name '*.txt' -o -name '*.html' -o -name '*.pdf' \
            -o -name '*.rst' -o -name '*.adoc' \) -print0 | sort -z | xargs -0 sha256sum; echo "reading $reading"; } \
       | sha256sum | cut -d' ' -f1)
if [[ -f "$DB" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
  echo "demo index $DB is up to date" >&2
  exit 0
fi
mkdir -p "$(dirname "$DB")"
status=0
"$BIN/docindex" ingest "${existing[@]}" --db "$DB" --collection "$COLLECTION" 2> >(grep -v '^skipped .*unsupported file type' >&2) || status=$?
if [[ $status -ne 0 && $status -ne $EXIT_SKIPPED ]]; then
  exit "$status"
fi
echo "$want" > "$STAMP"
