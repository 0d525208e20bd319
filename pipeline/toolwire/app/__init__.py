"""The Faust glue of a worker: :func:`create_app` builds it from settings.

Importing this package does nothing: no environment is read, no directory is made and Faust is
not patched until an app is created. For Faust's own command line,
``faust -A toolwire.app worker`` still works: the attribute ``app`` is built on first access from
the environment (:meth:`toolwire.config.settings.Settings.from_env`).
"""

from __future__ import annotations

from typing import Any

from toolwire.app.service import Toolwire, create_app

__all__ = ["Toolwire", "create_app"]

_default: Toolwire | None = None


def __getattr__(name: str) -> Any:
    """``toolwire.app.app``: the Faust app of the environment's settings, built once."""
    global _default
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _default is None:
        from toolwire.config.settings import Settings

        _default = create_app(Settings.from_env())
    return _default.app
