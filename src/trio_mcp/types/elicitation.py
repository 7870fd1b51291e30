"""Elicitation: ``elicitation/create`` and ``notifications/elicitation/complete``.

Mirrors the spec page ``client/elicitation`` (2025-06-18+) and the schema.ts
definitions ``ElicitRequestFormParams``, ``ElicitRequestURLParams``,
``ElicitRequestParams``, ``ElicitResult``, ``ElicitationCompleteNotification``
and ``URLElicitationRequiredError``, and the 2026-07-28 ``ElicitRequestURLParams``
(:class:`ModernElicitRequestURLParams`) and ``ElicitRequestParams``
(:data:`ModernElicitRequestParams`).

``requested_schema`` is kept as a raw JSON Schema object (like a tool's input
schema); the spec restricts it to flat primitive properties.
"""

from typing import Literal, TypeAlias

import attrs

from ._base import ElicitValue, JSONObject, NotificationParams, Result
from ._task_params import TaskAugmentedRequestParams

__all__ = [
    "ElicitRequestFormParams",
    "ElicitRequestURLParams",
    "ElicitRequestParams",
    "ElicitAction",
    "ElicitValue",
    "ElicitResult",
    "ElicitationCompleteNotificationParams",
    "URLElicitationRequiredErrorData",
    "ModernElicitRequestURLParams",
    "ModernElicitRequestParams",
]


@attrs.frozen(kw_only=True)
class ElicitRequestFormParams(TaskAugmentedRequestParams):
    """Params of ``elicitation/create`` in form mode (the only mode in 2025-06-18)."""

    #: ``"form"`` or absent (2025-11-25 added the key; absent means form).
    mode: Literal["form"] | None = None
    #: What to ask the user.
    message: str
    #: Restricted JSON Schema (``type: "object"``, flat primitive properties).
    requested_schema: JSONObject


@attrs.frozen(kw_only=True)
class ElicitRequestURLParams(TaskAugmentedRequestParams):
    """Params of ``elicitation/create`` in URL mode (2025-11-25)."""

    mode: Literal["url"] = "url"
    #: Why the user should open the URL.
    message: str
    #: Id matched by ``notifications/elicitation/complete``.
    elicitation_id: str
    #: URL the user should open.
    url: str


#: Params of ``elicitation/create``; URL mode is told apart by its ``url`` and
#: ``elicitationId`` keys, form mode by ``requestedSchema``.
ElicitRequestParams: TypeAlias = ElicitRequestFormParams | ElicitRequestURLParams

#: The user's answer.
ElicitAction: TypeAlias = Literal["accept", "decline", "cancel"]


@attrs.frozen(kw_only=True)
class ElicitResult(Result):
    """Result of ``elicitation/create``."""

    action: ElicitAction
    #: Submitted form data, for ``accept`` in form mode.
    content: dict[str, ElicitValue] | None = None


@attrs.frozen(kw_only=True)
class ElicitationCompleteNotificationParams(NotificationParams):
    """Params of ``notifications/elicitation/complete`` (2025-11-25)."""

    #: Id of the completed URL elicitation.
    elicitation_id: str


@attrs.frozen(kw_only=True)
class URLElicitationRequiredErrorData:
    """``error.data`` of a -32042 URL-elicitation-required error (2025-11-25)."""

    elicitations: list[ElicitRequestURLParams]


@attrs.frozen(kw_only=True)
class ModernElicitRequestURLParams:
    """Params of a URL-mode elicitation in 2026-07-28 (schema.ts ``ElicitRequestURLParams``).

    A separate class because the 2026-07-28 definition is incompatible with the
    2025-11-25 one of the same name (:class:`ElicitRequestURLParams`): it has no
    ``elicitationId`` (``notifications/elicitation/complete`` and the -32042
    error are gone; the answer arrives in the retried request), no ``task`` and
    no ``_meta``. It only travels inside an ``InputRequiredResult``.
    """

    mode: Literal["url"] = "url"
    #: Why the user should open the URL.
    message: str
    #: URL the user should open.
    url: str


#: Params of ``elicitation/create`` as an input request of 2026-07-28 (schema.ts
#: ``ElicitRequestParams``). The form mode is unchanged but for ``task`` and
#: ``_meta``, which stay optional in :class:`ElicitRequestFormParams`.
ModernElicitRequestParams: TypeAlias = ElicitRequestFormParams | ModernElicitRequestURLParams
