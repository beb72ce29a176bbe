#!/usr/bin/env bash
# Start the real Serve graph over the eval index, for `python -m evals.run` by hand
# (`make eval` starts and stops its own graphs: evals/live.py).
#
#   bash evals/serve_eval.sh [PORT] [--set KEY=VALUE …]     # default port 8431; Ctrl-C / SIGTERM stops it
#
# serve_config.yaml through the one launcher (serve_app/launcher.py) with only db
# (var/eval.db, built if missing) and the port changed; --set overrides any askdocs
# arg (e.g. --set engine=extractive, --set default_k=1); ASKDOCS_* variables pass
# through with the launcher's precedence (--set, then ASKDOCS_*, then the YAML).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
PORT=8431
if [[ $# -gt 0 && $1 != --* ]]; then PORT=$1; shift; fi
DB=${EVAL_DB:-var/eval.db}
# Ray nices its workers to 15 by default: on a shared box the Generator then starves
# (measured here: ~2 tokens/s under load vs ~15-30 at nice 0). Evals measure the graph, not the neighbours.
export RAY_worker_niceness=${RAY_worker_niceness:-0}
[[ -f "$DB" ]] || "$BIN/python" -m evals.build_index --db "$DB"
exec "$BIN/python" -m serve_app.cli launch serve_config.yaml --port "$PORT" --db "$DB" --run-dir "var/eval-run-$PORT" --logs "$@"
