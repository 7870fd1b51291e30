"""Content blocks carried by tool results, prompt messages and sampling.

Mirrors the spec pages ``server/tools`` (section "Tool Result") and
``server/prompts`` (section "Data Types"), and the schema.ts definitions
``TextContent``, ``ImageContent``, ``AudioContent``, ``ResourceLink``,
``EmbeddedResource``, ``ContentBlock`` and the resource contents of
``server/resources``. Binary data stays base64 text, as on the wire; use
``from_bytes`` / ``decoded()`` to convert.
"""

import base64
import binascii
from typing import Literal, Self, TypeAlias

import attrs

from ._base import Annotations, Icon, Meta

__all__ = [
    "Resource",
    "ResourceContents",
    "TextResourceContents",
    "BlobResourceContents",
    "TextContent",
    "ImageContent",
    "AudioContent",
    "ResourceLink",
    "EmbeddedResource",
    "ContentBlock",
]


def _encode(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"invalid base64 data: {exc}") from None


@attrs.frozen(kw_only=True)
class Resource:
    """A resource the server can read (``resources/list``); base of :class:`ResourceLink`.

    Lives here rather than in :mod:`.resources` because ``ResourceLink`` extends it.
    """

    #: URI of the resource.
    uri: str
    #: Programmatic name.
    name: str
    #: Display name (2025-06-18).
    title: str | None = None
    #: Description of what the resource represents.
    description: str | None = None
    #: MIME type, if known.
    mime_type: str | None = None
    #: Client hints (2024-11-05 had them via ``Annotated``).
    annotations: Annotations | None = None
    #: Raw size in bytes, if known.
    size: int | None = None
    #: Icons (2025-11-25).
    icons: list[Icon] | None = None
    #: ``_meta`` (2025-06-18).
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class ResourceContents:
    """Fields shared by text and binary resource contents."""

    #: URI of the resource.
    uri: str
    #: MIME type, if known.
    mime_type: str | None = None
    #: ``_meta`` (2025-06-18).
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class TextResourceContents(ResourceContents):
    """Contents of a text resource (told from a blob by its ``text`` key)."""

    #: The text.
    text: str


@attrs.frozen(kw_only=True)
class BlobResourceContents(ResourceContents):
    """Contents of a binary resource (told from text by its ``blob`` key)."""

    #: Base64-encoded bytes.
    blob: str

    @classmethod
    def from_bytes(cls, raw: bytes, *, uri: str, mime_type: str | None = None) -> Self:
        """Build from raw bytes, base64-encoding them."""
        return cls(uri=uri, mime_type=mime_type, blob=_encode(raw))

    def decoded(self) -> bytes:
        """The raw bytes. Raises ``ValueError`` on invalid base64."""
        return _decode(self.blob)


@attrs.frozen(kw_only=True)
class TextContent:
    """Text content."""

    type: Literal["text"] = "text"
    #: The text.
    text: str
    #: Client hints.
    annotations: Annotations | None = None
    #: ``_meta`` (2025-06-18).
    meta: Meta | None = None


@attrs.frozen(kw_only=True)
class ImageContent:
    """An image, base64-encoded."""

    type: Literal["image"] = "image"
    #: Base64-encoded image bytes.
    data: str
    #: MIME type of the image, e.g. ``image/png``.
    mime_type: str
    #: Client hints.
    annotations: Annotations | None = None
    #: ``_meta`` (2025-06-18).
    meta: Meta | None = None

    @classmethod
    def from_bytes(cls, raw: bytes, mime_type: str) -> Self:
        """Build from raw image bytes, base64-encoding them."""
        return cls(data=_encode(raw), mime_type=mime_type)

    def decoded(self) -> bytes:
        """The raw image bytes. Raises ``ValueError`` on invalid base64."""
        return _decode(self.data)


@attrs.frozen(kw_only=True)
class AudioContent:
    """Audio, base64-encoded (2025-03-26)."""

    type: Literal["audio"] = "audio"
    #: Base64-encoded audio bytes.
    data: str
    #: MIME type of the audio, e.g. ``audio/wav``.
    mime_type: str
    #: Client hints.
    annotations: Annotations | None = None
    #: ``_meta`` (2025-06-18).
    meta: Meta | None = None

    @classmethod
    def from_bytes(cls, raw: bytes, mime_type: str) -> Self:
        """Build from raw audio bytes, base64-encoding them."""
        return cls(data=_encode(raw), mime_type=mime_type)

    def decoded(self) -> bytes:
        """The raw audio bytes. Raises ``ValueError`` on invalid base64."""
        return _decode(self.data)


@attrs.frozen(kw_only=True)
class ResourceLink(Resource):
    """A link to a resource the client may read (2025-06-18)."""

    type: Literal["resource_link"] = "resource_link"


@attrs.frozen(kw_only=True)
class EmbeddedResource:
    """Resource contents embedded in a message or result."""

    type: Literal["resource"] = "resource"
    #: The contents (text or blob).
    resource: TextResourceContents | BlobResourceContents
    #: Client hints.
    annotations: Annotations | None = None
    #: ``_meta`` (2025-06-18).
    meta: Meta | None = None


#: Any content block; told apart by ``type``. ``AudioContent`` is 2025-03-26+ and
#: ``ResourceLink`` 2025-06-18+.
ContentBlock: TypeAlias = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
)
