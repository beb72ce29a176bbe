"""Model resolution: the default GGUF, paths, and served names."""

import pytest

from deployments.engines.models import ModelKind, default_gguf, resolve_model
from deployments.errors import ConfigError


def test_default_model_is_the_smollm2_gguf_shipped_by_its_package():
    path = default_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000


@pytest.mark.parametrize("spec", [None, "", "default", "  "])
def test_empty_or_default_spec_resolves_to_the_default_gguf(spec):
    ref = resolve_model(spec)
    assert ref.kind is ModelKind.GGUF
    assert ref.path == default_gguf()


def test_missing_gguf_file_is_a_config_error_naming_the_fix(tmp_path):
    with pytest.raises(ConfigError, match="ASKDOCS_MODEL"):
        resolve_model(str(tmp_path / "nope.gguf"))


def test_hf_folder_needs_a_config_json(tmp_path):
    with pytest.raises(ConfigError, match="config.json"):
        resolve_model(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    ref = resolve_model(str(tmp_path))
    assert ref.kind is ModelKind.HF_FOLDER and ref.path == tmp_path.resolve()


def test_missing_path_is_a_config_error_not_a_served_name(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        resolve_model(str(tmp_path / "missing-folder"))


def test_other_strings_are_served_model_names():
    ref = resolve_model("Qwen/Qwen2.5-7B-Instruct")
    assert ref.kind is ModelKind.SERVED_NAME and ref.location == "Qwen/Qwen2.5-7B-Instruct"
