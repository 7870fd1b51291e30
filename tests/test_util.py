"""The leaf helpers of trio_mcp._util."""

from __future__ import annotations

import pytest
import trio

from trio_mcp._util import covers, unwrap_group, unwrapping


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
