#!/usr/bin/env bash
# Build the demo index (the project's own docs/ + README.md) into var/demo.db.
# Reused as is when none of those files changed since the last build (a stamp
# holds their hash); otherwise `docindex ingest` updates it incrementally
# (unchanged files are skipped by their SHA-256).
#
#   bash scripts/build_demo_index.sh            # DB: $ASKDOCS_DB or var/demo.db
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
DB=${ASKDOCS_DB:-var/demo.db}
COLLECTION=${ASKDOCS_DEMO_COLLECTION:-askdocs}
SOURCES=(docs README.md)
STAMP="$DB.sources.sha256"

existing=()
for s in "${SOURCES[@]}"; do [[ -e "$s" ]] && existing+=("$s"); done
if [[ ${#existing[@]} -eq 0 ]]; then
  echo "build_demo_index: none of ${SOURCES[*]} exists" >&2
  exit 1
fi
# Hash of every file's path and content, in a stable order.
want=$(find "${existing[@]}" -type f \( -name '*.md' -o -name '*.txt' -o -name '*.html' -o -name '*.pdf' \) -print0 \
       | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if [[ -f "$DB" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
  echo "demo index $DB is up to date" >&2
  exit 0
fi
mkdir -p "$(dirname "$DB")"
"$BIN/docindex" ingest "${existing[@]}" --db "$DB" --collection "$COLLECTION"
echo "$want" > "$STAMP"
