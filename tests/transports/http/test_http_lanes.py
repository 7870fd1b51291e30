"""The HTTP client's LanePool: one request per lane, lanes reused last-returned first.

The unit tests run on lanes of the test's own (:class:`FakeLanes`): a request
for ``/hold/KEY`` waits inside its lane until the test releases it, so which
request holds which lane, and which one waits, is decided by the test alone;
the autojump clock makes the ``fail_after`` guards instant when something
deadlocks. The last tests run real lanes against our server on loopback.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
import trio.testing
from helpers import first_text
from http_helpers import http_transport_of, make_server, running

from trio_mcp import open_http_client
from trio_mcp._tls import default_tls_context
from trio_mcp.transports._http.client._lanes import LanePool, default_lane

BASE = "http://127.0.0.1:1"  # never connected to: fake lanes answer themselves


class FakeBody(httpx.AsyncByteStream):
    """A response body that counts its closes on its lane."""

    def __init__(self, lane: FakeLane) -> None:
        self._lane = lane

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"ok"

    async def aclose(self) -> None:  # no checkpoint, as the tests below rely on
        self._lane.bodies_closed += 1


class FakeLane(httpx.AsyncBaseTransport):
    """Lane *number* of a :class:`FakeLanes`: answers with ``x-lane: number``."""

    def __init__(self, number: int, lanes: FakeLanes) -> None:
        self.number = number
        self._lanes = lanes
        self.paths: list[str] = []
        self.bodies_closed = 0
        self.closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.paths.append(path)
        if path == "/fail":
            raise httpx.ConnectError("refused", request=request)
        if path.startswith("/hold/"):
            key = path.removeprefix("/hold/")
            self._lanes.entered[key].set()
            await self._lanes.release[key].wait()
        return httpx.Response(200, headers={"x-lane": str(self.number)}, stream=FakeBody(self))

    async def aclose(self) -> None:
        self.closed = True


class FakeLanes:
    """The lane factory of the unit tests.

    ``/hold/KEY`` sets ``entered[KEY]`` and waits for ``release[KEY]``; ``/fail``
    raises ``httpx.ConnectError``; any other path is answered at once. While
    ``broken`` is set, making a lane raises ``OSError``.
    """

    def __init__(self) -> None:
        self.made: list[FakeLane] = []
        self.entered: defaultdict[str, trio.Event] = defaultdict(trio.Event)
        self.release: defaultdict[str, trio.Event] = defaultdict(trio.Event)
        self.broken = False

    def __call__(self) -> httpx.AsyncBaseTransport:
        if self.broken:
            raise OSError("no lane today")
        lane = FakeLane(len(self.made), self)
        self.made.append(lane)
        return lane


def request(path: str) -> httpx.Request:
    return httpx.Request("GET", BASE + path)


def lane_of(response: httpx.Response) -> int:
    return int(response.headers["x-lane"])


class Held:
    """``GET /hold/KEY`` calls through an ``httpx.AsyncClient`` over the pool,
    each in a task of its own."""

    def __init__(self, client: httpx.AsyncClient, lanes: FakeLanes, nursery: trio.Nursery) -> None:
        self._client = client
        self._lanes = lanes
        self._nursery = nursery
        self.done: dict[str, trio.Event] = {}
        self.lane: dict[str, int] = {}

    def start_soon(self, key: str) -> None:
        self.done[key] = trio.Event()

        async def run() -> None:
            response = await self._client.get(f"/hold/{key}")
            assert response.text == "ok"
            self.lane[key] = lane_of(response)
            self.done[key].set()

        self._nursery.start_soon(run)

    async def start(self, key: str) -> None:
        """Start the call; return once it is inside its lane."""
        self.start_soon(key)
        await self._lanes.entered[key].wait()

    async def finish(self, key: str) -> int:
        """Let the call be answered; return its lane once it has given it back."""
        self._lanes.release[key].set()
        await self.done[key].wait()
        return self.lane[key]


def fake_client(pool: LanePool) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=pool, base_url=BASE)


# ------------------------------------------------------------------ unit tests


@pytest.mark.parametrize("max_lanes", [0, -1])
def test_max_lanes_below_one_is_refused(max_lanes: int) -> None:
    with pytest.raises(ValueError, match="max_lanes must be >= 1"):
        LanePool(FakeLanes(), max_lanes=max_lanes)


async def test_sequential_requests_reuse_one_lane(autojump_clock: trio.testing.MockClock) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=8)
    with trio.fail_after(5):
        async with fake_client(pool) as client:
            answers = [await client.get(f"/{i}") for i in range(5)]
            assert [lane_of(a) for a in answers] == [0] * 5
            assert pool.lanes == 1
            assert pool.in_flight == 0
    assert len(lanes.made) == 1
    assert lanes.made[0].paths == [f"/{i}" for i in range(5)]
    assert lanes.made[0].bodies_closed == 5


async def test_concurrent_requests_open_a_lane_each_and_reuse_the_last_given_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=8)
    with trio.fail_after(5):
        async with fake_client(pool) as client, trio.open_nursery() as nursery:
            held = Held(client, lanes, nursery)
            for key in "abc":
                await held.start(key)
            assert (pool.lanes, pool.in_flight) == (3, 3)
            assert [lane.paths for lane in lanes.made] == [["/hold/a"], ["/hold/b"], ["/hold/c"]]
            # Given back in the order b, c, a: the idle stack is [1, 2, 0].
            assert await held.finish("b") == 1
            assert await held.finish("c") == 2
            assert await held.finish("a") == 0
            assert (pool.lanes, pool.in_flight) == (3, 0)
            # Taken again last-returned first, and no new lane is opened.
            await held.start("d")
            await held.start("e")
            await held.start("f")
            assert (pool.lanes, pool.in_flight) == (3, 3)
            assert [await held.finish(key) for key in "def"] == [0, 2, 1]
            assert (await client.get("/after")).headers["x-lane"] == "1"  # f's, the last back
    assert len(lanes.made) == 3


async def test_at_the_bound_one_more_request_waits_until_a_response_is_closed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=2)
    with trio.fail_after(5):
        first = await pool.handle_async_request(request("/first"))
        assert pool.in_flight == 1
        second = await pool.handle_async_request(request("/second"))
        assert (pool.lanes, pool.in_flight) == (2, 2)
        assert (lane_of(first), lane_of(second)) == (0, 1)
        async with fake_client(pool) as client:
            async with trio.open_nursery() as nursery:
                held = Held(client, lanes, nursery)
                held.start_soon("third")
                await trio.testing.wait_all_tasks_blocked()
                assert not lanes.entered["third"].is_set()  # waiting for a lane
                assert (pool.lanes, pool.in_flight) == (2, 2)
                await second.aclose()  # its lane goes to the request that waited
                await lanes.entered["third"].wait()
                assert (pool.lanes, pool.in_flight) == (2, 2)
                assert await held.finish("third") == 1
                assert (pool.lanes, pool.in_flight) == (2, 1)
            await first.aclose()
            assert (pool.lanes, pool.in_flight) == (2, 0)
    assert [lane.paths for lane in lanes.made] == [["/first"], ["/second", "/hold/third"]]


async def test_a_failing_request_gives_its_lane_back_and_raises(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=1)
    with trio.fail_after(5):
        async with fake_client(pool) as client:
            with pytest.raises(httpx.ConnectError, match="refused"):
                await client.get("/fail")
            assert (pool.lanes, pool.in_flight) == (1, 0)
            with pytest.raises(httpx.ConnectError, match="refused"):
                await pool.handle_async_request(request("/fail"))
            assert (pool.lanes, pool.in_flight) == (1, 0)
            # With max_lanes=1 a lost permit would leave this one waiting forever.
            answer = await client.get("/next")
            assert (answer.text, lane_of(answer)) == ("ok", 0)
            assert (pool.lanes, pool.in_flight) == (1, 0)
    assert lanes.made[0].paths == ["/fail", "/fail", "/next"]


async def test_a_lane_that_cannot_be_made_gives_its_permit_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=1)
    lanes.broken = True
    with trio.fail_after(5):
        with pytest.raises(OSError, match="no lane today"):
            await pool.handle_async_request(request("/x"))
        assert (pool.lanes, pool.in_flight) == (0, 0)
        lanes.broken = False
        answer = await pool.handle_async_request(request("/y"))
        assert (pool.lanes, pool.in_flight) == (1, 1)
        await answer.aclose()
        assert pool.in_flight == 0


async def test_a_request_cancelled_while_waiting_for_a_lane_gives_nothing_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=1)
    with trio.fail_after(5):
        holder = await pool.handle_async_request(request("/holder"))
        cancelled = trio.Event()
        async with trio.open_nursery() as nursery:

            async def waiter(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
                with trio.CancelScope() as scope:
                    task_status.started(scope)
                    await pool.handle_async_request(request("/never"))
                assert scope.cancelled_caught
                cancelled.set()

            scope = await nursery.start(waiter)
            await trio.testing.wait_all_tasks_blocked()
            assert pool.in_flight == 1
            scope.cancel()
        assert cancelled.is_set()
        assert pool.in_flight == 1  # the holder's lane, still held
        await holder.aclose()
        assert pool.in_flight == 0  # not -1: the cancelled waiter released nothing
        # The bound is still one: a second request waits behind the first.
        async with fake_client(pool) as client:
            async with trio.open_nursery() as nursery:
                held = Held(client, lanes, nursery)
                await held.start("one")
                held.start_soon("two")
                await trio.testing.wait_all_tasks_blocked()
                assert not lanes.entered["two"].is_set()
                assert await held.finish("one") == 0
                assert await held.finish("two") == 0
            assert (pool.lanes, pool.in_flight) == (1, 0)
    assert lanes.made[0].paths == ["/holder", "/hold/one", "/hold/two"]


async def test_a_request_cancelled_inside_its_lane_gives_it_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=1)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def cancelled_call(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
                with trio.CancelScope() as scope:
                    task_status.started(scope)
                    await pool.handle_async_request(request("/hold/cut"))
                assert scope.cancelled_caught

            scope = await nursery.start(cancelled_call)
            await lanes.entered["cut"].wait()
            assert (pool.lanes, pool.in_flight) == (1, 1)
            scope.cancel()
        assert (pool.lanes, pool.in_flight) == (1, 0)
        answer = await pool.handle_async_request(request("/next"))
        assert lane_of(answer) == 0  # the same lane, given back and reused
        await answer.aclose()
        assert (pool.lanes, pool.in_flight) == (1, 0)


async def test_a_streamed_response_holds_its_lane_until_closed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=2)
    with trio.fail_after(5):
        async with fake_client(pool) as client:
            async with client.stream("GET", "/streamed") as streamed:
                assert (pool.lanes, pool.in_flight) == (1, 1)
                other = await client.get("/other")  # the held lane is not lent out
                assert (lane_of(streamed), lane_of(other)) == (0, 1)
                assert pool.in_flight == 1
                assert await streamed.aread() == b"ok"  # read to the end: closed by httpx
                assert pool.in_flight == 0
            sent = await client.send(client.build_request("GET", "/sent"), stream=True)
            assert (lane_of(sent), pool.in_flight) == (0, 1)
            await sent.aclose()
            await sent.aclose()
            assert pool.in_flight == 0
            assert lanes.made[0].bodies_closed == 2  # /streamed and /sent, once each


async def test_closing_a_lane_stream_twice_gives_the_lane_back_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=2)
    with trio.fail_after(5):
        response = await pool.handle_async_request(request("/once"))
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        assert pool.in_flight == 1
        await stream.aclose()
        await stream.aclose()
        assert pool.in_flight == 0  # not -1
        # Were lane 0 on the idle stack twice, both of these would run on it.
        async with fake_client(pool) as client:
            async with trio.open_nursery() as nursery:
                held = Held(client, lanes, nursery)
                await held.start("p")
                await held.start("q")
                assert (pool.lanes, pool.in_flight) == (2, 2)
                assert [await held.finish(key) for key in "pq"] == [0, 1]
            assert (pool.lanes, pool.in_flight) == (2, 0)


async def test_a_closed_pool_refuses_requests_and_closes_its_lanes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=4)
    with trio.fail_after(5):
        idle = await pool.handle_async_request(request("/idle"))
        busy = await pool.handle_async_request(request("/busy"))
        await idle.aclose()
        await pool.aclose()
        assert [lane.closed for lane in lanes.made] == [True, True]
        with pytest.raises(RuntimeError, match="the connection pool is closed"):
            await pool.handle_async_request(request("/late"))
        assert pool.in_flight == 1
        await busy.aclose()  # a response outliving the pool still gives its permit back
        assert (pool.lanes, pool.in_flight) == (0, 0)
        with pytest.raises(RuntimeError, match="the connection pool is closed"):
            await pool.handle_async_request(request("/later"))
    assert [lane.paths for lane in lanes.made] == [["/idle"], ["/busy"]]


async def _fails_as_closed(pool: LanePool, failures: list[BaseException]) -> None:
    """A request that waits for a lane and fails because the pool closed."""
    with pytest.raises(RuntimeError, match="the connection pool is closed") as caught:
        await pool.handle_async_request(request("/waits"))
    failures.append(caught.value)


async def test_a_request_waiting_when_the_pool_closes_fails_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=1)
    with trio.fail_after(5):
        holder = await pool.handle_async_request(request("/holder"))
        failures: list[BaseException] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_fails_as_closed, pool, failures)
            await trio.testing.wait_all_tasks_blocked()
            assert pool.in_flight == 1
            await pool.aclose()  # the holder's response is still open
        assert len(failures) == 1
        assert pool.in_flight == 1  # the waiter took no permit
        await holder.aclose()
        assert pool.in_flight == 0
    assert lanes.made[0].paths == ["/holder"]


async def test_a_request_handed_a_lane_as_the_pool_closes_gives_its_permit_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The waiter is handed the holder's permit, and the pool closes before the
    # waiter runs again (no checkpoint between the two closes below).
    lanes = FakeLanes()
    pool = LanePool(lanes, max_lanes=1)
    with trio.fail_after(5):
        holder = await pool.handle_async_request(request("/holder"))
        failures: list[BaseException] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_fails_as_closed, pool, failures)
            await trio.testing.wait_all_tasks_blocked()
            stream = holder.stream
            assert isinstance(stream, httpx.AsyncByteStream)
            await stream.aclose()
            await pool.aclose()
        assert len(failures) == 1
        assert pool.in_flight == 0  # released by the waiter that was refused
    assert lanes.made[0].paths == ["/holder"]


# ----------------------------------------------------------- a real server


def client_port(response: httpx.Response) -> int:
    """The local port of the TCP connection *response* came on."""
    stream = response.extensions["network_stream"]
    port = stream.get_extra_info("client_addr")[1]
    assert isinstance(port, int)
    return port


async def test_real_lanes_reuse_their_connections_last_given_back_first() -> None:
    pool = LanePool(default_lane(default_tls_context()), max_lanes=8)
    async with (
        running(make_server()) as (url, _),
        httpx.AsyncClient(transport=pool, base_url=url) as client,
    ):
        with trio.fail_after(20):
            answers = [await client.get("/mcp") for _ in range(5)]
            assert {a.status_code for a in answers} == {400}  # no session: refused, kept alive
            ports = {client_port(a) for a in answers}
            assert len(ports) == 1  # one connection
            assert (pool.lanes, pool.in_flight) == (1, 0)
            # Three responses held open at once: three lanes, three connections.
            streams: list[httpx.Response] = []
            for _ in range(3):
                streams.append(await client.send(client.build_request("GET", "/mcp"), stream=True))
            assert (pool.lanes, pool.in_flight) == (3, 3)
            held_ports = [client_port(s) for s in streams]
            assert held_ports[0] in ports
            assert len(set(held_ports)) == 3
            for index in (1, 2, 0):  # read to the end (the connection stays up), closed
                await streams[index].aread()
                await streams[index].aclose()
            assert pool.in_flight == 0
            again = [await client.get("/mcp") for _ in range(3)]
            assert [client_port(a) for a in again] == [held_ports[0]] * 3  # the last one back
            assert (pool.lanes, pool.in_flight) == (3, 0)


async def test_open_http_client_runs_forty_calls_in_flight_on_forty_lanes() -> None:
    server = make_server()
    in_flight = 40
    running_now = 0
    all_running = trio.Event()
    release = trio.Event()

    @server.tool()
    async def hold() -> str:
        nonlocal running_now
        running_now += 1
        if running_now == in_flight:
            all_running.set()
        await release.wait()
        return "held"

    async with running(server) as (url, _):
        async with open_http_client(url + "/mcp", era="legacy") as client:
            http: Any = http_transport_of(client).http
            pool = http._transport
            assert isinstance(pool, LanePool)
            answers: list[str] = []

            async def call() -> None:
                answers.append(first_text(await client.call_tool("hold", {})))

            with trio.fail_after(20):
                async with trio.open_nursery() as nursery:
                    for _ in range(in_flight):
                        nursery.start_soon(call)
                    await all_running.wait()
                    assert pool.in_flight == in_flight
                    assert pool.lanes == in_flight  # the handshake's lane was reused
                    release.set()
                assert answers == ["held"] * in_flight
                # A second round runs on the same lanes.
                sums: list[Any] = []

                async def add(i: int) -> None:
                    result = await client.call_tool("add", {"a": i, "b": 1})
                    sums.append(result.structured_content)

                async with trio.open_nursery() as nursery:
                    for i in range(in_flight):
                        nursery.start_soon(add, i)
                assert sorted(s["result"] for s in sums) == list(range(1, in_flight + 1))
                assert pool.lanes <= in_flight
        assert pool.in_flight == 0  # every response closed
        assert pool.lanes == 0  # and the pool closed with the client
