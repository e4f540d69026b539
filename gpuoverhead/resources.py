"""Where the shipped shaders and suites are.

In an installed wheel they sit inside the package (see pyproject's force-include); in a
source checkout (editable install, or `python -m gpuoverhead` from the repository) they are
the top-level `shaders/` and `configs/` folders.
"""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    inside = _PACKAGE / name
    return inside if inside.is_dir() else _PACKAGE.parent / name


SHADERS_DIR = _data_dir("shaders")
CONFIGS_DIR = _data_dir("configs")
DEFAULT_SUITE = CONFIGS_DIR / "default.yaml"


def suite_path(value: Path) -> Path:
    """A suite given by its path, or by the name of a shipped one (`full`: configs/full.yaml;
    `decode-1.5b`, whose dot is not a suffix: configs/decode-1.5b.yaml)."""
    shipped = CONFIGS_DIR / f"{value}.yaml"
    if not value.exists() and value.suffix not in (".yaml", ".yml") and len(value.parts) == 1 \
            and shipped.is_file():
        return shipped
    return value
