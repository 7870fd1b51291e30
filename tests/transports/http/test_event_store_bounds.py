"""The memory event store's bounds: bytes and age per session (reliability E-09).

Every bound drops oldest first, so each stream keeps a suffix of its events: a
resume from an event still held replays all of that stream's later events,
and a resume from a dropped one is refused (None; the server answers 400),
never a shortened replay. A property test checks that against a model that
keeps everything, for random mixes of sessions, streams, sizes and bounds.
"""

from __future__ import annotations

import orjson
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from test_http_hardening import asgi_scope, call_app, whole_body

from trio_mcp import Context, Server, http_app
from trio_mcp.transports._http._sse import SSEParser
from trio_mcp.transports._http.server._asgi import Message
from trio_mcp.transports._http.server._event_store import MAX_BYTES_PER_SESSION, MemoryEventStore

KIB = 1024


def test_defaults() -> None:
    store = MemoryEventStore()
    assert MAX_BYTES_PER_SESSION == 8 * 1024 * 1024
    assert store.max_bytes_per_session == MAX_BYTES_PER_SESSION
    assert (store.max_events_per_stream, store.max_streams_per_session) == (1024, 256)
    assert store.max_age is None
    with pytest.raises(ValueError, match="max_events_per_stream"):
        MemoryEventStore(max_events_per_stream=0)


@pytest.mark.spec("HT-26")
def test_byte_bound_drops_the_oldest_events_of_the_session_first() -> None:
    store = MemoryEventStore(max_bytes_per_session=10 * KIB)
    # Two streams written in turn: 1.1, 2.2, 1.3, 2.4, ... 1 KiB each.
    ids = [store.store_event_nowait("s", str(1 + i % 2), bytes([i]) * KIB) for i in range(10)]
    assert store.held_bytes("s") == 10 * KIB
    assert store.events_after_nowait("s", ids[0]) == (
        "1",
        [(ids[i], bytes([i]) * KIB) for i in (2, 4, 6, 8)],
    )
    # One more KiB: the session's oldest event (1.1, stream 1) goes, not stream 2's.
    ids.append(store.store_event_nowait("s", "2", b"x" * KIB))
    assert store.held_bytes("s") == 10 * KIB
    assert store.events_after_nowait("s", ids[0]) is None  # refused, never shortened
    assert store.events_after_nowait("s", ids[1]) == (
        "2",
        [(ids[i], bytes([i]) * KIB) for i in (3, 5, 7, 9)] + [(ids[10], b"x" * KIB)],
    )
    # 3.5 KiB more on stream 1: 2.2, 1.3, 2.4 and 1.5 go (oldest first, 4 KiB).
    ids.append(store.store_event_nowait("s", "1", b"y" * (3 * KIB + 512)))
    assert ids[1:5] == ["2.2", "1.3", "2.4", "1.5"]
    assert store.held_bytes("s") == 9 * KIB + 512
    for gone in ids[1:5]:
        assert store.events_after_nowait("s", gone) is None
    assert store.events_after_nowait("s", ids[6]) == (
        "1",
        [(ids[8], bytes([8]) * KIB), (ids[11], b"y" * 3584)],
    )
    assert store.events_after_nowait("s", ids[5]) == (
        "2",
        [(ids[7], bytes([7]) * KIB), (ids[9], bytes([9]) * KIB), (ids[10], b"x" * KIB)],
    )
    # Other sessions have budgets of their own.
    store.store_event_nowait("t", "1", b"z" * 10 * KIB)
    assert store.held_bytes("t") == 10 * KIB
    assert store.held_bytes("s") == 9 * KIB + 512
    assert store.held_bytes() == 19 * KIB + 512


def test_priming_events_cost_no_bytes_and_count_as_events() -> None:
    store = MemoryEventStore(max_bytes_per_session=100, max_events_per_stream=3)
    prime = store.store_event_nowait("s", "1", None)
    first = store.store_event_nowait("s", "1", b"a" * 100)
    assert store.held_bytes("s") == 100
    assert store.events_after_nowait("s", prime) == ("1", [(first, b"a" * 100)])
    store.store_event_nowait("s", "1", None)
    store.store_event_nowait("s", "1", None)  # the count bound drops the priming event
    assert store.events_after_nowait("s", prime) is None
    assert store.held_bytes("s") == 100


def test_an_event_larger_than_the_bound_is_not_kept() -> None:
    store = MemoryEventStore(max_bytes_per_session=4 * KIB)
    prime = store.store_event_nowait("s", "1", None)
    small = store.store_event_nowait("s", "2", b"s" * KIB)
    huge = store.store_event_nowait("s", "1", b"h" * 5 * KIB)
    # Keeping it would break the bound; dropping it but keeping what came
    # before would make a resume from there silently skip it. Both go.
    assert store.held_bytes("s") == 0
    assert len(store) == 0
    for event_id in (prime, small, huge):
        assert store.events_after_nowait("s", event_id) is None
    # Later events are kept again, and ids never repeat.
    after = store.store_event_nowait("s", "1", b"a")
    assert after not in (prime, small, huge)
    assert store.events_after_nowait("s", after) == ("1", [])


def test_count_and_stream_bounds_keep_the_byte_count_exact() -> None:
    store = MemoryEventStore(max_events_per_stream=2, max_streams_per_session=2)
    store.store_event_nowait("s", "1", b"a" * 10)
    store.store_event_nowait("s", "1", b"b" * 20)
    store.store_event_nowait("s", "1", b"c" * 30)  # drops a (count bound)
    assert store.held_bytes("s") == 50
    store.store_event_nowait("s", "2", b"d" * 5)
    store.store_event_nowait("s", "3", b"e" * 7)  # drops stream 1 (stream bound)
    assert store.held_bytes("s") == 12
    assert len(store) == 2
    trio.run(store.forget_session, "s")
    assert (store.held_bytes("s"), store.held_bytes(), len(store)) == (0, 0, 0)


@pytest.mark.spec("HT-26")
async def test_age_bound(autojump_clock: trio.testing.MockClock) -> None:
    store = MemoryEventStore(max_age=60.0)
    old = store.store_event_nowait("s", "1", b"old")
    await trio.sleep(30)
    middle = store.store_event_nowait("s", "2", b"middle")
    await trio.sleep(31)  # old is 61 s old, middle 31 s
    # A resume drops what expired first: old is refused, middle is served.
    assert store.events_after_nowait("s", old) is None
    assert store.events_after_nowait("s", middle) == ("2", [])
    assert store.held_bytes("s") == len(b"middle")
    await trio.sleep(30)  # middle is 61 s old
    new = store.store_event_nowait("s", "2", b"new")  # storing drops it too
    assert store.held_bytes("s") == len(b"new")
    assert store.events_after_nowait("s", middle) is None
    assert store.events_after_nowait("s", new) == ("2", [])
    # Exactly max_age old is still kept.
    await trio.sleep(60)
    assert store.events_after_nowait("s", new) == ("2", [])
    assert len(store) == 1


# ------------------------------------------------------------- the model check

_OPS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),  # session
        st.sampled_from(["0", "1", "2", "3"]),  # stream
        st.one_of(st.none(), st.integers(min_value=0, max_value=300)),  # payload size
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(
    ops=_OPS,
    max_bytes=st.one_of(st.none(), st.integers(min_value=0, max_value=1000)),
    max_events=st.integers(min_value=1, max_value=6),
    max_streams=st.integers(min_value=1, max_value=4),
)
def test_every_resume_is_complete_or_refused(
    ops: list[tuple[str, str, int | None]], max_bytes: int | None, max_events: int, max_streams: int
) -> None:
    store = MemoryEventStore(
        max_bytes_per_session=max_bytes,
        max_events_per_stream=max_events,
        max_streams_per_session=max_streams,
    )
    # The model keeps everything: (event id, data) per (session, stream).
    model: dict[tuple[str, str], list[tuple[str, bytes | None]]] = {}
    for n, (session, stream, size) in enumerate(ops):
        data = None if size is None else bytes([n % 256]) * size
        event_id = store.store_event_nowait(session, stream, data)
        model.setdefault((session, stream), []).append((event_id, data))
        for sid in ("a", "b"):
            if max_bytes is not None:
                assert store.held_bytes(sid) <= max_bytes
            held = 0
            for (msid, mstream), events in model.items():
                if msid != sid:
                    continue
                assert len({e for e, _ in events}) == len(events)  # ids unique
                for i, (eid, _) in enumerate(events):
                    found = store.events_after_nowait(sid, eid)
                    if found is not None:  # held: exactly the rest, in order
                        assert found == (mstream, events[i + 1 :])
                        if i == 0 or store.events_after_nowait(sid, events[i - 1][0]) is None:
                            held += sum(len(d) for _, d in events[i:] if d is not None)
                # What is held is a suffix: once a resume works, later ones do too.
                answers = [store.events_after_nowait(sid, eid) is not None for eid, _ in events]
                assert answers == sorted(answers)
            assert store.held_bytes(sid) == held


# ------------------------------------------------- end to end through the app

STEPS = 8
INIT = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
)
CALL = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "chatter", "arguments": {}, "_meta": {"progressToken": 1}},
    }
)


def session_headers(sid: str, **extra: str) -> dict[str, str]:
    return {
        "host": "127.0.0.1:8000",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-session-id": sid,
        "mcp-protocol-version": "2025-11-25",
        **extra,
    }


@pytest.mark.spec("HT-26")
async def test_app_refuses_a_resume_from_events_the_byte_bound_dropped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("chatty", version="1.0")
    go = trio.Event()

    @server.tool()
    async def chatter(ctx: Context) -> str:
        """Report STEPS progress notifications of over 1 KiB each."""
        await ctx.report_progress(1, STEPS, message="x" * KIB)
        await go.wait()
        for i in range(1, STEPS):
            await ctx.report_progress(i + 1, STEPS, message="x" * KIB)
        return "finished"

    store = MemoryEventStore(max_bytes_per_session=4 * KIB)
    app = http_app(server, event_store=store)
    async with app.run():
        status, _, headers = await call_app(app, asgi_scope(), whole_body(INIT))
        assert status == 200
        sid = headers[b"mcp-session-id"].decode()
        note = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert (await call_app(app, asgi_scope(headers=session_headers(sid)), whole_body(note)))[
            0
        ] == 202
        # The call's stream: the priming event and progress 1, then the
        # client leaves; the tool goes on and stores 7 more KiB and its answer.
        sent: list[bytes] = []
        two_events = trio.Event()

        async def send(message: Message) -> None:
            sent.append(message.get("body", b""))
            if len(SSEParser().feed(b"".join(sent))) >= 2:
                two_events.set()

        async def receive() -> Message:
            if not sent:
                await trio.lowlevel.checkpoint()
                return {"type": "http.request", "body": CALL, "more_body": False}
            await two_events.wait()
            return {"type": "http.disconnect"}

        await app(asgi_scope(headers=session_headers(sid)), receive, send)
        seen = SSEParser().feed(b"".join(sent))
        assert seen[0].data == ""  # the priming event
        assert orjson.loads(seen[1].data)["params"]["progress"] == 1
        go.set()
        await trio.testing.wait_all_tasks_blocked()
        assert 0 < store.held_bytes(sid) <= 4 * KIB
        # Resume from every event id of the call's stream, in order: the first
        # ones were dropped (400, never a replay with a hole), the rest replay.
        stream, first_seq = (seen[0].id or "").split(".")
        statuses: list[int] = []
        replays: list[list[dict[str, object]]] = []
        for seq in range(int(first_seq), int(first_seq) + STEPS + 2):
            get = session_headers(sid, **{"last-event-id": f"{stream}.{seq}"})
            get["accept"] = "text/event-stream"
            scope = asgi_scope(headers=get)
            scope["method"] = "GET"
            status, body, _ = await call_app(app, scope, whole_body(b""))
            statuses.append(status)
            if status == 200:
                replays.append([orjson.loads(e.data) for e in SSEParser().feed(body) if e.data])
            else:
                assert b"Unknown or expired Last-Event-ID" in body
        assert statuses[:2] == [400, 400]  # what the client saw is gone
        assert statuses == sorted(statuses, reverse=True)  # dropped ones come first
        assert statuses[-1] == 200  # the answer itself is kept
        kept = statuses.count(200)
        assert 1 < kept < STEPS  # the bound dropped some but not all
        for replay in replays:
            assert replay == replays[0][len(replays[0]) - len(replay) :]  # suffixes
        assert replays[-1] == []
        assert replays[0][-1]["result"]["content"][0]["text"] == "finished"  # type: ignore[index]
        progress = [m["params"]["progress"] for m in replays[0] if "method" in m]  # type: ignore[index]
        assert progress == list(range(STEPS - len(progress) + 1, STEPS + 1))
