#!/usr/bin/env bash
# `make run`: the embedded CPU default on this machine, in one command.
#   1. builds (or reuses) the demo index of the project's docs into var/demo.db,
#      unless ASKDOCS_DB names your own index: that one is served as is, never written
#   2-4. `askdocs launch` (serve_app/launcher.py): a light local Ray cluster (no
#      dashboard) only it owns, `serve run serve_config.yaml` (HTTP on 127.0.0.1:8000),
#      waits for /healthz, prints how to ask; Ctrl-C stops everything it started.
# Environment: ASKDOCS_* settings pass through (e.g. ASKDOCS_MODEL=/path/model.gguf);
# ASKDOCS_DB defaults to the demo index var/demo.db; SERVE_CONFIG picks another YAML;
# ASKDOCS_PORT (8000), ASKDOCS_START_TIMEOUT_S (300) and ASKDOCS_RUN_DIR (var/run) are this script's own.
set -euo pipefail
# A relative ASKDOCS_DB means relative to where the command was run.
if [[ -n "${ASKDOCS_DB:-}" ]]; then
  ASKDOCS_DB=$(realpath -m -- "$ASKDOCS_DB")
fi
cd "$(dirname "$0")/.."
DEMO_DB=var/demo.db
BIN=${BIN:-.venv/bin}
CONFIG=${SERVE_CONFIG:-serve_config.yaml}
HOST=127.0.0.1
PORT=${ASKDOCS_PORT:-8000}
START_TIMEOUT_S=${ASKDOCS_START_TIMEOUT_S:-300}
export ASKDOCS_DB=${ASKDOCS_DB:-$DEMO_DB}
export RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled
RUN_DIR=${ASKDOCS_RUN_DIR:-var/run}    # the launcher's config, Ray address and logs (tests use their own)

if ! "$BIN/python" - "$HOST" "$PORT" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.bind((sys.argv[1], int(sys.argv[2])))
except OSError:
    sys.exit(1)
PY
then
  echo "run: $HOST:$PORT is already in use (another askdocs?). Stop it first." >&2
  exit 1
fi

if [[ "$(realpath -m -- "$ASKDOCS_DB")" == "$(realpath -m -- "$DEMO_DB")" ]]; then
  bash scripts/build_demo_index.sh
else
  # The user's index: served untouched (no demo collection, no stamp file beside it).
  if [[ ! -f "$ASKDOCS_DB" ]]; then
    echo "run: ASKDOCS_DB=$ASKDOCS_DB: no such index file; build it with" \
         "\`docindex ingest PATH… --db $ASKDOCS_DB --collection NAME\`, or unset ASKDOCS_DB for the demo index" >&2
    exit 1
  fi
  echo "run: serving your index $ASKDOCS_DB as is (the demo index is not built)" >&2
fi

# The one launcher (serve_app/launcher.py, `askdocs launch`): a private local Ray
# head, the config rendered with the index path (an ASKDOCS_* variable beats the
# YAML arg it names, so `ASKDOCS_ENGINE=openai make run` does what it says),
# `serve run`, one /healthz wait, then the message below; Ctrl-C stops everything.
BANNER=$(cat <<MSG

askdocs is up on http://$HOST:$PORT  (index: $ASKDOCS_DB)
  web page: http://$HOST:$PORT/
  ask (SSE):
    curl -N http://$HOST:$PORT/ask -H 'content-type: application/json' \\
         -d '{"question": "How do I run askdocs on a GPU?"}'
  one JSON answer:
    curl -s 'http://$HOST:$PORT/ask?stream=false' -H 'content-type: application/json' \\
         -d '{"question": "What does make run do?"}'
The default engine answers with your documents' own sentences, each cited; for a
generative model set ASKDOCS_ENGINE=llamacpp ASKDOCS_MODEL=/path/to/instruct-model.gguf
(see docs/engines.md).
Ctrl-C stops everything.
MSG
)
echo "run: starting $CONFIG on a local Ray cluster (engine: ${ASKDOCS_ENGINE:-as in $CONFIG}${ASKDOCS_MODEL:+, model: $ASKDOCS_MODEL})…" >&2
exec "$BIN/python" -m serve_app.cli launch "$CONFIG" --host "$HOST" --port "$PORT" --db "$ASKDOCS_DB" --run-dir "$RUN_DIR" \
  --start-timeout "$START_TIMEOUT_S" --keep-serving -- printf '%s\n' "$BANNER"
