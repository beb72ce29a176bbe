"""Offline check of a Serve config file, strict where Serve is lenient.

`ServeDeploySchema.model_validate` accepts misspelled keys at every level
and does not range-check `autoscaling_config` (seen with Ray 2.60), so a
typo like `max_queued_request` silently falls back to a default. This module
walks every key against the schema model that will read it, builds
`AutoscalingConfig(**d)` for its range checks, validates askdocs' own `args`
with the Settings class, and checks askdocs' deployment policy (back-pressure
everywhere, small CPU reservations, a slot-matched Generator).

Reusable for any askdocs Serve config (CPU default, GPU variants, the
KubeRay manifest's serveConfigV2): `problems(data)` returns readable lines,
empty when the config is sound.
"""
from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from ray.serve.config import AutoscalingConfig
from ray.serve.schema import ServeDeploySchema

from deployments.engines.options import validate_engine_options

ASKDOCS_IMPORT_PATH = "serve_app.app:build_app"
ASKDOCS_DEPLOYMENTS = ("Ingress", "Retriever", "Gate", "Generator", "CitationChecker")
MAX_CPUS_PER_REPLICA = 0.5   # 5 deployments on 2 cores: 1 CPU each makes serve.run hang unscheduled
# Fields Serve types as a bare dict (or dict | model): the model that really reads them.
DICT_FIELD_MODELS: dict[str, type[BaseModel]] = {"autoscaling_config": AutoscalingConfig}
FREE_FORM = {"args", "runtime_env", "user_config", "resources", "label_selector", "env_vars"}


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _is_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return origin in (list, list) or any(_is_list(a) for a in typing.get_args(annotation)
                                                if typing.get_origin(annotation) is typing.Union)


def unknown_keys(model: type[BaseModel], data: Any, path: str = "") -> list[str]:
    """Every key in `data` that `model` (recursively) does not define."""
    if not isinstance(data, dict):
        return []
    found: list[str] = []
    known = {name: f for name, f in model.model_fields.items()}
    known.update({f.alias: f for f in model.model_fields.values() if f.alias})
    for key, value in data.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in known:
            found.append(f"{where}: unknown key for {model.__name__} (Serve would silently ignore it)")
            continue
        if key in FREE_FORM:
            continue
        models = [DICT_FIELD_MODELS[key]] if key in DICT_FIELD_MODELS else _models_in(known[key].annotation)
        if len(models) != 1:
            continue
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            sub = f"{where}[{i}]" if isinstance(value, list) else where
            found += unknown_keys(models[0], item, sub)
    return found


def _policy(app: dict[str, Any], index: int) -> list[str]:
    """askdocs' own rules for its application."""
    found: list[str] = []
    where = f"applications[{index}]"
    deployments = {d.get("name"): d for d in app.get("deployments") or []}
    for name in deployments:
        if name not in ASKDOCS_DEPLOYMENTS:
            found.append(f"{where}.deployments: {name!r} is not an askdocs deployment "
                         f"({', '.join(ASKDOCS_DEPLOYMENTS)})")
    for name in ASKDOCS_DEPLOYMENTS:
        d = deployments.get(name)
        if d is None:
            found.append(f"{where}.deployments: {name} missing (its limits would be Serve's defaults)")
            continue
        for key in ("max_ongoing_requests", "max_queued_requests", "backpressure_config", "ray_actor_options"):
            if key not in d:
                found.append(f"{where}.{name}: {key} missing")
        bp = d.get("backpressure_config") or {}
        if bp and (bp.get("status_code") != 503 or not bp.get("retry_after_s")):
            found.append(f"{where}.{name}.backpressure_config: want status_code 503 and a retry_after_s")
        cpus = (d.get("ray_actor_options") or {}).get("num_cpus")
        if cpus is None or cpus > MAX_CPUS_PER_REPLICA:
            found.append(f"{where}.{name}.ray_actor_options.num_cpus: set it to at most {MAX_CPUS_PER_REPLICA} "
                         "(1 CPU per replica leaves 5 deployments unscheduled on 2 cores)")
        if d.get("autoscaling_config") is not None:
            try:
                AutoscalingConfig(**d["autoscaling_config"])
            except (ValidationError, TypeError, ValueError) as e:
                found.append(f"{where}.{name}.autoscaling_config: {e}".splitlines()[0])
    try:
        from serve_app.app import load_settings
        settings = load_settings(app.get("args") or {})
    except Exception as e:  # ConfigError with a readable message
        found.append(f"{where}.args: {e}")
        return found
    try:
        validate_engine_options(settings.engine, settings.engine_options)
    except Exception as e:  # ConfigError: unknown engine or options, one readable line
        found.append(f"{where}.args: {e}")
    gen = deployments.get("Generator") or {}
    if "max_ongoing_requests" in gen and gen["max_ongoing_requests"] != settings.engine_slots:
        found.append(f"{where}.Generator.max_ongoing_requests is {gen['max_ongoing_requests']} but args.engine_slots "
                     f"is {settings.engine_slots}: they must be equal (slot matching)")
    return found


def problems(data: Any) -> list[str]:
    """Readable problems with a Serve config (already parsed YAML); [] when sound."""
    if not isinstance(data, dict):
        return ["the config is not a YAML mapping"]
    try:
        ServeDeploySchema.model_validate(data)
    except ValidationError as e:
        return [f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors(include_url=False)]
    found = unknown_keys(ServeDeploySchema, data)
    for i, app in enumerate(data.get("applications") or []):
        if app.get("import_path") == ASKDOCS_IMPORT_PATH:
            found += _policy(app, i)
    return found


def check_file(path: str | Path) -> list[str]:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        return [f"{path}: cannot read YAML ({e})".splitlines()[0]]
    return problems(data)
