"""What several wires read the same way, in one place: no wire imports another.

A wire module is its API's rules; what two APIs share by accident of history (a gateway's
``data: [DONE]`` trailer on Responses and Gemini bodies, an event payload that must be one
JSON object) lives here, so that changing one wire never changes another by an import.
"""

from __future__ import annotations

from typing import Final

import orjson

from toolwire.core.errors import malformed

__all__ = ["DONE", "parse_object"]

#: The end sentinel of Chat Completions, which gateways also append to other wires' bodies.
DONE: Final = b"[DONE]"


def parse_object(payload: bytes) -> dict[str, object]:
    """One event payload as a JSON object, or :class:`~toolwire.core.errors.MalformedChunk`.

    Only the top level is checked: each wire's walk checks the inside as it goes, since a
    second pass would cost as much again as the walk itself.
    """
    try:
        value = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise malformed(payload, f"not JSON ({exc.args[0]})") from None
    if type(value) is not dict:
        raise malformed(payload, "not a JSON object")
    return value
