"""Toolwire: assembles streamed LLM tool calls into trustworthy responses.

The packages, from the bottom up (each imports only those below it, as
``tests/test_layers.py`` pins): :mod:`.core` (bytes of one response → its record; pure),
:mod:`.config`, :mod:`.stream` (the stream processor over plain mappings), :mod:`.kafka` (the
clients and admin reads the worker and the tools share), :mod:`.publish` and :mod:`.broker`,
:mod:`.tap` and :mod:`.app` (the Faust worker), :mod:`.tools` (the operator's), :mod:`.cli`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
