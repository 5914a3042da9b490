"""What the wheel ships: every Python package of the repository is listed in pyproject.toml."""
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_in_pyproject():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for top in ("harness", "graphs", "store", "ui")
             for p in (REPO / top).rglob("__init__.py") if "data" not in p.parts}
    assert found - listed == set(), f"add these to [tool.setuptools] packages: {sorted(found - listed)}"
    assert listed - found == set(), f"listed but not packages: {sorted(listed - found)}"
