"""spec_notes/reliability.md lists the whole robustness catalogue, once each.

The catalogue is section 3 of the shared reference ``reliability.md`` (188
cases in 15 groups); CI runs on a clean clone without that file, so its ids are
held here as counts per group. Each id must be a row of
``spec_notes/reliability.md`` and of no other note, exactly once; every row is
held to the rules of ``tests/test_spec_notes.py`` (whose checker is reused): a
``done`` row names tests that exist and code that imports, another row says
why. A parametrized test named with its parameters (``test_x[a-b]``) must be
one pytest really collects, not only a function of that name.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from test_spec_notes import _ROW, _TICKED, NOTES, ROOT, ROWS, _resolve, _test_exists

#: Cases per group of the catalogue (its section 3.16, "Catalogue size").
CATALOGUE = {
    "F": 9,
    "J": 23,
    "R": 10,
    "L": 11,
    "C": 19,
    "H": 9,
    "P": 18,
    "S": 16,
    "E": 12,
    "O": 14,
    "K": 10,
    "D": 10,
    "W": 9,
    "T": 9,
    "X": 9,
}
IDS = [f"{group}-{n:02d}" for group, count in CATALOGUE.items() for n in range(1, count + 1)]
NOTE = NOTES / "reliability.md"


def _listed_ids() -> list[str]:
    """The ids of the table rows of the note, in order, repeats kept."""
    return [m.group(1) for line in NOTE.read_text().splitlines() if (m := _ROW.match(line))]


def check_row(rid: str, row: dict[str, str]) -> list[str]:
    """What is wrong with one row (empty: nothing)."""
    problems: list[str] = []
    status = row["status"]
    tests = _TICKED.findall(row["tests"])
    code = _TICKED.findall(row["code"])
    if not row["requirement"]:
        problems.append(f"{rid}: no paraphrase")
    if status == "done":
        if not tests:
            problems.append(f"{rid}: a done row must name its tests")
        if not code:
            problems.append(f"{rid}: a done row must name the code")
    elif not (status.startswith("n/a: ") or status.startswith("later #")):
        problems.append(f"{rid}: status must be done, 'n/a: why' or 'later #N: why'")
    problems += [f"{rid}: test {t} does not exist" for t in tests if not _test_exists(t)]
    problems += [f"{rid}: symbol {c} does not resolve" for c in code if not _resolve(c)]
    return problems


def test_the_catalogue_has_188_cases() -> None:
    assert len(IDS) == len(set(IDS)) == 188


def test_every_case_is_listed_once_and_only_here() -> None:
    counts = Counter(_listed_ids())
    assert [rid for rid in IDS if counts[rid] == 0] == [], "catalogue cases missing"
    assert [rid for rid, n in counts.items() if n > 1] == [], "listed more than once"
    assert sorted(set(counts) - set(IDS)) == [], "rows that are no catalogue case"
    elsewhere = {rid: ROWS[rid]["file"] for rid in IDS if ROWS[rid]["file"] != NOTE.name}
    assert elsewhere == {}, "catalogue cases listed in another note"


@pytest.mark.parametrize("rid", IDS)
def test_each_case_is_backed(rid: str) -> None:
    assert check_row(rid, ROWS[rid]) == []


def test_parametrized_test_ids_are_collected() -> None:
    named = {t for rid in IDS for t in _TICKED.findall(ROWS[rid]["tests"]) if "[" in t}
    files = sorted({t.split("::")[0] for t in named})
    if not files:
        return
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()
    assert sorted(named - set(collected)) == []


def test_the_checker_rejects_what_it_must() -> None:
    good = dict(ROWS["F-01"])
    assert check_row("F-01", good) == []
    missing = {**good, "tests": "`tests/test_reliability_notes.py::test_that_does_not_exist`"}
    assert check_row("F-01", missing) == [
        "F-01: test tests/test_reliability_notes.py::test_that_does_not_exist does not exist"
    ]
    assert check_row("F-01", {**good, "tests": "—"}) == ["F-01: a done row must name its tests"]
    assert check_row("F-01", {**good, "code": "`trio_mcp.NoSuchThing`"}) == [
        "F-01: symbol trio_mcp.NoSuchThing does not resolve"
    ]
    assert check_row("F-01", {**good, "status": "partial"}) != []
    assert check_row("D-10", dict(ROWS["D-10"])) == []  # a later row naming nothing
