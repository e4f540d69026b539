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
