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
# replaces run.sh with another command.
# The config is copied with its port and index path replaced; the original
# file is not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
CONFIG=${CONFIG:-loadtest/serve_config.fake.yaml}
PORT=${PORT:-8000}
START_TIMEOUT_S=${START_TIMEOUT_S:-300}
: "${DB:?set DB to an index file (docindex ingest … --db FILE)}"
[[ -f "$DB" ]] || { echo "with_graph: no index at $DB" >&2; exit 1; }
export RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled

work=$(mktemp -d /tmp/askdocs-lt.XXXXXX)
ray_pid="" serve_pid=""
cleanup() {
  trap - INT TERM EXIT
  # `serve run` in the background ignores SIGINT; SIGTERM stops it cleanly.
  if [[ -n "$serve_pid" ]] && kill -0 "$serve_pid" 2>/dev/null; then kill -TERM "$serve_pid"; wait "$serve_pid" || true; fi
  if [[ -n "$ray_pid" ]] && kill -0 "$ray_pid" 2>/dev/null; then kill -TERM "$ray_pid"; wait "$ray_pid" || true; fi
  rm -rf "$work"
}
trap cleanup INT TERM EXIT

"$BIN/python" - "$CONFIG" "$work/serve_config.yaml" "$PORT" "$(realpath "$DB")" <<'PY'
import sys, yaml
source, target, port, db = sys.argv[1:]
config = yaml.safe_load(open(source))
config.setdefault("http_options", {}).update(host="127.0.0.1", port=int(port))
config["applications"][0].setdefault("args", {})["db"] = db
yaml.safe_dump(config, open(target, "w"), sort_keys=False)
PY

"$BIN/python" scripts/local_ray.py --address-file "$work/address" --temp-dir "$work/ray" >"$work/ray.log" 2>&1 &
ray_pid=$!
for _ in $(seq 1 240); do [[ -s "$work/address" ]] && break; sleep 0.5; done
[[ -s "$work/address" ]] || { echo "with_graph: Ray did not start" >&2; cat "$work/ray.log" >&2; exit 1; }

"$BIN/serve" run --address "$(cat "$work/address")" "$work/serve_config.yaml" >"$work/serve.log" 2>&1 &
serve_pid=$!
deadline=$((SECONDS + START_TIMEOUT_S))
until "$BIN/python" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=5)" \
      "http://127.0.0.1:$PORT/healthz" 2>/dev/null; do
  if ! kill -0 "$serve_pid" 2>/dev/null || (( SECONDS > deadline )); then
    echo "with_graph: askdocs did not become healthy; serve log:" >&2
    tail -40 "$work/serve.log" >&2
    exit 1
  fi
  sleep 2
done
echo "with_graph: askdocs up from $CONFIG on 127.0.0.1:$PORT (index $DB)"
# RUN replaces the load test with any command (it gets TARGET too), e.g. to
# look at one answer by hand while the graph is up (GRAPH_WORK: its logs).
GRAPH_WORK="$work" TARGET="http://127.0.0.1:$PORT" bash -c "${RUN:-bash loadtest/run.sh}"
