#!/usr/bin/env bash
# Headless Locust runs against a running askdocs at 1, 4 and 16 users; CSV,
# HTML and the markdown table (summary.md) go to loadtest/results/<stamp>/.
# Only DOC=docs/load-test.md appends the table to the tracked docs.
#
#   loadtest/run.sh                              # 60 s per level at http://127.0.0.1:8000
#   USERS="1 2" DURATION_S=30 NOTE="fake engine, 50 ms/token" loadtest/run.sh
#   DOC=docs/load-test.md loadtest/run.sh        # a result meant for the docs
#
# Environment (all optional):
#   TARGET        askdocs base URL; loopback only       (http://127.0.0.1:8000)
#   USERS         user counts, one run each            ("1 4 16")
#   DURATION_S    seconds per run: the measured window  (60)
#   STOP_TIMEOUT  seconds users may finish an answer   (30; such answers are
#                 reported apart, never counted in answers/s)
#   SETTLE_S      pause between runs, queues drain      (5)
#   ENGINE MODEL  labels for the table                  (read from $TARGET/healthz)
#   MACHINE       label for the table                   (from nproc/free/nvidia-smi)
#   NOTE          one line added under the table
#   RESULTS_ROOT  where result folders go               (loadtest/results)
#   DOC           markdown file to append the table to  (none: results/<stamp>/summary.md)
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=${TARGET:-http://127.0.0.1:8000}
USERS=${USERS:-"1 4 16"}
DURATION_S=${DURATION_S:-60}
STOP_TIMEOUT=${STOP_TIMEOUT:-30}
SETTLE_S=${SETTLE_S:-5}
RESULTS_ROOT=${RESULTS_ROOT:-loadtest/results}
DOC=${DOC:-}
NOTE=${NOTE:-}
PY=${PY:-.venv/bin/python}
LOCUST=${LOCUST:-.venv/bin/locust}

# Loopback only: this script generates load; it must never be pointed at
# someone else's service by a typo.
if ! "$PY" - "$TARGET" <<'PYEOF'
import ipaddress, sys
from urllib.parse import urlsplit
host = urlsplit(sys.argv[1]).hostname or ""
try:
    ok = ipaddress.ip_address(host).is_loopback
except ValueError:
    ok = host == "localhost"
sys.exit(0 if ok else 1)
PYEOF
then
  echo "run.sh: TARGET must be a loopback address (127.0.0.1, ::1, localhost), got: $TARGET" >&2
  exit 2
fi

health=$("$PY" - "$TARGET" <<'PYEOF'
import json, sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1].rstrip("/") + "/healthz", timeout=10) as r:
        h = json.load(r)
except Exception as exc:  # any failure means: nothing to load-test
    sys.exit(f"run.sh: no askdocs answering at {sys.argv[1]}/healthz ({exc})")
print(h.get("engine", "unknown"), h.get("model", "unknown"), sep="\t")
PYEOF
)
ENGINE=${ENGINE:-$(cut -f1 <<<"$health")}
MODEL=${MODEL:-$(cut -f2 <<<"$health")}

if [[ -z "${MACHINE:-}" ]]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
  MACHINE="$(nproc)-core $(uname -m), $(free -g | awk '/^Mem:/{print $2}') GiB, ${gpu:-no GPU}"
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
out="$RESULTS_ROOT/$stamp"
mkdir -p "$out"
echo "load test: $TARGET engine=$ENGINE model=$MODEL users=[$USERS] ${DURATION_S}s each → $out"

first=1
for users in $USERS; do
  [[ $first == 1 ]] || sleep "$SETTLE_S"
  first=0
  echo "--- $users user(s)"
  # timeout: a hung run still ends (run time + stop timeout + start-up slack).
  rc=0
  cut -d' ' -f1 /proc/loadavg >"$out/u$users.loadavg"
  timeout $((DURATION_S + STOP_TIMEOUT + 60)) "$LOCUST" -f loadtest/locustfile.py --headless \
    --users "$users" --spawn-rate "$users" --run-time "${DURATION_S}s" --stop-timeout "$STOP_TIMEOUT" \
    --host "$TARGET" --csv "$out/u$users" --html "$out/u$users.html" \
    --only-summary --loglevel WARNING >"$out/u$users.log" 2>&1 || rc=$?
  cut -d' ' -f1 /proc/loadavg >>"$out/u$users.loadavg"
  # Locust exits 1 when any request failed; that is a result, not an error.
  if [[ $rc != 0 && $rc != 1 ]]; then
    echo "locust failed (exit $rc) at $users users; see $out/u$users.log" >&2
    tail -20 "$out/u$users.log" >&2
    exit 1
  fi
done

"$PY" loadtest/summarize.py --results "$out" ${DOC:+--doc "$DOC"} --engine "$ENGINE" --model "$MODEL" \
  --machine "$MACHINE" --date "$(date -u +%F)" --target "$TARGET" --duration-s "$DURATION_S" --note "$NOTE"
