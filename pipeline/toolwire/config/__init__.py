"""How a deployment is configured: settings (the one reader of the environment), the
Kafka client security they imply, and the worker's log format.

Importing this package reads nothing: :meth:`~toolwire.config.settings.Settings.from_env` does,
when a command or the worker asks for its settings.
"""
