"""Driver of the reliability suite's Ray cluster: start a local cluster, deploy
the given Serve config, keep it up until SIGTERM, then shut it down.

    python tests/reliability/cluster_main.py CONFIG.json RAY_TMP_DIR [CONTROL_DIR]

A separate process so the tests can kill replicas and index servers freely,
and so this cluster never shares `ray.init` state with the pytest process.
With CONTROL_DIR, a test asks the driver for tracemalloc in the Ingress
replicas (tracemalloc_probe.py): it writes `tracemalloc-start` or
`tracemalloc-top` there, the driver answers in `<request>.json`.
"""
from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path


def answer_requests(control: Path) -> None:
    """Run each tracemalloc request found in `control` on every Ingress replica."""
    import ray

    from tests.reliability import tracemalloc_probe

    probes = {"tracemalloc-start": tracemalloc_probe.start, "tracemalloc-top": tracemalloc_probe.top_growth}
    for request, probe in probes.items():
        if not (control / request).exists():
            continue
        (control / request).unlink()
        try:
            names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if "#Ingress#" in a["name"]]
            results: dict[str, object] = {
                name: ray.get(ray.get_actor(name, namespace="serve").__ray_call__.remote(probe), timeout=120)
                for name in names}
        except Exception as e:  # noqa: BLE001 - the test reads the failure; the cluster stays up
            results = {"error": f"{type(e).__name__}: {e}"}
        (control / f"{request}.json").write_text(json.dumps(results, indent=1))


def main(config_path: str, ray_tmp: str, control_dir: str | None = None) -> None:
    import ray
    from ray import serve
    from ray.serve._private import api as serve_api
    from ray.serve.schema import ServeDeploySchema

    config = ServeDeploySchema.model_validate(json.loads(open(config_path).read()))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=ray_tmp, log_to_driver=False,
             namespace="serve", configure_logging=False)
    try:
        client = serve_api.serve_start(http_options={"host": "127.0.0.1", "port": config.http_options.port},
                                       proxy_location=config.proxy_location)
        client.deploy_apps(config, _blocking=False)
        print("deployed", flush=True)
        while not stop.wait(1.0):
            if control_dir:
                answer_requests(Path(control_dir))
    finally:
        serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:4])
