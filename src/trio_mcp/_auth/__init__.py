"""Authorization: the HTTP server as an OAuth 2.1 resource server.

Private package; the public names are re-exported where they are used.
Modules that need the ``auth`` extra (joserfc, Authlib) import it themselves,
so importing this package never does.
"""
