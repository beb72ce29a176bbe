"""Driver of the reliability suite's Ray cluster: start a local cluster, deploy
the given Serve config, keep it up until SIGTERM, then shut it down.

    python tests/reliability/cluster_main.py CONFIG.json RAY_TMP_DIR

A separate process so the tests can kill replicas and index servers freely,
and so this cluster never shares `ray.init` state with the pytest process.
"""
from __future__ import annotations

import json
import signal
import sys
import threading


def main(config_path: str, ray_tmp: str) -> None:
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
        stop.wait()
    finally:
        serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
