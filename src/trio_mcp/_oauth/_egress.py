"""Where OAuth discovery may connect: the SSRF guard of the authorization traffic.

A server's 401 names the protected resource metadata URL, the metadata names
the authorization server, the authorization server's metadata names its
endpoints: every URL the client fetches while authorizing comes from a peer.
A client running inside a data centre must not let those URLs make it fetch
the cloud's instance metadata (``169.254.169.254``) or a service on the
private network (SEC-06). :class:`EgressPolicy` says which addresses the
provider's authorization traffic may reach, and :meth:`EgressPolicy.hooks`
enforces it on an ``httpx.AsyncClient`` in two steps:

1. before a request is sent, its host is resolved (an address literal is
   taken as it is) and *every* address it resolves to must be allowed;
2. when the answer arrives, the address the connection really reached (the
   socket's peer) must be allowed too, or the answer is thrown away unread.

The second step closes the DNS time-of-check/time-of-use gap: a name that
resolves to a public address for the check and to a private one for the
connection (DNS rebinding) is caught at the socket, before a byte of the
answer is used. What it cannot undo is the request itself having been sent
to that address; the requests of discovery are GETs and POSTs to token and
registration endpoints, none of which carry a secret before the endpoint was
itself discovered through allowed addresses.

The default refuses link-local (the metadata service), multicast, reserved
and unspecified addresses always; loopback only when the MCP server itself
is on a loopback host (local development and tests); private ranges
(RFC 1918, unique local IPv6) only when allowed. Redirects are never
followed by the provider's client, so every hop is checked as a request of
its own (SEC-06: "validate every redirect hop").

Spec: SEC-06.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx
import trio

from .._errors import AuthorizationFailed

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Hook = Callable[[Any], Awaitable[None]]

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "127.0.0.1", "::1", "[::1]"})


def is_loopback_host(host: str) -> bool:
    """*host* (a URL's host) names this machine: ``localhost`` or a loopback literal."""
    host = host.strip("[]").lower()
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@attrs.frozen
class EgressPolicy:
    """Which addresses the authorization traffic may connect to.

    Args:
        allow_loopback: ``127.0.0.0/8`` and ``::1``.
        allow_private: RFC 1918, unique local IPv6 (``fc00::/7``), CGNAT
            (``100.64.0.0/10``); for an authorization server on an intranet.
        allow_link_local: ``169.254.0.0/16`` and ``fe80::/10``, where cloud
            instance metadata lives; leave it off unless you mean it.

    :meth:`for_server` builds the default for an MCP server URL.

    Spec: SEC-06.
    """

    allow_loopback: bool = False
    allow_private: bool = False
    allow_link_local: bool = False

    @classmethod
    def for_server(cls, server_url: str) -> EgressPolicy:
        """The default for *server_url*: loopback allowed only for a server on a
        loopback host (the authorization server of a local server is local too),
        private and link-local addresses refused."""
        host = httpx.URL(server_url).host
        return cls(allow_loopback=is_loopback_host(host))

    def refusal(self, address: Address) -> str | None:
        """Why *address* may not be reached, or ``None`` when it may."""
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address.is_loopback:
            return None if self.allow_loopback else "a loopback address"
        if address.is_link_local:
            return None if self.allow_link_local else "a link-local address"
        if address.is_multicast or address.is_unspecified or address.is_reserved:
            return "a multicast, unspecified or reserved address"
        if address.is_private or address in _SHARED:
            return None if self.allow_private else "a private address"
        if not address.is_global:
            return "an address that is not globally routable"
        return None

    def check(self, url: str, address: Address) -> None:
        """Raise :class:`~trio_mcp.auth.AuthorizationFailed` when *address* (which
        *url*'s host resolved to or connected to) is refused."""
        why = self.refusal(address)
        if why is not None:
            raise AuthorizationFailed(
                f"refused to fetch {url!r} while authorizing: it reaches {address}, {why} "
                "(OAuthProvider(egress=EgressPolicy(...)) allows it)"
            )

    async def resolve_and_check(self, url: httpx.URL) -> None:
        """Resolve *url*'s host and check every address it has.

        Cancellation: the lookup runs in a thread (``getaddrinfo``); a cancel
        abandons it, nothing is sent.
        """
        host = url.host
        try:
            addresses: list[Address] = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                infos = await trio.socket.getaddrinfo(
                    host, url.port or 443, type=trio.socket.SOCK_STREAM
                )
            except OSError as exc:
                raise AuthorizationFailed(
                    f"cannot resolve {host!r} while authorizing: {exc}"
                ) from None
            addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
        for address in addresses:
            self.check(str(url), address)

    def hooks(self) -> dict[str, list[Hook]]:
        """``event_hooks`` for an ``httpx.AsyncClient`` that enforce this policy
        before each request and on the socket each answer came from."""

        async def before(request: httpx.Request) -> None:
            await self.resolve_and_check(request.url)

        async def after(response: httpx.Response) -> None:
            peer = _peer_address(response)
            if peer is None:
                return
            try:
                self.check(str(response.request.url), peer)
            except AuthorizationFailed:
                await response.aclose()
                raise

        return {"request": [before], "response": [after]}


#: RFC 6598 shared address space (carrier-grade NAT): not global, not "private".
_SHARED = ipaddress.ip_network("100.64.0.0/10")


def _peer_address(response: httpx.Response) -> Address | None:
    """The address the answer's connection really reached, when the transport says."""
    stream = response.extensions.get("network_stream")
    if stream is None:
        return None  # not a socket (an in-process transport): nothing was connected to
    peer = stream.get_extra_info("server_addr")
    if not peer:
        return None
    try:
        return ipaddress.ip_address(peer[0])
    except (ValueError, TypeError, IndexError):
        return None
