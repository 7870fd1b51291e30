"""The public docstrings read well in ``help()`` on their own.

Walked from the public namespaces' ``__all__`` (those of
``tests/test_async_api_contract.py`` and ``trio_mcp.auth``), so a new public name
is covered without editing this file:

* every ``Args:`` entry names a parameter of the signature, and a callable with
  an ``Args:`` section lists every parameter (``self``/``cls`` aside); the keys of
  an ``**options: Unpack[...]`` are listed one by one;
* no default shown by ``help()`` is an object's address (a bare sentinel);
* no docstring sends the reader to a private module;
* spec ids appear only on the one ``Spec:`` line, the docstring's last
  paragraph (wrapped in the source when it is long), and each names a row of
  the spec map (``spec_notes/``); the ``#:`` comments of public attributes,
  which the API pages show, follow the same rule;
* every field of a public frozen record (a snapshot such as ``RequestRecord``
  or ``SessionStatistics``) is documented.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from sphinx.pycode import ModuleAnalyzer
from test_async_api_contract import NAMESPACES as CONTRACT_NAMESPACES

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
#: The documentation's own extension (docs/_ext/ is not a package mypy reads).
specmap: Any = importlib.import_module("trio_mcp_specmap")
NAMESPACES = (*CONTRACT_NAMESPACES, "trio_mcp.auth")

#: A requirement id of the spec map (``PT-12``, ``SEC-06``).
SPEC_ID = re.compile(r"\b[A-Z]{1,4}-\d{2}\b")
#: The one accepted form: ``Spec: PT-12, PT-13..PT-15.``
_ONE = r"[A-Z]{1,4}-\d{2}(\.\.[A-Z]{1,4}-\d{2})?"
SPEC_LINE = re.compile(rf"Spec: {_ONE}(, {_ONE})*\.")
#: A private module: ``trio_mcp._server``, ``trio_mcp.transports._http``, ``_cancel.py``.
PRIVATE = re.compile(r"trio_mcp(\.\w+)*\._\w|(?<![\w.])_[a-z]\w*\.py\b")
#: How ``repr`` shows an object without a repr of its own.
ADDRESS = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")
#: An ``Args:`` entry: ``name: ...``, ``name (type): ...``, ``*args: ...``.
ARG_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*(?:, \*{0,2}[A-Za-z_]\w*)*)(?: \([^)]*\))?:(\s|$)")
#: The snapshots a user reads to learn what happened (a request's record, a
#: session's or a line's statistics, a task's record and moves, a process event):
#: the frozen public classes whose name ends so, and ``Progress``. The wire
#: models of ``trio_mcp.types`` mirror the schema field for field and are not
#: records of this kind.
RECORD_SUFFIXES = ("Record", "Statistics", "Report", "Event", "Move", "Progress")


def _spec_ids() -> set[str]:
    row = re.compile(r"^\|\s*([A-Z]+-\d+)\s*\|")
    ids: set[str] = set()
    for note in (ROOT / "spec_notes").glob("*.md"):
        for line in note.read_text().splitlines():
            match = row.match(line)
            if match:
                ids.add(match.group(1))
    return ids


def _members(klass: type) -> Iterator[tuple[str, Any]]:
    """The public methods and properties a class defines (inherited ones from
    trio_mcp classes too), and its ``__init__``."""
    for owner in klass.__mro__:
        if not owner.__module__.startswith("trio_mcp"):
            continue
        for name, value in vars(owner).items():
            if name.startswith("_") and name != "__init__":
                continue
            if isinstance(value, property):
                yield name, value.fget
            elif isinstance(value, staticmethod | classmethod):
                yield name, value.__func__
            elif inspect.isfunction(value):
                yield name, value


def _public() -> dict[str, Any]:
    """``qualified name -> object`` for every public object and member, once each."""
    found: dict[str, Any] = {}
    seen: set[int] = set()
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        found[namespace] = module
        for attr in module.__all__:
            obj = getattr(module, attr)
            if id(obj) in seen or not str(getattr(obj, "__module__", "")).startswith("trio_mcp"):
                continue
            seen.add(id(obj))
            if not (inspect.isclass(obj) or callable(obj)):
                continue
            found[f"{namespace}.{attr}"] = obj
            if inspect.isclass(obj):
                for name, member in _members(obj):
                    if id(member) not in seen and member is not None:
                        seen.add(id(member))
                        found[f"{namespace}.{attr}.{name}"] = member
    return found


PUBLIC = _public()
CALLABLES = {
    name: obj
    for name, obj in PUBLIC.items()
    if not inspect.ismodule(obj) and (inspect.isclass(obj) or callable(obj))
}


def _doc(obj: Any) -> str:
    """The docstring as ``help()`` shows it (a class's own, never object's)."""
    doc = obj.__doc__ if inspect.isclass(obj) else inspect.getdoc(obj)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def _signature(obj: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _args_entries(doc: str) -> list[str] | None:
    """The names an ``Args:`` section lists, or None without one."""
    lines = doc.splitlines()
    if "Args:" not in lines:
        return None
    names: list[str] = []
    indent: int | None = None
    for line in lines[lines.index("Args:") + 1 :]:
        if not line.strip():
            continue
        here = len(line) - len(line.lstrip())
        if here == 0:
            break
        if indent is None:
            indent = here
        if here == indent:
            match = ARG_ENTRY.match(line.strip())
            assert match, f"not an Args entry: {line.strip()!r}"
            names += [name.strip().lstrip("*") for name in match.group(1).split(",")]
    return names


def _unpacked_keys(parameter: inspect.Parameter, obj: Any) -> set[str] | None:
    """The keys of a ``**options: Unpack[SomeTypedDict]``, or None."""
    if parameter.kind is not inspect.Parameter.VAR_KEYWORD:
        return None
    function = inspect.unwrap(obj)
    try:
        hint = typing.get_type_hints(function, include_extras=True).get(parameter.name)
    except NameError:
        # The TypedDict is imported for type checking only: find it by name.
        match = re.fullmatch(r"Unpack\[(\w+)\]", str(parameter.annotation))
        if match is None:
            return None
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("trio_mcp"):
                found = vars(module).get(match.group(1))
                if typing.is_typeddict(found):
                    return set(typing.get_type_hints(found))
        return None
    if typing.get_origin(hint) is not typing.Unpack:
        return None
    (typed_dict,) = typing.get_args(hint)
    return set(typing.get_type_hints(typed_dict))


def _args_problems(name: str, obj: Any) -> list[str]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    doc = _doc(obj)
    if inspect.isclass(obj) and "Args:" not in doc:
        doc = _doc(target) if target.__qualname__.startswith(obj.__qualname__) else ""
    signature = _signature(obj)
    if signature is None:
        return []
    entries = _args_entries(doc)
    parameters = {p.name: p for p in signature.parameters.values() if p.name not in ("self", "cls")}
    expected: set[str] = set()
    bare_unpack = []
    for parameter in parameters.values():
        keys = _unpacked_keys(parameter, target)
        if keys is None:
            expected.add(parameter.name)
        else:
            expected |= keys
            if entries is None or not keys <= set(entries):
                bare_unpack.append(parameter.name)
    problems = [f"{name}: **{p} lists none or only some of its options" for p in bare_unpack]
    if entries is None:
        return problems
    unpacked = {p.name for p in parameters.values() if _unpacked_keys(p, target) is not None}
    for entry in entries:
        if entry not in expected and entry not in unpacked:
            problems.append(f"{name}: Args names {entry!r}, not a parameter")
    for missing in sorted(expected - set(entries)):
        problems.append(f"{name}: Args does not list {missing!r}")
    return problems


def test_args_match_signatures() -> None:
    problems = [p for name, obj in CALLABLES.items() for p in _args_problems(name, obj)]
    assert not problems, "\n".join(problems)


def test_no_object_address_as_a_default() -> None:
    shown = []
    for name, obj in CALLABLES.items():
        signature = _signature(obj)
        if signature is None:
            continue
        for parameter in signature.parameters.values():
            if parameter.default is not parameter.empty and ADDRESS.search(repr(parameter.default)):
                shown.append(f"{name}({parameter.name}={parameter.default!r})")
    assert not shown, "\n".join(shown)


def test_no_private_module_in_docstrings() -> None:
    found = [
        f"{name}: {match.group(0)}"
        for name, obj in PUBLIC.items()
        for match in [PRIVATE.search(_doc(obj))]
        if match
    ]
    assert not found, "\n".join(found)


def _spec_problems(name: str, doc: str, known: set[str]) -> list[str]:
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", doc) if p.strip()]
    problems = []
    for index, paragraph in enumerate(paragraphs):
        if paragraph.startswith("Spec:"):
            if index != len(paragraphs) - 1:
                problems.append(f"{name}: the Spec: line is not the last paragraph")
            if not SPEC_LINE.fullmatch(" ".join(paragraph.split())):
                problems.append(f"{name}: not one 'Spec: XX-01, XX-02.' line: {paragraph!r}")
            unknown = set(SPEC_ID.findall(paragraph)) - known
            if unknown:
                problems.append(f"{name}: no spec map row for {sorted(unknown)}")
            continue
        for line in paragraph.splitlines():
            if SPEC_ID.search(line):
                problems.append(f"{name}: spec id outside the Spec: line: {line.strip()!r}")
    return problems


def _attribute_docs() -> dict[str, str]:
    """The ``#:`` comments of the public classes' attributes (the API pages show
    them beside the docstrings), by qualified name."""
    found = {}
    for name, obj in PUBLIC.items():
        if not inspect.isclass(obj):
            continue
        for owner in obj.__mro__:
            if not owner.__module__.startswith("trio_mcp"):
                continue
            docs = ModuleAnalyzer.for_module(owner.__module__).find_attr_docs()
            for (cls, attr), lines in docs.items():
                if cls == owner.__qualname__ and not attr.startswith("_"):
                    found[f"{name}.{attr}"] = "\n".join(lines).strip()
    return found


def test_spec_ids_only_on_the_spec_line() -> None:
    known = _spec_ids()
    docs = {name: _doc(obj) for name, obj in PUBLIC.items()} | _attribute_docs()
    problems = [p for name, doc in docs.items() for p in _spec_problems(name, doc, known)]
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def test_the_docs_link_every_id_of_the_spec_line() -> None:
    """The docs build renders each id of a ``Spec:`` paragraph, wrapped or not,
    as a link to its spec-map row, with the table the build reads."""
    known = specmap.spec_pages(ROOT)
    doc = inspect.getdoc(importlib.import_module("trio_mcp").open_client) or ""
    lines = doc.splitlines()
    linked = specmap.link_spec_ids(lines, known)
    spec_at = next(i for i, line in enumerate(lines) if line.startswith("Spec:"))
    assert linked[:spec_at] == lines[:spec_at]
    spec = " ".join(linked[spec_at:])
    ids = SPEC_ID.findall(" ".join(lines[spec_at:]))
    assert len(ids) > 12  # wrapped over two lines
    assert re.findall(r":spec:`([A-Z]+-\d{2})`", spec) == ids
    assert all(known[i] for i in ids)


def _records() -> dict[str, type]:
    records = {}
    for name, obj in PUBLIC.items():
        if not inspect.isclass(obj) or not name.endswith(RECORD_SUFFIXES):
            continue
        if attrs.has(obj) and obj.__setattr__ is not object.__setattr__:
            records[name] = obj
    return records


def _field_docs(klass: type) -> set[str]:
    """The fields a ``#:`` comment documents, or the class docstring's
    ``Attributes:`` section lists."""
    documented: set[str] = set()
    for owner in klass.__mro__:
        if not owner.__module__.startswith("trio_mcp"):
            continue
        docs = ModuleAnalyzer.for_module(owner.__module__).find_attr_docs()
        documented |= {attr for (cls, attr) in docs if cls == owner.__qualname__}
        text = owner.__doc__ or ""
        if "Attributes:" in text:
            section = inspect.cleandoc(text).split("Attributes:", 1)[1]
            documented |= {
                m.group(1) for m in re.finditer(r"^ {4}(\w+)(?: \([^)]*\))?:", section, re.M)
            }
    return documented


@pytest.mark.parametrize("name", sorted(_records()))
def test_record_fields_are_documented(name: str) -> None:
    klass = _records()[name]
    fields = [field.name for field in attrs.fields(klass)]
    missing = [field for field in fields if field not in _field_docs(klass)]
    assert not missing, f"{name}: undocumented fields {missing}"
