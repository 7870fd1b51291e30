"""Example servers that ship with trio_mcp, each runnable with ``python -m``.

* :mod:`trio_mcp.examples.paper_trail`: a dual-era order-lookup server with a
  slow tool, a progress-reporting one and one that asks the user;
  ``trio-mcp demo`` spawns it (``python -m trio_mcp.examples.paper_trail``).
* :mod:`trio_mcp.examples.everything`: every server feature of trio_mcp in one
  server (``python -m trio_mcp.examples.everything``).

They live in the package, not only in the repository's ``examples/``, so that an
installed wheel has them: the CLI must work outside a checkout. ``examples/``
in the repository runs these same modules.
"""
