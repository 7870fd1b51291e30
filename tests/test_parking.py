"""trio_mcp._parking.Parking: the one park/wake primitive, and its cancellation rule."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from outcome import Error, Outcome, Value

from trio_mcp._parking import Parking


def _parked(spot: Parking) -> bool:
    """Read apart, so that the type checker does not keep an earlier reading."""
    return spot.parked


async def test_a_parked_task_gets_the_outcome_it_is_woken_with() -> None:
    spot = Parking()
    got: list[Outcome[Any]] = []

    async def waiter() -> None:
        await spot.park()
        assert spot.outcome is not None
        got.append(spot.outcome)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        assert spot.parked
        assert spot.wake(Value("frame"))
        assert not _parked(spot)
    assert got == [Value("frame")]


async def test_an_error_outcome_is_handed_over_not_raised() -> None:
    spot = Parking()
    error = Error(KeyError("x"))
    assert spot.wake(error)
    await spot.park()
    assert spot.outcome is error


async def test_woken_before_parking_returns_at_once_as_a_checkpoint() -> None:
    spot = Parking()
    assert spot.wake()
    with trio.testing.assert_checkpoints():
        await spot.park()
    assert spot.outcome == Value(None)


async def test_the_first_wake_wins() -> None:
    spot = Parking()
    assert spot.wake(Value(1))
    assert not spot.wake(Value(2))
    assert spot.outcome == Value(1)


async def test_woken_before_parking_a_cancelled_scope_still_raises() -> None:
    spot = Parking()
    spot.wake(Value(1))
    with trio.CancelScope() as scope:
        scope.cancel()
        await spot.park()
    assert scope.cancelled_caught
    assert spot.outcome == Value(1)  # left recorded


async def test_cancelled_while_parked_forgets_the_task_before_anyone_runs() -> None:
    spot = Parking()
    seen: list[bool] = []

    async def waiter(scope: trio.CancelScope) -> None:
        with scope:
            await spot.park(on_cancel=lambda: seen.append(spot.parked))

    scope = trio.CancelScope()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter, scope)
        await trio.testing.wait_all_tasks_blocked()
        scope.cancel()
        # Synchronous: the task is forgotten and on_cancel has run, though the
        # cancelled task has not run yet.
        assert not spot.parked
        assert seen == [False]
        # A late wake records its outcome but wakes nobody (no double reschedule).
        assert spot.wake(Value("late"))
    assert scope.cancelled_caught
    assert spot.outcome == Value("late")


async def test_a_second_task_cannot_park_on_an_occupied_spot() -> None:
    spot = Parking()

    async def waiter() -> None:
        await spot.park()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(RuntimeError, match="already parked"):
            await spot.park()
        spot.wake()


async def test_park_without_a_wake_blocks(autojump_clock: trio.testing.MockClock) -> None:
    spot = Parking()
    with trio.move_on_after(1) as scope:
        await spot.park()
    assert scope.cancelled_caught
    assert spot.outcome is None
