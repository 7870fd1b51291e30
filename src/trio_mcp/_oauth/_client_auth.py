"""Token endpoint client authentication (OAuth 2.1 §2.4), by Authlib.

``client_secret_basic``, ``client_secret_post`` and ``none`` are Authlib's
``ClientAuth`` encoders; the form is urlencoded by Authlib too. Kept apart so
Authlib is imported only when a token request is made (the ``auth`` extra).

Spec: AU-14 (client authentication at the token endpoint).
"""

from __future__ import annotations

from collections.abc import Mapping

from .._errors import AuthorizationFailed

#: The methods this module sends; private_key_jwt and the others belong to
#: the extension grants, which prepare their own assertions.
METHODS = ("client_secret_basic", "client_secret_post", "none")


def prepare_token_request(
    client_id: str | None, client_secret: str | None, method: str, form: Mapping[str, str]
) -> tuple[dict[str, str], str]:
    """Headers and urlencoded body of a token request from the client
    *client_id* (None: no client authentication) with *method*."""
    from authlib.common.urls import url_encode
    from authlib.oauth2.auth import ClientAuth

    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Accept": "application/json",
    }
    body: str = url_encode(list(form.items()))
    if client_id is None:
        return headers, body
    if method not in METHODS:
        raise AuthorizationFailed(f"token endpoint auth method {method!r} is not supported")
    if method != "none" and not client_secret:
        raise AuthorizationFailed(f"{method} needs a client secret and the client has none")
    auth = ClientAuth(client_id, client_secret, method)
    _, headers, body = auth.prepare("POST", "", headers, body)
    return dict(headers), str(body)
