"""The sans-I/O SSE parser and formatter, fed byte by byte."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trio_mcp.transports._sse import SSEError, SSEEvent, SSEParser, format_event


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
    with pytest.raises(SSEError):
        parser.feed(b"data: " + b"x" * 20)


def test_format_refuses_line_breaks_in_id() -> None:
    with pytest.raises(ValueError, match="id"):
        format_event("x", id="a\nb")


@given(st.text(), st.sampled_from(["message", "endpoint"]), st.integers(0, 99))
def test_format_parse_round_trip(text: str, event: str, seq: int) -> None:
    raw = format_event(text, event=event, id=f"1.{seq}")
    (parsed,) = SSEParser().feed(raw)
    expected = text.replace("\r\n", "\n").replace("\r", "\n")
    assert (parsed.data, parsed.event, parsed.id) == (expected, event, f"1.{seq}")
