"""Extensions and custom methods, for both roles (see ``_registry``)."""
