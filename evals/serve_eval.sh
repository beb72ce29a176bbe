#!/usr/bin/env bash
# Start the real Serve graph over the eval index, for `python -m evals.run`.
#
#   bash evals/serve_eval.sh [PORT]          # default port 8431; Ctrl-C / SIGTERM stops it
#
# It is serve_config.yaml with three args changed (written to var/eval-run-PORT/serve.yaml):
#   db               var/eval.db (python -m evals.build_index)
#   gate_min_cosine  $EVAL_GATE_MIN_COSINE (default 0.29: evals/calibrate.py, see evals/README.md)
#   http port        PORT
# Any other ASKDOCS_* setting passes through (e.g. ASKDOCS_MODEL=/path/model.gguf,
# or EVAL_ARGS_JSON='{"default_k": 1}' to override more args for a regression demo).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
PORT=${1:-8431}
DB=${EVAL_DB:-var/eval.db}
RUN_DIR=var/eval-run-$PORT          # per port: several instances can run side by side
CONFIG=$RUN_DIR/serve.yaml
# Ray nices its workers to 15 by default: on a shared box the Generator then starves
# (measured here: ~2 tokens/s under load vs ~15-30 at nice 0). Evals measure the graph, not the neighbours.
export RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled RAY_worker_niceness=${RAY_worker_niceness:-0}
mkdir -p "$RUN_DIR"
[[ -f "$DB" ]] || "$BIN/python" -m evals.build_index --db "$DB"

"$BIN/python" - "$PORT" "$DB" "${EVAL_GATE_MIN_COSINE:-0.29}" "${EVAL_ARGS_JSON:-{\}}" "$CONFIG" <<'PY'
import json, sys, yaml
port, db, floor, extra, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5]
cfg = yaml.safe_load(open("serve_config.yaml"))
cfg["http_options"]["port"] = int(port)
args = cfg["applications"][0]["args"]
args.update(db=db, gate_min_cosine=floor, **extra)
open(out, "w").write(yaml.safe_dump(cfg, sort_keys=False))
PY

ray_pid="" serve_pid=""
stop_all() {
  trap - INT TERM EXIT
  [[ -n "$serve_pid" ]] && kill -TERM "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
  [[ -n "$ray_pid" ]] && kill -TERM "$ray_pid" 2>/dev/null && wait "$ray_pid" 2>/dev/null || true
  echo "serve_eval: stopped" >&2
}
trap stop_all INT TERM EXIT

rm -f "$RUN_DIR/ray-address"
"$BIN/python" scripts/local_ray.py --address-file "$RUN_DIR/ray-address" --temp-dir "${TMPDIR:-/tmp}/askdocs-eval-ray-$PORT" &
ray_pid=$!
for _ in $(seq 1 120); do
  [[ -s "$RUN_DIR/ray-address" ]] && break
  kill -0 "$ray_pid" 2>/dev/null || { echo "serve_eval: Ray failed to start" >&2; exit 1; }
  sleep 0.5
done
"$BIN/serve" run --address "$(cat "$RUN_DIR/ray-address")" "$CONFIG" &
serve_pid=$!
deadline=$((SECONDS + 600))
until curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; do
  kill -0 "$serve_pid" 2>/dev/null || { echo "serve_eval: serve run exited" >&2; exit 1; }
  (( SECONDS < deadline )) || { echo "serve_eval: not healthy after 600 s" >&2; exit 1; }
  sleep 2
done
echo "serve_eval: up on http://127.0.0.1:$PORT ($(curl -fsS "http://127.0.0.1:$PORT/healthz"))" >&2
wait "$serve_pid"
