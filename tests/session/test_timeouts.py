"""Request timeouts through the real engine, on the autojump clock (exact times).

The session gives every outbound request two limits (TO-01, TO-03): an idle
timeout (``progress_idle_timeout``, default 60 s) that each progress
notification restarts (TO-04), and a hard cap (``max_duration``, default 600 s)
that progress never extends (TO-05). Either raises
:class:`trio_mcp.RequestTimeout` (``idle`` says which), cancels the request and
tells the peer (TO-02).

Progress only restarts the idle timeout when the caller asked for progress
(``on_progress``): without it the request carries no progress token, so the
peer sends none.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import inbound, open_client_with_raw_server, open_pair, outbound, settle

from trio_mcp import Context, RequestTimeout, Server
from trio_mcp.lowlevel import CancelOrigin, Progress, RequestState


def progress_server(log: list[str]) -> Server:
    """``long(steps, every)``: reports progress every *every* seconds, *steps* times."""
    server = Server("progress")

    @server.tool()
    async def long(ctx: Context, steps: int, every: float) -> str:
        try:
            for step in range(1, steps + 1):
                await trio.sleep(every)
                await ctx.report_progress(step, steps)
        finally:
            log.append(f"finally at {trio.current_time():g}")
        return "done"

    return server


@pytest.mark.spec("TO-04")
@pytest.mark.spec("PG-03")
async def test_progress_extends_the_idle_timeout(autojump_clock: trio.testing.MockClock) -> None:
    log: list[str] = []
    seen: list[Progress] = []
    async with open_pair(progress_server(log), progress_idle_timeout=60) as (client, _):
        result = await client.call_tool("long", {"steps": 5, "every": 40}, on_progress=seen.append)
        # 200 s under a 60 s idle timeout: every 40 s of progress restarted it.
        assert trio.current_time() == 200
        assert result.content[0].text == "done"  # type: ignore[union-attr]
        assert [p.progress for p in seen] == [1, 2, 3, 4, 5]
        assert all(p.total == 5 for p in seen)
        record = outbound(client.session, "tools/call")
        assert record.state is RequestState.COMPLETED
        assert record.progress == Progress(5, 5)
        assert log == ["finally at 200"]


@pytest.mark.spec("TO-05")
@pytest.mark.spec("TO-02")
@pytest.mark.spec("A-11")
async def test_the_hard_cap_fires_despite_progress(autojump_clock: trio.testing.MockClock) -> None:
    log: list[str] = []
    seen: list[Progress] = []
    async with open_pair(progress_server(log)) as (client, server_session):
        with pytest.raises(RequestTimeout) as info:
            await client.call_tool(
                "long",
                {"steps": 5, "every": 40},
                on_progress=seen.append,
                progress_idle_timeout=60,
                max_duration=100,
            )
        assert trio.current_time() == 100
        assert (info.value.idle, info.value.seconds) == (False, 100)
        assert str(info.value) == "tools/call timed out after 100s in total"
        assert [p.progress for p in seen] == [1, 2]
        record = outbound(client.session, "tools/call")
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is CancelOrigin.DEADLINE
        await client.ping()
        await settle()
        # The server was told and stopped at once.
        served = inbound(server_session, record.id)
        assert served.state is RequestState.CANCELLED
        assert served.cancel_origin is CancelOrigin.PEER
        assert served.cancel_reason == "tools/call timed out after 100s in total"
        assert log == ["finally at 100"]


@pytest.mark.spec("TO-01")
@pytest.mark.spec("TO-02")
@pytest.mark.spec("TO-06")
async def test_the_idle_timeout_fires_without_progress(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_pair(progress_server(log)) as (client, _):
        with pytest.raises(RequestTimeout) as info:
            await client.call_tool("long", {"steps": 1, "every": 1000})
        # The session default (60 s).
        assert trio.current_time() == 60
        assert (info.value.idle, info.value.seconds) == (True, 60)
        await client.ping()
        await settle()
        assert log == ["finally at 60"]


@pytest.mark.spec("TO-04")
async def test_progress_does_not_extend_a_call_that_did_not_ask_for_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_pair(progress_server(log)) as (client, _):
        with pytest.raises(RequestTimeout) as info:
            # No on_progress: no progress token, so the tool's reports are not
            # sent (PG-07) and cannot restart the clock.
            await client.call_tool("long", {"steps": 5, "every": 40})
        assert trio.current_time() == 60
        assert info.value.idle
        assert outbound(client.session, "tools/call").progress_token is None


@pytest.mark.spec("TO-03")
async def test_timeouts_are_per_request_and_can_be_disabled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_pair(progress_server(log)) as (client, _):
        result = await client.call_tool(
            "long", {"steps": 1, "every": 5000}, progress_idle_timeout=None, max_duration=None
        )
        assert result.content[0].text == "done"  # type: ignore[union-attr]
        assert trio.current_time() == 5000
        with pytest.raises(RequestTimeout) as info:
            await client.call_tool(
                "long", {"steps": 1, "every": 5000}, progress_idle_timeout=None, max_duration=7
            )
        assert trio.current_time() == 5007
        assert (info.value.idle, info.value.seconds) == (False, 7)


@pytest.mark.spec("TO-04")
@pytest.mark.spec("A-10")
@pytest.mark.spec("PG-04")
async def test_non_increasing_or_unknown_progress_does_not_extend_the_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[Progress] = []
    async with open_client_with_raw_server() as (peer, client):
        async with trio.open_nursery() as nursery:
            outcome: list[BaseException] = []

            async def call() -> None:
                try:
                    await client.call_tool("slow", on_progress=seen.append)
                except RequestTimeout as exc:
                    outcome.append(exc)

            nursery.start_soon(call)
            request = await peer.receive()
            token = request["params"]["_meta"]["progressToken"]

            async def progress(value: float, at: float, token: object = token) -> None:
                await trio.sleep_until(at)
                await peer.notify(
                    "notifications/progress", {"progressToken": token, "progress": value}
                )

            await progress(1, 50)  # restarts the clock: deadline 110
            await progress(1, 100)  # not an increase: ignored
            await progress(0.5, 101)  # a decrease: ignored
            await progress(9, 102, token="someone else's")  # unknown token: ignored
        assert trio.current_time() == 110
        assert len(outcome) == 1
        assert [p.progress for p in seen] == [1]
        record = outbound(client.session, "tools/call")
        assert record.late_events == ("non-increasing progress 1", "non-increasing progress 0.5")


async def test_a_failing_progress_callback_ends_the_call_with_its_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def explode(progress: Progress) -> None:
        raise ZeroDivisionError("in the callback")

    log: list[str] = []
    async with open_pair(progress_server(log)) as (client, server_session):
        with pytest.raises(ZeroDivisionError):
            await client.call_tool("long", {"steps": 3, "every": 1}, on_progress=explode)
        assert trio.current_time() == 1
        # The request ends (CANCELLED by the caller: it is the caller's code that
        # failed), the server is told and its handler stops.
        record = outbound(client.session, "tools/call")
        assert record.state is RequestState.CANCELLED
        assert record.cancel_origin is CancelOrigin.CALLER
        await client.ping()
        await settle()
        served = inbound(server_session, record.id)
        assert served.cancel_origin is CancelOrigin.PEER
        assert log == ["finally at 1"]
