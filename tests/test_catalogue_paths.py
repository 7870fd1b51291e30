"""Path safety cases of the robustness catalogue (reliability P-16, P-17) that
the filesystem example's escape table leaves out: encoded dots, a Windows
drive, and a dangling link. Over a real stdio subprocess, as
``tests/test_examples_stdio.py``."""

from __future__ import annotations

import json
from pathlib import Path

import trio
from test_examples_stdio import FILESYSTEM, _text, example_client, tree

__all__ = ["tree"]  # the fixture, used by name

NAMES = [
    "%2e%2e/outside/secret.txt",
    "%2e%2e%2foutside%2fsecret.txt",
    "..%2fa.txt",
    "C:\\\\secret.txt",
    "C:/secret.txt",
]


async def test_encoded_dots_and_drive_letters_are_plain_names_inside_the_root(
    tree: dict[str, Path],
) -> None:
    """P-16: the example never percent-decodes and knows no drives, so each of
    these is a name inside the root (there is no such file) and nothing from
    outside crosses the wire."""
    with trio.fail_after(30):
        async with example_client(FILESYSTEM, [tree["root"]]) as (client, recording):
            results = [await client.call_tool("read_file", {"path": name}) for name in NAMES]
    for name, result in zip(NAMES, results, strict=True):
        assert result.is_error, name
        assert "SECRET" not in _text(result)
    assert "SECRET" not in json.dumps(recording.received)


async def test_a_dangling_link_leaf_is_refused(tree: dict[str, Path]) -> None:
    """P-17: a link inside the root to a file that does not exist outside it
    is refused as outside the roots, not followed."""
    (tree["root"] / "dangling").symlink_to(tree["outside"] / "not-yet.txt")
    with trio.fail_after(30):
        async with example_client(FILESYSTEM, [tree["root"]]) as (client, _):
            result = await client.call_tool("read_file", {"path": "dangling"})
    assert result.is_error
    assert "outside the allowed roots" in _text(result)
