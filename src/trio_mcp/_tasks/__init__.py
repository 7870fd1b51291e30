"""_tasks: internal package."""
