"""``trio-mcp check`` passes every check against each bundled example, over stdio
and Streamable HTTP, in both eras (the issue's first acceptance item)."""

from __future__ import annotations

import httpx
import pytest
from check_helpers import OPTIONS, applicable, example, http_server, not_passed, outcomes

from trio_mcp._check import HttpTarget, StdioTarget, run_checks

EXAMPLES = ["paper_trail", "everything"]


@pytest.mark.spec("SI-11")
@pytest.mark.spec("CN-05")
@pytest.mark.parametrize("name", EXAMPLES)
async def test_every_check_passes_against_an_example_over_stdio(name: str) -> None:
    report = await run_checks(StdioTarget(tuple(example(name))), OPTIONS)
    assert report.eras == ("legacy", "modern")
    assert not_passed(report) == []
    assert set(outcomes(report)) == applicable("stdio")
    assert not report.failed


@pytest.mark.spec("HT-02")
@pytest.mark.parametrize("name", EXAMPLES)
async def test_every_check_passes_against_an_example_over_http(name: str) -> None:
    async with (
        http_server([*example(name), "--http", "127.0.0.1:0"]) as url,
        httpx.AsyncClient(timeout=30) as client,
    ):
        report = await run_checks(HttpTarget(url, client), OPTIONS)
    assert report.eras == ("legacy", "modern")
    assert not_passed(report) == []
    assert set(outcomes(report)) == applicable("http")
