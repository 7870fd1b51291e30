"""Prompts: ``prompts/list``, ``prompts/get`` and the list-changed notification.

Mirrors the spec page ``server/prompts`` and the schema.ts definitions
``Prompt``, ``PromptArgument``, ``PromptMessage``, ``ListPromptsResult``,
``GetPromptRequestParams`` and ``GetPromptResult``.

``prompts/list`` takes :class:`~trio_mcp.types.PaginatedRequestParams`;
``notifications/prompts/list_changed`` takes
:class:`~trio_mcp.types.NotificationParams`.
"""

import attrs

from ._base import Icon, InputResponses, Meta, PaginatedResult, RequestParams, Result, Role
from .content import ContentBlock

__all__ = [
    "PromptArgument",
    "Prompt",
    "PromptMessage",
    "ListPromptsResult",
    "GetPromptRequestParams",
    "GetPromptResult",
]


@attrs.frozen(kw_only=True)
class PromptArgument:
    """An argument a prompt accepts."""

    #: Programmatic name.
    name: str
    #: Display name (2025-06-18).
    title: str | None = None
    #: Description.
    description: str | None = None
    #: Whether it must be given.
    required: bool | None = None


@attrs.frozen(kw_only=True)
class Prompt:
    """A prompt or prompt template the server offers."""

    #: Programmatic name.
    name: str
    #: Display name (2025-06-18).
    title: str | None = None
    #: Description.
    description: str | None = None
    #: Arguments for templating.
    arguments: list[PromptArgument] | None = None
    #: Icons (2025-11-25).
    icons: list[Icon] | None = None
    #: ``_meta`` (2025-06-18).
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class PromptMessage:
    """A message of a prompt. Content options grew per revision (see ContentBlock)."""

    role: Role
    content: ContentBlock


@attrs.frozen(kw_only=True)
class ListPromptsResult(PaginatedResult):
    """Result of ``prompts/list``."""

    prompts: list[Prompt]


@attrs.frozen(kw_only=True)
class GetPromptRequestParams(RequestParams):
    """Params of ``prompts/get``.

    2026-07-28 adds ``InputResponseRequestParams`` (a retried get after an
    input-required round).
    """

    #: Name of the prompt.
    name: str
    #: Template arguments (string values only).
    arguments: dict[str, str] | None = None
    #: ``inputResponses`` of a retried request (2026-07-28): the answers to the
    #: previous round's ``inputRequests``, under the same keys.
    input_responses: InputResponses | None = None
    #: ``requestState`` (2026-07-28): the previous round's opaque state, echoed.
    request_state: str | None = None


@attrs.frozen(kw_only=True)
class GetPromptResult(Result):
    """Result of ``prompts/get``."""

    #: Description of the prompt.
    description: str | None = None
    messages: list[PromptMessage]
