"""The quick argument check agrees with jsonschema: sound always, complete for simple schemas."""

from __future__ import annotations

from typing import Any, Literal

from hypothesis import given
from hypothesis import strategies as st

from trio_mcp._server._context import Context
from trio_mcp._server._schema import FunctionSignature
from trio_mcp._session import RequestContext


def _tool(
    name: str,
    seats: int,
    kind: Literal["a", "b", 1] = "a",
    flag: bool = False,
    ratio: float | None = None,
) -> None: ...


SIG = FunctionSignature.from_function(_tool, context_types=(Context, RequestContext))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=4,
)
KEYS = st.sampled_from(["name", "seats", "kind", "flag", "ratio", "other"])


@given(st.dictionaries(KEYS, JSON | st.sampled_from(["a", "b", 1, True, 1.0])))
def test_quick_check_is_sound(arguments: dict[str, Any]) -> None:
    assert SIG.quick_check is not None
    if SIG.quick_check(arguments):
        assert SIG.validator.is_valid(arguments)


VALID = st.fixed_dictionaries(
    {"name": st.text(max_size=3), "seats": st.integers()},
    optional={
        "kind": st.sampled_from(["a", "b", 1]),
        "flag": st.booleans(),
        "ratio": st.none() | st.floats(allow_nan=False, allow_infinity=False) | st.integers(),
    },
)


@given(VALID)
def test_quick_check_is_complete_for_a_simple_schema(arguments: dict[str, Any]) -> None:
    # Every property of _tool is simple, so the quick check decides alone: it must
    # accept every valid argument set, or the fast path never runs.
    assert SIG.quick_check is not None
    assert SIG.validator.is_valid(arguments)
    assert SIG.quick_check(arguments)


def test_quick_check_accepts_the_minimal_call() -> None:
    assert SIG.quick_check is not None
    assert SIG.quick_check({"name": "x", "seats": 1})
