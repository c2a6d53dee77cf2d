"""Lazy package exports: ``from dpcloak.privacy import X`` imports only the submodule that defines ``X``.

A package lists its public names with the module that defines each; attribute access imports that module
on first use (PEP 562). Type checkers see the same names through ``if TYPE_CHECKING:`` imports in the package.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports", "is_instance"]


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose public name ``name`` lives in module ``exports[name]``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}") is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            return importlib.import_module(f"{package}.{name}")  # a submodule, as an eager package had loaded it
        value = getattr(importlib.import_module(module), name)
        setattr(importlib.import_module(package), name, value)  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*exports, *vars(importlib.import_module(package))})

    return __getattr__, __dir__


def is_instance(obj: object, module: str, name: str) -> bool:
    """``isinstance(obj, module.name)`` without importing ``module``: no instance exists before its class is loaded."""
    import sys

    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(obj, getattr(loaded, name))
