"""How a deployment is configured: settings (the one reader of the environment), the
Kafka client security they imply, and the worker's log format.

Importing this package reads nothing: :meth:`~toolwire.config.settings.Settings.from_env` does,
when a command or the worker asks for its settings.
"""

from toolwire.config.security import SecurityError, client_options
from toolwire.config.settings import Settings

__all__ = ["SecurityError", "Settings", "client_options"]
