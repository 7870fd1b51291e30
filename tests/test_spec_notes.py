"""spec_notes/ cannot rot: every note points at code and tests that exist.

Each ``spec_notes/*.md`` table row is ``| ID | Rev | Kw | Status | Requirement |
Code | Tests |``. A ``done`` row names at least one importable symbol and at
least one existing test; ``n/a`` and ``later`` rows say why. Every
``@pytest.mark.spec("ID")`` in the tests names a listed id, and the base
protocol, lifecycle, timeout, cancellation, progress and ping rows of the
requirements checklist are all listed.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTES = ROOT / "spec_notes"

#: Rows per prefix in the requirements checklist (spec-requirements.md, "Requirement
#: counts"); every one of them must be listed, implemented or explained.
REQUIRED = {"BP": 27, "LC": 20, "TO": 7, "CN": 16, "PG": 12, "PI": 5}

_ROW = re.compile(r"^\|\s*([A-Z]+-\d+)\s*\|(.*)\|\s*$")
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


def test_spec_marks_name_listed_ids() -> None:
    unknown = {rid: where for rid, where in _spec_marks().items() if rid not in ROWS}
    assert not unknown, f"@pytest.mark.spec ids missing from spec_notes/: {unknown}"


def test_checker_rejects_a_missing_test() -> None:
    # The checker itself must be able to fail.
    assert not _test_exists("tests/test_spec_notes.py::test_that_does_not_exist")
    assert _test_exists("tests/test_spec_notes.py::test_checker_rejects_a_missing_test")
    assert not _resolve("trio_mcp.protocol.NoSuchThing")
    assert _resolve("trio_mcp.protocol.Connection.receive_data")
