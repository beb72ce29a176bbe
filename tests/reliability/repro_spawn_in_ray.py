"""The spawn-after-kill case inside a Ray replica, watched by strace: start the
shipped graph (fake engine, stub index) on its own cluster, attach
`strace -f` to the Retriever replica, SIGKILL the index server KILLS times
(GAP_S apart, each followed by one answer), then list every process the
replica forked: did it exec, how did it end.

    .venv/bin/python tests/reliability/repro_spawn_in_ray.py [KILLS] [GAP_S]
    STACKS=1 ...                  # with each traced call's stack (strace -k): who called alarm()
    RAY_USE_UVLOOP=0 ...          # replicas on asyncio instead of uvloop (the workaround tried)

Prints JSON: the answers' statuses and times, forks, execs, and the children
that ended without exec (the "died before exec" case of KNOWN_LIMITATIONS.md).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx  # noqa: E402

from tests.reliability.conftest import start_cluster  # noqa: E402
from tests.serve.conftest import pids_with  # noqa: E402

QUESTION = "What does the proxy answer when the queue is full?"


def parse(trace: str) -> dict:
    forked, execed, ended = set(), set(), {}
    for line in trace.splitlines():
        m = re.match(r"(\d+) +\S+ (.*)", line)
        if not m:
            continue
        pid, rest = int(m.group(1)), m.group(2)
        child = re.match(r"(?:clone3?|vfork|fork)\(.*\) = (\d+)$", rest)
        if child and "CLONE_THREAD" not in rest:
            forked.add(int(child.group(1)))
        if rest.startswith("execve(") and rest.endswith("= 0") or "<... execve resumed>) = 0" in rest:
            execed.add(pid)
        if rest.startswith("+++"):
            ended[pid] = rest
    return {"forks": len(forked), "execs": len(forked & execed),
            "ended_without_exec": {p: ended.get(p, "still running") for p in sorted(forked - execed)}}


def main(kills: int, gap_s: float) -> None:
    with tempfile.TemporaryDirectory() as tmp, start_cluster(Path(tmp)) as cluster:
        retriever = cluster.replica_pids("Retriever")[0]
        out = Path(tmp) / "strace.txt"
        stacks = ["-k"] if os.environ.get("STACKS") else []      # STACKS=1: each traced call's stack
        tracer = subprocess.Popen(["strace", "-f", "-tt", *stacks, "-o", str(out),
                                   "-e", "trace=execve,clone,clone3,vfork,fork,exit_group,kill,tgkill,setsid,"
                                   "alarm,setitimer,timer_create,timer_settime,rt_sigaction",
                                   "-p", str(retriever)], stderr=subprocess.DEVNULL)
        time.sleep(3)                               # attached to every thread
        answers = []
        for _ in range(kills):
            victims = pids_with(cluster.mcp_tag)
            for pid in victims:
                os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
            r = httpx.post(f"{cluster.url}/ask?stream=false", json={"question": QUESTION}, timeout=120)
            answers.append({"killed": len(victims), "status": r.status_code,
                            "stage": (r.json().get("error") or {}).get("stage") if r.status_code != 200 else None,
                            "s": round(time.monotonic() - killed, 2)})
            time.sleep(gap_s)
        tracer.send_signal(signal.SIGINT)
        tracer.wait(30)
        trace = out.read_text()
        Path("var/reliability").mkdir(parents=True, exist_ok=True)
        Path("var/reliability/spawn_in_ray.strace").write_text(trace)
    print(json.dumps({"kills": kills, "gap_s": gap_s, "load_average": os.getloadavg(), "answers": answers,
                      **parse(trace)}, indent=1))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8, float(sys.argv[2]) if len(sys.argv) > 2 else 3.0)
