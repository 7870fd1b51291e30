"""The sans-I/O SSE parser and formatter, fed byte by byte."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trio_mcp.protocol._codec import FrameError, decode
from trio_mcp.protocol._head import OversizeFrame
from trio_mcp.transports._http._sse import SSEEvent, SSEParser, format_event


def feed_bytewise(raw: bytes) -> list[SSEEvent]:
    parser = SSEParser()
    out: list[SSEEvent] = []
    for i in range(len(raw)):
        out.extend(parser.feed(raw[i : i + 1]))
    return out


@pytest.mark.spec("HT-09")
@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_endings_split_anywhere(eol: bytes) -> None:
    raw = b"\xef\xbb\xbf: comment" + eol + b"event: message" + eol + b"id: s.1" + eol
    raw += b'data: {"a":' + eol + b"data:1}" + eol + eol + b"retry: 250" + eol + eol
    events = feed_bytewise(raw)
    assert events == [
        SSEEvent(data='{"a":\n1}', event="message", id="s.1", id_set=True),
        SSEEvent(data="", event="message", id="s.1", retry=250),
    ]
    assert events == SSEParser().feed(raw)


@pytest.mark.spec("HT-10")
def test_priming_event_with_empty_data_keeps_its_id() -> None:
    events = feed_bytewise(format_event("", id="3.7", retry=100))
    assert events == [SSEEvent(data="", id="3.7", retry=100, id_set=True)]


def test_id_with_nul_is_ignored_and_bad_retry_dropped() -> None:
    events = SSEParser().feed(b"id: a\x00b\nretry: 1x\ndata: x\n\n")
    assert events == [SSEEvent(data="x")]


def test_oversize_event_is_refused() -> None:
    parser = SSEParser(max_event_size=10)
    assert parser.feed(b"data: " + b"x" * 20) == []
    [event] = parser.feed(b"\n\ndata: ok\n\n")[:1]
    assert event.data == ""
    assert isinstance(event.oversize, OversizeFrame)
    assert (bytes(event.oversize), event.oversize.size, event.oversize.limit) == (
        b"x" * 20,
        20,
        10,
    )


@pytest.mark.parametrize("split", [1, 7, 100, 5000])
@pytest.mark.parametrize("lines", [1, 3])
def test_an_oversize_event_keeps_only_its_ends_and_names_its_id(split: int, lines: int) -> None:
    # A response of 50 KB against a 1 KB bound, as one data line or several,
    # in reads of any size: the head and tail name the id, memory stays bounded.
    message = b'{"jsonrpc":"2.0","result":{"t":"' + b"x" * 50_000 + b'"},"id":"q"}'
    if lines == 1:
        wire = b"id: 1\ndata: " + message + b"\n\ndata: {}\n\n"
    else:
        third = len(message) // 3
        parts = [message[:third], message[third : 2 * third], message[2 * third :]]
        wire = b"id: 1\n" + b"".join(b"data:" + p + b"\r\n" for p in parts) + b"\ndata: {}\n\n"
    parser = SSEParser(max_event_size=1000)
    events: list[SSEEvent] = []
    for i in range(0, len(wire), split):
        events += parser.feed(wire[i : i + split])
        assert len(parser._buffer) <= 1000 + split
    first, second = events
    assert first.oversize is not None
    assert first.id == "1"
    expected = len(message) + (0 if lines == 1 else 2)  # joined by line feeds
    assert first.oversize.size == expected
    [error] = decode(first.oversize)
    assert isinstance(error, FrameError)
    assert error.too_large
    assert error.response_id == "q"
    assert second.data == "{}"
    assert second.oversize is None


def test_an_oversize_comment_line_is_skipped() -> None:
    parser = SSEParser(max_event_size=100)
    assert parser.feed(b":" + b"c" * 500) == []
    assert parser.feed(b"c" * 500 + b"\ndata: 1\n\n") == [SSEEvent(data="1")]


def test_format_refuses_line_breaks_in_id() -> None:
    with pytest.raises(ValueError, match="id"):
        format_event("x", id="a\nb")


@given(st.text(), st.sampled_from(["message", "endpoint"]), st.integers(0, 99))
def test_format_parse_round_trip(text: str, event: str, seq: int) -> None:
    raw = format_event(text, event=event, id=f"1.{seq}")
    (parsed,) = SSEParser().feed(raw)
    expected = text.replace("\r\n", "\n").replace("\r", "\n")
    assert (parsed.data, parsed.event, parsed.id) == (expected, event, f"1.{seq}")
