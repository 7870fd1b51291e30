"""Names a package exports but imports only on first use (PEP 562).

``trio_mcp``, ``trio_mcp.types`` and ``trio_mcp.transports`` each export
names whose modules most programs never need (the HTTP stack, the sampling or
task types): importing them eagerly was tens of milliseconds of every
start-up. Each such package keeps a table of name -> module and
gets its ``__getattr__`` and ``__dir__`` from :func:`lazy_exports`; type
checkers see the names through ``if TYPE_CHECKING:`` imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_exports(
    package: str, namespace: MutableMapping[str, Any], table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of *package*.

    A name of *table* is imported from its module (relative to *package*) on
    first access and put in *namespace* (the package's ``globals()``), so
    later lookups skip ``__getattr__``; any other name is an AttributeError.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *table])

    return __getattr__, __dir__
