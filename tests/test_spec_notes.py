"""spec_notes/ cannot rot: every note points at code and tests that exist.

Each ``spec_notes/*.md`` table row is ``| ID | Rev | Kw | Status | Requirement |
Code | Tests |``. The ID is a checklist id (``VR-02``) or, for a part of the
checklist that has none, its section and a number (``§26.1-03``, ``§29-01``).
A ``done`` row names at least one importable symbol and at least one existing
test; ``n/a`` and ``later`` rows say why, and the code and tests they name
(what is done so far) must exist too. Every ``@pytest.mark.spec("ID")`` in the
tests names a listed id; the base protocol, lifecycle, timeout, cancellation,
progress and ping rows and every 2026-07-28 section of the requirements
checklist are all listed; and the §26.1 rows name every method of 2026-07-28.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from trio_mcp.protocol import methods_in

ROOT = Path(__file__).resolve().parent.parent
NOTES = ROOT / "spec_notes"

#: Rows per prefix in the requirements checklist (spec-requirements.md, "Requirement
#: counts"); every one of them must be listed, implemented or explained. The
#: 2026-07-28 sections (ME, VR, ST, PT, SB, DS, CA, HM) are complete too.
REQUIRED = {
    "BP": 27,
    "LC": 20,
    "TO": 7,
    "CN": 16,
    "PG": 12,
    "PI": 5,
    "SI": 16,
    "LG": 11,
    "ME": 17,
    "VR": 14,
    "ST": 7,
    "PT": 18,
    "SB": 14,
    "DS": 5,
    "CA": 8,
    "HM": 32,
    "TK": 19,
    "AU": 16,
}

#: The inputs a 2026-07-28 server asks for inside an ``InputRequiredResult``
#: (§26.1 lists them beside the JSON-RPC methods; they are not messages).
MRTR_INPUTS = {"elicitation/create", "sampling/createMessage", "roots/list"}

_ROW = re.compile(r"^\|\s*([A-Z]+-\d+|§\d+(?:\.\d+)?-\d+)\s*\|(.*)\|\s*$")
_TICKED = re.compile(r"`([^`]+)`")


def _rows() -> dict[str, dict[str, str]]:
    rows: dict[str, dict[str, str]] = {}
    for path in sorted(NOTES.glob("*.md")):
        for line in path.read_text().splitlines():
            match = _ROW.match(line)
            if not match:
                continue
            cells = [cell.strip() for cell in match.group(2).split("|")]
            assert len(cells) == 6, f"{path.name}: row {match.group(1)} needs 7 columns"
            rev, kw, status, requirement, code, tests = cells
            rid = match.group(1)
            assert rid not in rows, f"{rid} listed twice"
            rows[rid] = {
                "file": path.name,
                "rev": rev,
                "kw": kw,
                "status": status,
                "requirement": requirement,
                "code": code,
                "tests": tests,
            }
    return rows


ROWS = _rows()


def _test_exists(node_id: str) -> bool:
    file_part, _, name_part = node_id.partition("::")
    path = ROOT / file_part
    if not path.is_file() or not name_part:
        return False
    tree = ast.parse(path.read_text())
    scope: list[ast.stmt] = tree.body
    for name in name_part.split("::"):
        name = name.split("[")[0]  # parametrized ids name the function
        found = next(
            (
                node
                for node in scope
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and node.name == name
            ),
            None,
        )
        if found is None:
            return False
        scope = found.body if isinstance(found, ast.ClassDef) else []
    return True


def _resolve(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _spec_marks() -> dict[str, list[str]]:
    marks: dict[str, list[str]] = {}
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "spec"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "mark"
            ):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        where = f"{path.relative_to(ROOT)}:{node.lineno}"
                        marks.setdefault(arg.value, []).append(where)
    return marks


def test_notes_exist() -> None:
    assert len(ROWS) >= sum(REQUIRED.values())


@pytest.mark.parametrize(("prefix", "count"), sorted(REQUIRED.items()))
def test_every_required_row_is_listed(prefix: str, count: int) -> None:
    missing = [f"{prefix}-{n:02d}" for n in range(1, count + 1) if f"{prefix}-{n:02d}" not in ROWS]
    assert not missing, f"not in spec_notes/: {missing}"


@pytest.mark.parametrize("rid", sorted(ROWS))
def test_row_is_backed(rid: str) -> None:
    row = ROWS[rid]
    status = row["status"]
    assert row["requirement"], f"{rid}: no paraphrase"
    if status == "done":
        tests = _TICKED.findall(row["tests"])
        code = _TICKED.findall(row["code"])
        assert tests, f"{rid}: a done row must name its tests"
        assert code, f"{rid}: a done row must name the code"
        for node_id in tests:
            assert _test_exists(node_id), f"{rid}: test {node_id} does not exist"
        for symbol in code:
            assert _resolve(symbol), f"{rid}: symbol {symbol} does not resolve"
    else:
        assert re.match(r"^(n/a|later #\d+): \S", status), (
            f"{rid}: status must be 'done', 'n/a: why' or 'later #issue: why', not {status!r}"
        )
        # What a row that is not done names (the part done so far) exists too.
        for node_id in _TICKED.findall(row["tests"]):
            assert _test_exists(node_id), f"{rid}: test {node_id} does not exist"
        for symbol in _TICKED.findall(row["code"]):
            assert _resolve(symbol), f"{rid}: symbol {symbol} does not resolve"


def test_spec_marks_name_listed_ids() -> None:
    unknown = {rid: where for rid, where in _spec_marks().items() if rid not in ROWS}
    assert not unknown, f"@pytest.mark.spec ids missing from spec_notes/: {unknown}"


def test_the_2026_07_28_method_table_names_every_method() -> None:
    """Each method of 2026-07-28 (and each input of a round) has its own
    §26.1 row, whose paraphrase starts with its name in backticks."""
    named: dict[str, str] = {}
    for rid, row in ROWS.items():
        first = _TICKED.match(row["requirement"])
        if rid.startswith("§26.1-") and first:
            name = first.group(1)
            assert name not in named, f"{name} named by {named.get(name)} and {rid}"
            named[name] = rid
    expected = {spec.name for spec in methods_in("2026-07-28")} | MRTR_INPUTS
    assert set(named) >= expected, f"no §26.1 row for {sorted(expected - set(named))}"


def test_checker_rejects_a_missing_test() -> None:
    # The checker itself must be able to fail.
    assert not _test_exists("tests/test_spec_notes.py::test_that_does_not_exist")
    assert _test_exists("tests/test_spec_notes.py::test_checker_rejects_a_missing_test")
    assert not _resolve("trio_mcp.protocol.NoSuchThing")
    assert _resolve("trio_mcp.protocol.Connection.receive_data")
    assert _ROW.match("| §26.1-03 | 26-07 | — | done | x | y | z |")
    assert not _ROW.match("| Method | Kind | Direction |")
