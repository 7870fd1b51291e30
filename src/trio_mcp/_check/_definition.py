"""A check: a small frozen object with an async ``run``.

It has an id (``area.name``), a title, the spec rows it tests, the eras and
transports it applies to, and whether it needs a connection of its own. Its
``run`` gets a :class:`~._probe.Probe` and returns a one-line detail on
success; it raises :class:`~._model.CheckFailed` or
:class:`~._model.CheckSkipped` otherwise.

Spec: none by itself (the rows are named by each check).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

from ._model import BOTH_ERAS, BOTH_TRANSPORTS
from ._probe import Probe


@attrs.frozen
class Check:
    """One rule held against the server under test."""

    id: str
    title: str
    rows: tuple[str, ...]
    run: Callable[[Probe], Awaitable[str]]
    eras: frozenset[str] = BOTH_ERAS
    transports: frozenset[str] = BOTH_TRANSPORTS
    #: Needs a connection (a process, over stdio) of its own rather than the
    #: era's shared one: it tests the opening, or ends the connection.
    fresh: bool = False
    #: Runs after every other check of its era (it reads what they recorded).
    last: bool = False
