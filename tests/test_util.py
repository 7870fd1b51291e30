"""The leaf helpers of trio_mcp._util."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from trio_mcp._util import Flag, covers, unwrap_group, unwrapping


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
