"""Package names bound on first use (PEP 562).

Every ``intima`` command imports ``intima`` and the packages its options name; a package
``__init__`` that imported all it re-exports pulled numpy, httpx and tenacity into commands that
never use them (``intima`` itself, ``intima.converse``). Such a package lists its public names
here instead, and ``TYPE_CHECKING`` imports keep them visible to mypy and editors.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the package whose ``globals()`` is ``namespace``;
    ``exports`` maps each public name to ``"module"`` (same name there) or ``"module:attr"``."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        value = getattr(import_module(module), attr or name)
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        # The public names and the module's dunders, not its helpers (TYPE_CHECKING,
        # annotations, lazy_exports), which a user exploring with dir() would take for API.
        dunders = (n for n in namespace if n.startswith("__") and n.endswith("__"))
        return sorted({*exports, *namespace.get("__all__", ()), *dunders})

    return __getattr__, __dir__
