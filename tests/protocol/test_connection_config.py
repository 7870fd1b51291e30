"""A ``Connection`` is configured at construction, and only then.

Its configuration (capabilities, info, versions, the discover capabilities,
the clock, the observer, the progress interval, the frame bound) is given to
the constructor and read back through read-only attributes (properties):
nothing outside the class can change it after, and mypy refuses a writer.
"""

from __future__ import annotations

from typing import Any

import pytest

from trio_mcp.protocol import (
    DEFAULT_MAX_MESSAGE_SIZE,
    Connection,
    NullObserver,
    Role,
    handshake_versions,
    modern_versions,
)
from trio_mcp.testing import FakeClock, RecordingObserver

#: Each configuration attribute, with a value of its type to try to assign.
CONFIGURATION: list[tuple[str, Any]] = [
    ("role", Role.CLIENT),
    ("local_capabilities", {"tools": {}}),
    ("local_info", {"name": "other", "version": "2"}),
    ("modern_capabilities", {}),
    ("supported_versions", ("2025-11-25",)),
    ("handshake_versions", ("2025-11-25",)),
    ("modern_versions", ()),
    ("clock", FakeClock()),
    ("observer", RecordingObserver()),
    ("observing", True),
    ("progress_interval", 5.0),
    ("max_message_size", 10),
]


@pytest.mark.parametrize(("name", "value"), CONFIGURATION, ids=[name for name, _ in CONFIGURATION])
def test_configuration_cannot_be_assigned_after_construction(name: str, value: Any) -> None:
    connection = Connection(Role.SERVER)
    before = getattr(connection, name)
    with pytest.raises(AttributeError):
        setattr(connection, name, value)
    assert getattr(connection, name) is before


def test_the_constructor_is_where_the_configuration_comes_from() -> None:
    capabilities = {"tools": {"listChanged": True}}
    info = {"name": "s", "version": "1"}
    discover: dict[str, Any] = {"tools": {}, "extensions": {}}
    clock = FakeClock()
    observer = RecordingObserver()
    connection = Connection(
        Role.SERVER,
        capabilities=capabilities,
        info=info,
        supported_versions=("2026-07-28", "2025-06-18"),
        modern_capabilities=discover,
        clock=clock,
        observer=observer,
        progress_interval=0.5,
        max_message_size=4096,
    )
    assert connection.role is Role.SERVER
    # Kept as given, never copied: a server's sessions share one object.
    assert connection.local_capabilities is capabilities
    assert connection.local_info is info
    assert connection.modern_capabilities is discover
    assert connection.supported_versions == ("2026-07-28", "2025-06-18")
    assert connection.handshake_versions == ("2025-06-18",)
    assert connection.modern_versions == ("2026-07-28",)
    assert connection.clock is clock
    assert connection.observer is observer
    assert connection.observing is True
    assert connection.progress_interval == 0.5
    assert connection.max_message_size == 4096


def test_the_defaults() -> None:
    connection = Connection(Role.CLIENT)
    assert connection.local_capabilities == {}
    assert connection.local_info == {"name": "trio_mcp", "version": "0"}
    assert connection.modern_capabilities is None
    assert connection.handshake_versions == handshake_versions(connection.supported_versions)
    assert connection.modern_versions == modern_versions(connection.supported_versions)
    # Nobody observes: snapshots are not built at all.
    assert isinstance(connection.observer, NullObserver)
    assert connection.observing is False
    assert connection.progress_interval == 0
    assert connection.max_message_size == DEFAULT_MAX_MESSAGE_SIZE


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"supported_versions": ("1999-01-01",)}, "unknown protocol revisions"),
        ({"progress_interval": -1.0}, "progress_interval"),
        ({"progress_interval": float("nan")}, "progress_interval"),
    ],
)
def test_bad_configuration_is_refused_at_construction(options: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Connection(Role.SERVER, **options)


def test_the_negotiated_state_is_read_only_too() -> None:
    connection = Connection(Role.SERVER)
    for name in ("peer_capabilities", "peer_info", "peer_instructions", "state"):
        with pytest.raises(AttributeError):
            setattr(connection, name, None)
