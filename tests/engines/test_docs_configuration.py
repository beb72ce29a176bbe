"""docs/configuration.md lists every setting with its real default."""
import re
from pathlib import Path

from serve_app.settings import Settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
ROW = re.compile(r"^\| `(\w+)` \| `([^`]*)` \|", re.M)


def documented() -> dict[str, str]:
    return dict(ROW.findall(DOC.read_text()))


def test_every_setting_is_documented_and_nothing_else():
    assert set(documented()) == set(Settings.model_fields)


def test_documented_defaults_are_the_real_ones():
    for name, field in Settings.model_fields.items():
        default = field.default_factory() if field.default_factory else field.default
        assert documented()[name] == repr(default), name
