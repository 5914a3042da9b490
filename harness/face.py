"""Package faces: each sub-package's ``__init__`` names what other packages use from it.

A face is lazy. A name is imported from its module the first time it is read, so importing one
module of a package (``harness.selfscore.prompts``) never imports the rest of the package, and a
face adds no import cycle. ``tests/test_architecture.py`` checks that every name one package
imports from another is on that package's face, and that every name on a face resolves.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def lazy_face(package: str, names: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of a package face.

    Args:
        package: the package's ``__name__``.
        names: each public name -> the module of the package that defines it (relative name,
            e.g. ``"judges"``).

    Returns:
        ``(__getattr__, __dir__)``: the first imports a face name from its module on first use
        and raises AttributeError for any other name (so ``from package import submodule``
        still imports the submodule); the second lists the face's names.
    """
    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__
