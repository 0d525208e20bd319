"""Toolwire: assembles streamed LLM tool calls into trustworthy responses."""

__version__ = "0.1.0"
