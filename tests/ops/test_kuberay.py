"""k8s/rayservice.yaml: the KubeRay RayService, checked without a cluster."""

from __future__ import annotations

import posixpath
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from serve_app import config_check

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "k8s" / "rayservice.yaml"
GPU_CONFIG = REPO / "serve_config.gpu.yaml"

needs_gpu_config = pytest.mark.skipif(
    not GPU_CONFIG.is_file(), reason="serve_config.gpu.yaml is absent: nothing to compare serveConfigV2 with"
)


def documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def rayservice() -> dict[str, Any]:
    (service,) = [d for d in documents() if d["kind"] == "RayService"]
    return service


def serve_config() -> dict[str, Any]:
    return yaml.safe_load(rayservice()["spec"]["serveConfigV2"])


def cluster() -> dict[str, Any]:
    return rayservice()["spec"]["rayClusterConfig"]


def head_pod() -> dict[str, Any]:
    return cluster()["headGroupSpec"]["template"]["spec"]


def gpu_group() -> dict[str, Any]:
    (group,) = [g for g in cluster()["workerGroupSpecs"] if g["groupName"] == "gpu"]
    return group


def all_containers() -> list[dict[str, Any]]:
    pods = [head_pod()] + [g["template"]["spec"] for g in cluster()["workerGroupSpecs"]]
    return [c for pod in pods for c in pod.get("initContainers", []) + pod["containers"]]


def deployments() -> dict[str, dict[str, Any]]:
    (app,) = serve_config()["applications"]
    return {d["name"]: d for d in app["deployments"]}


def test_it_is_a_ray_io_v1_rayservice() -> None:
    assert rayservice()["apiVersion"] == "ray.io/v1"


@needs_gpu_config
def test_serve_config_v2_is_identical_to_serve_config_gpu_yaml() -> None:
    assert serve_config() == yaml.safe_load(GPU_CONFIG.read_text()), (
        "k8s/rayservice.yaml drifted from serve_config.gpu.yaml: run python k8s/sync_serve_config.py"
    )


@needs_gpu_config
def test_the_sync_script_agrees() -> None:
    result = subprocess.run(
        [sys.executable, "k8s/sync_serve_config.py", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_serve_config_v2_passes_the_strict_config_checker() -> None:
    assert config_check.problems(serve_config()) == []


def test_the_head_advertises_no_cpus_or_gpus_and_asks_for_no_gpu() -> None:
    params = cluster()["headGroupSpec"]["rayStartParams"]
    assert params["num-cpus"] == "0"
    assert params.get("num-gpus", "0") == "0"
    for container in head_pod()["containers"]:
        for section in ("requests", "limits"):
            assert "nvidia.com/gpu" not in container["resources"].get(section, {})


def test_no_replica_fits_on_the_head() -> None:
    """With num-cpus 0 on the head, a replica lands there only if it asks for nothing."""
    for name, deployment in deployments().items():
        options = deployment.get("ray_actor_options", {})
        assert options.get("num_cpus", 1) > 0 or options.get("num_gpus", 0) > 0, name


def test_the_gpu_group_has_one_gpu_per_pod_and_enough_pods_for_every_generator() -> None:
    group = gpu_group()
    (container,) = group["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    generator = deployments()["Generator"]
    assert generator["ray_actor_options"]["num_gpus"] == 1
    max_generators = generator.get("autoscaling_config", {}).get("max_replicas", generator.get("num_replicas", 1))
    assert group["maxReplicas"] >= max_generators
    assert group["minReplicas"] >= 1


def test_every_container_requests_cpu_and_memory_within_its_limits() -> None:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "m": 1e-3, "": 1}

    def quantity(value: object) -> float:
        number, unit = re.fullmatch(r"([\d.]+)([A-Za-z]*)", str(value)).groups()
        return float(number) * units[unit]

    for container in all_containers():
        resources = container["resources"]
        for key in ("cpu", "memory"):
            assert quantity(resources["requests"][key]) <= quantity(resources["limits"][key]), container["name"]


def test_head_and_workers_have_readiness_and_liveness_probes() -> None:
    pods = [head_pod()] + [g["template"]["spec"] for g in cluster()["workerGroupSpecs"]]
    for pod in pods:
        for container in pod["containers"]:
            assert "readinessProbe" in container and "livenessProbe" in container, container["name"]
    (worker,) = gpu_group()["template"]["spec"]["containers"]
    assert worker["readinessProbe"]["httpGet"]["path"] == "/-/healthz"


def test_the_serve_proxy_listens_on_all_interfaces() -> None:
    http = serve_config()["http_options"]
    assert http.get("host", "0.0.0.0") == "0.0.0.0" and http.get("port", 8000) == 8000
    serve_ports = {p["containerPort"] for c in all_containers() for p in c.get("ports", []) if p["name"] == "serve"}
    assert serve_ports == {8000}


def test_the_index_path_in_the_config_lies_on_the_volume_the_init_container_fills() -> None:
    pod = gpu_group()["template"]["spec"]
    (worker,) = pod["containers"]
    (app,) = serve_config()["applications"]
    db = posixpath.join(worker["workingDir"], app["args"]["db"])
    mounts = {m["mountPath"]: m["name"] for m in worker["volumeMounts"]}
    (volume,) = [name for path, name in mounts.items() if db.startswith(path.rstrip("/") + "/")]
    (init,) = pod["initContainers"]
    assert any(m["name"] == volume and not m.get("readOnly") for m in init["volumeMounts"])
    assert db in " ".join(init["command"])


def test_every_claim_is_defined_in_the_file() -> None:
    claims = {d["metadata"]["name"] for d in documents() if d["kind"] == "PersistentVolumeClaim"}
    pods = [head_pod()] + [g["template"]["spec"] for g in cluster()["workerGroupSpecs"]]
    used = {v["persistentVolumeClaim"]["claimName"] for pod in pods for v in pod.get("volumes", [])
            if "persistentVolumeClaim" in v}
    assert used and used <= claims


def test_one_image_everywhere_and_ray_version_matches_the_pinned_ray() -> None:
    assert len({c["image"] for c in all_containers()}) == 1
    pinned = re.search(r"^ray\[serve\]==(\S+)$", (REPO / "requirements" / "base.txt").read_text(), re.M).group(1)
    assert cluster()["rayVersion"] == pinned


def test_the_sync_script_replaces_only_the_block() -> None:
    sys.path.insert(0, str(REPO / "k8s"))
    try:
        from sync_serve_config import synced
    finally:
        sys.path.pop(0)
    manifest = "spec:\n  serveConfigV2: |\n    old: 1\n\n    older: 2\n  rayClusterConfig:\n    x: 1\n"
    assert synced(manifest, "a: 1\n\nb: [2]\n") == (
        "spec:\n  serveConfigV2: |\n    a: 1\n\n    b: [2]\n  rayClusterConfig:\n    x: 1\n"
    )


# ---------------------------------------------------------------- k8s/rayjob-ingest.yaml (issue 14.3)

INGEST_MANIFEST = REPO / "k8s" / "rayjob-ingest.yaml"


def ingest_documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(INGEST_MANIFEST.read_text()) if d]


def rayjob() -> dict[str, Any]:
    (job,) = [d for d in ingest_documents() if d["kind"] == "RayJob"]
    return job


def job_pods() -> list[dict[str, Any]]:
    spec = rayjob()["spec"]["rayClusterSpec"]
    return [spec["headGroupSpec"]["template"]["spec"]] + [g["template"]["spec"] for g in spec["workerGroupSpecs"]]


def job_script() -> str:
    import shlex

    command = shlex.split(rayjob()["spec"]["entrypoint"])
    assert command[:2] == ["bash", "-c"] and len(command) == 3
    return command[2]


def ingest_command() -> list[str]:
    import shlex

    (line,) = [line.strip() for line in job_script().splitlines() if line.strip().startswith("docindex ingest")]
    return shlex.split(line.split("||")[0])


def mounts(pod: dict[str, Any]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """mountPath → (volumeMount, volume) for the pod's one container."""
    (container,) = pod["containers"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    return {m["mountPath"]: (m, volumes[m["name"]]) for m in container["volumeMounts"]}


def volume_at(pod: dict[str, Any], path: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The mount holding `path`: (path relative to the mount, volumeMount, volume)."""
    ((root, (mount, volume)),) = [(root, mv) for root, mv in mounts(pod).items()
                                  if path.startswith(root.rstrip("/") + "/")]
    return posixpath.relpath(path, root), mount, volume


def test_the_ingest_job_is_a_ray_io_v1_rayjob_on_the_pinned_ray() -> None:
    job = rayjob()
    assert job["apiVersion"] == "ray.io/v1"
    pinned = re.search(r"^ray\[serve\]==(\S+)$", (REPO / "requirements" / "base.txt").read_text(), re.M).group(1)
    assert job["spec"]["rayClusterSpec"]["rayVersion"] == pinned
    assert job["spec"]["shutdownAfterJobFinishes"] is True


def test_the_entrypoint_is_valid_bash_and_its_ingest_command_parses_with_the_real_cli() -> None:
    from docindex.cli import ingest

    assert subprocess.run(["bash", "-n", "-c", job_script()], capture_output=True).returncode == 0
    args = ingest_command()
    assert args[:2] == ["docindex", "ingest"]
    params = ingest.make_context("ingest", args[2:]).params     # an unknown option or bad value raises here
    assert params["ray_address"] == "auto" and params["collection"] == "askdocs"


def test_the_head_runs_only_the_driver_and_the_workers_ask_for_cpus_within_limits() -> None:
    spec = rayjob()["spec"]["rayClusterSpec"]
    assert spec["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    for group in spec["workerGroupSpecs"]:
        (container,) = group["template"]["spec"]["containers"]
        assert container["resources"]["requests"]["cpu"] == container["resources"]["limits"]["cpu"]
        assert float(container["resources"]["limits"]["cpu"]) >= 1
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
    assert len({c["image"] for pod in job_pods() for c in pod["containers"]}) == 1


def test_the_documents_are_mounted_read_only_at_the_same_path_on_every_pod() -> None:
    """Workers open the files at the paths the driver discovered (docindex/ingest_ray.py)."""
    paths = [a for a in ingest_command()[2:] if a.startswith("/") and not a.endswith(".db")]
    assert paths
    claims = set()
    for pod in job_pods():
        for path in paths:
            _, mount, volume = volume_at(pod, path.rstrip("/") + "/x")
            assert mount.get("readOnly") is True
            claims.add(volume["persistentVolumeClaim"]["claimName"])
    assert len(claims) == 1
    defined = {d["metadata"]["name"] for d in ingest_documents() if d["kind"] == "PersistentVolumeClaim"}
    assert claims <= defined


def test_the_index_is_written_on_local_disk_and_published_to_the_file_the_rayservice_copies() -> None:
    head = job_pods()[0]
    args = ingest_command()
    db = args[args.index("--db") + 1]
    _, _, scratch = volume_at(head, db)
    assert "emptyDir" in scratch                      # SQLite is never written on the network file system
    (publish,) = [c for c in copy_commands(job_script()) if c[-2] == db]
    published = publish[-1]
    relative, mount, volume = volume_at(head, published)
    assert not mount.get("readOnly")
    (init,) = gpu_group()["template"]["spec"]["initContainers"]
    source = init["command"][-2]
    service_relative, _, service_volume = volume_at(
        {"containers": [init], "volumes": gpu_group()["template"]["spec"]["volumes"]}, source)
    assert relative == service_relative
    assert volume["persistentVolumeClaim"]["claimName"] == service_volume["persistentVolumeClaim"]["claimName"]


def test_the_image_the_job_runs_installs_the_ray_ingest_extra() -> None:
    build_stage = (REPO / "Dockerfile").read_text().split("AS cpu")[0]
    assert "-r requirements/ray-ingest.txt" in build_stage


# ---------------------------------------------------------------- the search files travel with the index (issue 14)

COPY = ["python", "-m", "docindex.index_copy"]


def copy_commands(script: str) -> list[list[str]]:
    """Every `python -m docindex.index_copy …` line of a bash script, split."""
    import shlex

    found = []
    for line in script.splitlines():
        at = line.find(" ".join(COPY))
        if at >= 0:
            found.append(shlex.split(line[at:].split(";")[0]))
    return found


def on_disk(pod: dict[str, Any], container: dict[str, Any], path: str, root: Path) -> Path:
    """Where `path` of this container lies in the test's stand-in volumes: one folder per claim (shared by
    every pod that mounts it) or per pod-local volume (pod["name"] set by the test)."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    ((mount_path, name),) = [(m["mountPath"], m["name"]) for m in container["volumeMounts"]
                             if path.startswith(m["mountPath"].rstrip("/") + "/")]
    volume = volumes[name]
    key = volume["persistentVolumeClaim"]["claimName"] if "persistentVolumeClaim" in volume else \
        f"{pod['name']}-{name}"
    return root / key / posixpath.relpath(path, mount_path)


def run_copy(command: list[str], pod: dict[str, Any], container: dict[str, Any], root: Path) -> None:
    assert command[:3] == COPY
    args = [a if a.startswith("-") else str(on_disk(pod, container, a, root)) for a in command[3:]]
    result = subprocess.run([sys.executable, "-m", "docindex.index_copy", *args], cwd=REPO, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr


def test_the_copy_steps_carry_the_search_files_from_the_ingest_to_the_served_copy(tmp_path, monkeypatch):
    """The RayJob's publish, then a RayService worker's copy-index, run as written (paths mapped onto
    folders standing in for the volumes) on an index with search files: the served copy uses them."""
    from docindex import ann, ann_sidecar
    from docindex.index import Index
    from docindex.ingest import ingest
    from tests.docindex.fakes import HashEmbedder

    monkeypatch.setenv(ann.MIN_CHUNKS_ENV, "20")
    head = {**job_pods()[0], "name": "job-head"}
    (head_container,) = head["containers"]
    args = ingest_command()
    built = on_disk(head, head_container, args[args.index("--db") + 1], tmp_path)
    built.parent.mkdir(parents=True)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(10):
        (docs / f"f{i}.md").write_text(f"# File {i}\n\n" + "".join(f"## Part {p}\n\nreplica part {p} of {i}. Each part says enough about itself, in a sentence of its own, to stand alone as a chunk.\n\n"
                                                                   for p in range(3)))
    embedder = HashEmbedder()
    ingest([docs], built, "askdocs", embedder=embedder)
    (pull, publish) = copy_commands(job_script())      # the previous index in, the new one out
    assert "--immutable" in pull and "--immutable" not in publish   # the claim's file is only ever renamed
    run_copy(publish, head, head_container, tmp_path)

    pod = {**gpu_group()["template"]["spec"], "name": "gpu-worker"}
    (init,) = pod["initContainers"]
    assert init["command"][:3] == COPY and "--immutable" in init["command"]
    run_copy(init["command"], pod, init, tmp_path)
    (app,) = serve_config()["applications"]
    (worker,) = pod["containers"]
    served = on_disk(pod, worker, posixpath.join(worker["workingDir"], app["args"]["db"]), tmp_path)
    assert served.is_file() and ann_sidecar.folder(served).is_dir()
    with Index(served, embedder=embedder) as index:
        assert index._snapshot is not None and set(index._snapshot.anns) == {"askdocs"}
