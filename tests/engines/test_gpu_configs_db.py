"""The GPU Serve configs' index (issue 18 leftover: they read var/askdocs.db,
which `make index` does not build). Their `db` is the image's path, the one
the Dockerfile and KubeRay's copy-index put the index at; their header says
how to serve var/demo.db from a checkout; they pass `askdocs check-config`."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def args_of(text: str) -> dict:
    (app,) = yaml.safe_load(text)["applications"]
    return app["args"]


@pytest.mark.parametrize("name", ["serve_config.gpu.yaml", "serve_config.rocm.yaml"])
def test_gpu_config_db_is_where_the_image_keeps_the_index(name: str) -> None:
    text = (ROOT / name).read_text()
    assert args_of(text)["db"] == "var/askdocs.db"
    assert "mv var/demo.db var/askdocs.db" in (ROOT / "Dockerfile").read_text()
    # KubeRay's copy-index init container publishes the user's index there (docindex/index_copy.py)
    assert "docindex.index_copy, --immutable, /index/askdocs.db, /app/var/askdocs.db]" in \
        (ROOT / "k8s/rayservice.yaml").read_text()
    assert f"`askdocs launch {name} --db var/demo.db` after `make index`" in re.sub(r"\n\s*# ", " ", text)


@pytest.mark.parametrize("name", ["serve_config.gpu.yaml", "serve_config.rocm.yaml"])
def test_gpu_config_passes_check_config(name: str) -> None:
    check = subprocess.run([sys.executable, "-m", "serve_app.cli", "check-config", name], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
