"""``_FastEnum``: the base of the protocol's enums, hashed by identity.

Enum members are singletons compared by identity, but :class:`enum.Enum` hashes
a member by its name, in Python code. The protocol's enums key the state tables
and the per-message caches, so they hash by identity instead (the C-level
``object.__hash__``), which agrees with their identity equality.
"""

from __future__ import annotations

import enum


class _FastEnum(enum.Enum):
    """An :class:`enum.Enum` whose members hash by identity."""

    __hash__ = object.__hash__
