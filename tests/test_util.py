"""The leaf helpers of trio_mcp._util."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from trio_mcp import Server
from trio_mcp._util import Flag, Shared, covers, unwrap_group, unwrapping


async def test_unwrapping_gives_back_the_one_error_with_its_own_cause() -> None:
    cause = OSError("the pipe broke")
    with pytest.raises(RuntimeError) as raised:
        async with unwrapping(), trio.open_nursery():
            raise RuntimeError("the session ended") from cause
    assert raised.value.__cause__ is cause
    assert raised.value.__suppress_context__  # the group is not shown as context


async def test_unwrapping_keeps_a_group_of_several_errors() -> None:
    async def fail(error: Exception) -> None:
        raise error

    async def both() -> None:
        async with unwrapping(), trio.open_nursery() as nursery:
            nursery.start_soon(fail, ValueError("one"))
            nursery.start_soon(fail, KeyError("two"))

    with pytest.raises(BaseExceptionGroup) as raised:
        await both()
    assert sorted(type(e).__name__ for e in raised.value.exceptions) == ["KeyError", "ValueError"]


def test_unwrap_group_finds_the_one_leaf_of_nested_groups() -> None:
    error = ValueError("real")
    nested = BaseExceptionGroup("outer", [BaseExceptionGroup("inner", [error])])
    assert unwrap_group(nested) is error
    several = BaseExceptionGroup("g", [ValueError("a"), KeyError("b")])
    assert unwrap_group(several) is several


def test_covers_is_the_uri_or_below_it() -> None:
    assert covers("file:///a", "file:///a")
    assert covers("file:///a", "file:///a/b")
    assert covers("file:///a/", "file:///a/b")
    assert not covers("file:///a", "file:///ab")


async def test_a_flag_wakes_every_waiter_once_set_and_then_returns_at_once() -> None:
    flag = Flag()
    woken: list[int] = []

    async def waiter(n: int) -> None:
        await flag.wait()
        woken.append(n)

    assert not flag.is_set()
    async with trio.open_nursery() as nursery:
        for n in range(3):
            nursery.start_soon(waiter, n)
        await trio.testing.wait_all_tasks_blocked()
        assert woken == []
        flag.set()
        flag.set()  # idempotent
    assert sorted(woken) == [0, 1, 2]
    assert flag.is_set()
    # Already set: a checkpoint, then back (a cancelled caller sees Cancelled).
    await flag.wait()
    with trio.CancelScope() as scope:
        scope.cancel()
        await flag.wait()
    assert scope.cancelled_caught


async def test_a_flag_nobody_waited_for_never_makes_an_event() -> None:
    flag = Flag()
    flag.set()
    await flag.wait()
    assert flag._event is None  # the saving this type exists for


def test_shared_hands_out_the_last_equal_value_and_replaces_a_different_one() -> None:
    shared: Shared[dict[str, Any]] = Shared()
    first = {"tools": {"listChanged": True}}
    assert shared(first) is first
    again = {"tools": {"listChanged": True}}
    assert shared(again) is first  # equal: the copy is dropped
    other: dict[str, Any] = {"tools": {}}
    assert shared(other) is other  # different: the new one from now on
    assert shared({"tools": {}}) is other
    assert first == {"tools": {"listChanged": True}}  # nothing was changed


def test_sessions_of_a_server_share_its_capabilities_until_the_registry_changes() -> None:
    server = Server("s", "1.0")
    one, two = server.make_protocol(), server.make_protocol()
    assert one.local_capabilities is two.local_capabilities
    assert one.local_info is two.local_info
    assert one.modern_capabilities is two.modern_capabilities
    assert "tools" not in one.local_capabilities

    @server.tool()
    async def echo(text: str) -> str:
        return text

    three = server.make_protocol()
    # A session started after the change declares tools; the earlier ones
    # keep what they were started with (their capabilities are fixed).
    assert "tools" in three.local_capabilities
    assert "tools" not in one.local_capabilities
    assert three.local_info is one.local_info
