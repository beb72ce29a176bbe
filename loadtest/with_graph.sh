#!/usr/bin/env bash
# Start askdocs from a Serve config on a private local Ray cluster, run
# loadtest/run.sh against it, stop everything this script started.
#
#   DB=var/loadtest/cmcp.db loadtest/with_graph.sh                       # fake engine, fixed latency
#   CONFIG=serve_config.yaml DB=var/demo.db USERS="1 2" loadtest/with_graph.sh   # embedded default
#
# Environment: CONFIG (loadtest/serve_config.fake.yaml), DB (an index built by
# `docindex ingest`; required), PORT (8000), START_TIMEOUT_S (300); everything
# else (USERS, DURATION_S, NOTE, …) passes through to loadtest/run.sh; RUN
# replaces run.sh with another command (it gets TARGET, and GRAPH_WORK: the
# folder with the rendered config and the Ray/Serve logs).
# The graph is started by the one launcher (`askdocs launch`, serve_app/launcher.py):
# the config is rendered with its host, port and index path replaced; the
# original file is not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
CONFIG=${CONFIG:-loadtest/serve_config.fake.yaml}
PORT=${PORT:-8000}
START_TIMEOUT_S=${START_TIMEOUT_S:-300}
: "${DB:?set DB to an index file (docindex ingest … --db FILE)}"
[[ -f "$DB" ]] || { echo "with_graph: no index at $DB" >&2; exit 1; }

work=$(mktemp -d /tmp/askdocs-lt.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$BIN/python" -m serve_app.cli launch "$CONFIG" --host 127.0.0.1 --port "$PORT" --db "$DB" --run-dir "$work" \
  --start-timeout "$START_TIMEOUT_S" --logs -- bash -c "${RUN:-bash loadtest/run.sh}"
