"""RFC 6570 URI templates: expansion and linear-time matching."""

from __future__ import annotations

import pytest

from trio_mcp._server._uri_template import UriTemplate


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("file:///{path}", "file:///a.txt", {"path": "a.txt"}),
        ("file:///{path}", "file:///a/b", None),  # simple values have no '/'
        ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),
        ("file:///{path}.txt", "file:///a.b.txt", {"path": "a.b"}),
        ("users://{id}/posts/{post}", "users://7/posts/9", {"id": "7", "post": "9"}),
        ("users://{id}/posts/{post}", "users://7/posts/", None),
        ("search://q{?term,limit}", "search://q?term=a%20b&limit=5", {"term": "a b", "limit": "5"}),
        ("search://q{?term,limit}", "search://q", {}),
        ("tree://root{/path*}", "tree://root/a/b", {"path": ["a", "b"]}),
        ("doc://x{#section}", "doc://x#intro/part", {"section": "intro/part"}),
        ("v://{a}.{b}", "v://x.y.z", {"a": "x", "b": "y.z"}),
        ("v://{x,y}", "v://1,2", {"x": "1", "y": "2"}),
        ("m://{;a}", "m://;a=1", {"a": "1"}),
        ("note://{name}", "note://", None),
        ("note://{name}", "other://x", None),
    ],
)
@pytest.mark.spec("RS-02")
def test_match(template: str, uri: str, expected: dict[str, object] | None) -> None:
    assert UriTemplate.parse(template).match(uri) == expected


def test_expand_round_trips_through_match() -> None:
    template = UriTemplate.parse("users://{id}/files/{+path}{?q}")
    uri = template.expand({"id": "a b", "path": "x/y.txt", "q": "1&2"})
    assert uri == "users://a%20b/files/x/y.txt?q=1%262"
    assert template.match(uri) == {"id": "a b", "path": "x/y.txt", "q": "1&2"}


@pytest.mark.parametrize(
    "bad", ["x://{", "x://}", "x://{a}{a}", "x://{}", "x://{a:0}", "x://{a b}"]
)
def test_malformed_templates_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"URI template|variable|prefix"):
        UriTemplate.parse(bad)


@pytest.mark.spec("RS-15")
def test_hostile_uris_cannot_cause_backtracking() -> None:
    # With a backtracking regex such as r"x(.*)y(.*)y(.*)z" this input takes
    # cubic time; the scanner looks at each character a bounded number of times.
    template = UriTemplate.parse("x://{+a}y{+b}y{+c}z")
    hostile = "x://" + "y" * 8000
    assert template.match(hostile) is None
    assert template.match("x://" + "a" * 9000 + "z") is None  # over the length bound
    assert template.match("x://1y2y3z") == {"a": "1", "b": "2", "c": "3"}
