"""The ``trio-mcp`` command: ``demo``, ``trace`` and ``call`` (entry point: ``_main.main``)."""
