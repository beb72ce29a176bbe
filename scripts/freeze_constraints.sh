#!/usr/bin/env bash
# Regenerate requirements/constraints.txt (every installed version, transitive
# ones included) from a working .venv, after changing requirements/*.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
{
  echo "# Every installed version, transitive ones included (pip freeze of a working .venv, $(date +%F))."
  echo "# Used as -c by make install so a clean clone gets the same tree; regenerate with scripts/freeze_constraints.sh."
  .venv/bin/pip freeze --exclude-editable | sed -E 's/^([A-Za-z0-9_.-]+) @ file:.*-([0-9][^-]*)-py3.*$/\1==\2/' | grep -v '^llama[-_]cpp[-_]python'
} > requirements/constraints.txt
