"""Completion: ``completion/complete`` (2025-03-26 capability, request since 2024-11-05).

Mirrors the spec page ``server/utilities/completion`` and the schema.ts
definitions ``CompleteRequestParams``, ``CompleteResult``, ``PromptReference``
and ``ResourceTemplateReference`` (named ``ResourceReference`` before
2025-06-18; same wire shape). The inline ``argument``, ``context`` and
``completion`` objects get named classes.
"""

from typing import Literal, TypeAlias

import attrs

from ._base import RequestParams, Result

__all__ = [
    "PromptReference",
    "ResourceTemplateReference",
    "ResourceReference",
    "CompletionArgument",
    "CompletionContext",
    "CompleteRequestParams",
    "Completion",
    "CompleteResult",
]


@attrs.frozen(kw_only=True)
class PromptReference:
    """Reference to a prompt."""

    type: Literal["ref/prompt"] = "ref/prompt"
    #: Name of the prompt.
    name: str
    #: Display name (2025-06-18).
    title: str | None = None


@attrs.frozen(kw_only=True)
class ResourceTemplateReference:
    """Reference to a resource template."""

    type: Literal["ref/resource"] = "ref/resource"
    #: URI or URI template.
    uri: str


#: The 2024-11-05 / 2025-03-26 name of :class:`ResourceTemplateReference`.
ResourceReference: TypeAlias = ResourceTemplateReference


@attrs.frozen(kw_only=True)
class CompletionArgument:
    """The argument being completed."""

    #: Name of the argument.
    name: str
    #: Value typed so far.
    value: str


@attrs.frozen(kw_only=True)
class CompletionContext:
    """Extra context for completion (2025-06-18)."""

    #: Values of arguments already resolved.
    arguments: dict[str, str] | None = None


@attrs.frozen(kw_only=True)
class CompleteRequestParams(RequestParams):
    """Params of ``completion/complete``."""

    ref: PromptReference | ResourceTemplateReference
    argument: CompletionArgument
    #: (2025-06-18)
    context: CompletionContext | None = None


@attrs.frozen(kw_only=True)
class Completion:
    """The completion values."""

    #: At most 100 values.
    values: list[str]
    #: Total number of options, possibly more than sent.
    total: int | None = None
    #: More options exist beyond those sent.
    has_more: bool | None = None


@attrs.frozen(kw_only=True)
class CompleteResult(Result):
    """Result of ``completion/complete``."""

    completion: Completion
