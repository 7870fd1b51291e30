"""``WWW-Authenticate`` challenges (RFC 9110 §11.6.1), parsed for the Bearer scheme.

The grammar is RFC 9110's: challenges separated by commas, each an
auth-scheme followed by a token68 or by comma-separated auth-params whose
values are tokens or quoted strings (with backslash escapes). A server's
header is peer input: anything malformed is :class:`ChallengeError` (an
MCPError) naming where it went wrong, never another exception, and the
parser is linear in the header's length (bounded by the caller).

Spec: AU-04 (``resource_metadata``), AU-05 (``scope``), AU-12 (``error``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from .._errors import AuthorizationFailed

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_OWS = re.compile(r"[ \t]*")
_QUOTED = re.compile(r'"((?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\[\t\x20-\x7e\x80-\xff])*)"')
_ESCAPE = re.compile(r"\\(.)")

#: Longest header parsed; a longer one is refused (peer input).
MAX_HEADER = 8192


class ChallengeError(AuthorizationFailed):
    """A ``WWW-Authenticate`` header that does not follow RFC 9110's grammar."""


@attrs.frozen
class Challenge:
    """One challenge: its scheme (lower case), token68 or params (names lower case)."""

    scheme: str
    params: dict[str, str] = attrs.field(factory=dict)
    token68: str | None = None

    def get(self, name: str) -> str | None:
        return self.params.get(name)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def ows(self) -> None:
        match = _OWS.match(self.text, self.pos)
        assert match is not None  # [ \t]* always matches
        self.pos = match.end()

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        match = pattern.match(self.text, self.pos)
        if match is not None:
            self.pos = match.end()
        return match

    def fail(self, what: str) -> ChallengeError:
        return ChallengeError(f"malformed WWW-Authenticate header: {what} at offset {self.pos}")


def parse_www_authenticate(headers: Iterable[str]) -> list[Challenge]:
    """Every challenge of the ``WWW-Authenticate`` header fields *headers*.

    Raises :class:`ChallengeError` for a malformed or overlong header.
    """
    challenges: list[Challenge] = []
    for header in headers:
        if len(header) > MAX_HEADER:
            raise ChallengeError(f"WWW-Authenticate header longer than {MAX_HEADER} characters")
        challenges.extend(_parse_one(header))
    return challenges


def _parse_one(header: str) -> list[Challenge]:
    s = _Scanner(header)
    challenges: list[Challenge] = []
    while True:
        # Empty list elements are allowed (RFC 9110 §5.6.1).
        s.ows()
        while s.peek() == ",":
            s.pos += 1
            s.ows()
        if s.at_end():
            return challenges
        scheme = s.take(_TOKEN)
        if scheme is None:
            raise s.fail("expected an auth-scheme")
        challenge = Challenge(scheme.group().lower())
        challenges.append(challenge)
        if s.at_end() or s.peek() == ",":
            continue
        if s.peek() != " ":
            raise s.fail("expected a space after the auth-scheme")
        s.ows()
        if s.at_end():
            return challenges
        _parse_params(s, challenge)


def _parse_params(s: _Scanner, challenge: Challenge) -> None:
    """The token68 or the auth-params after a scheme, up to the next challenge."""
    start = s.pos
    # A token68 ("Negotiate abc==") runs to the end or the next comma; anything
    # else is auth-params (RFC 9110 §11.2).
    token68 = s.take(_TOKEN68)
    if token68 is not None:
        s.ows()
        if s.at_end() or s.peek() == ",":
            object.__setattr__(challenge, "token68", token68.group())
            return
    s.pos = start
    name = s.take(_TOKEN)
    s.ows()
    if name is None or s.peek() != "=":
        raise s.fail("expected a token68 or an auth-param")
    while True:
        s.pos += 1  # the "="
        s.ows()
        if s.peek() == '"':
            quoted = s.take(_QUOTED)
            if quoted is None:
                raise s.fail("unterminated or invalid quoted-string")
            value = _ESCAPE.sub(r"\1", quoted.group(1))
        else:
            token = s.take(_TOKEN)
            if token is None:
                raise s.fail("expected a token or a quoted-string")
            value = token.group()
        key = name.group().lower()
        if key in challenge.params:
            # RFC 9110: each parameter name MUST occur once per challenge.
            raise s.fail(f"parameter {key!r} repeated")
        challenge.params[key] = value
        s.ows()
        if s.at_end():
            return
        if s.peek() != ",":
            raise s.fail("expected a comma between auth-params")
        # After the comma: another auth-param of this challenge, or a new challenge.
        s.pos += 1
        s.ows()
        while s.peek() == ",":
            s.pos += 1
            s.ows()
        if s.at_end():
            return
        mark = s.pos
        name = s.take(_TOKEN)
        s.ows()
        if name is None or s.peek() != "=":
            s.pos = mark  # a new challenge starts here
            return


def bearer_challenge(headers: Iterable[str]) -> Challenge | None:
    """The Bearer challenge of *headers* (the first), or None.

    A malformed header counts as no challenge: the client goes on with
    well-known discovery (AU-04) rather than failing on a bad header.
    """
    try:
        challenges = parse_www_authenticate(headers)
    except ChallengeError:
        return None
    for challenge in challenges:
        if challenge.scheme in ("bearer", "dpop"):
            return challenge
    return None
