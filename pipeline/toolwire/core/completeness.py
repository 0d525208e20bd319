"""Whether a call's arguments so far are one complete JSON value, asked again and again cheaply.

The index-reuse split (a provider reusing ``index: 0`` for the next parallel call) needs to
know, when a delta brings a different id, whether the call it lands on is already complete. A
stream that sends a new id on every delta (LM Studio) asks that once per delta; parsing the whole
argument text each time would make such a stream quadratic in its length. So the question is
answered by a structural scan that resumes where it stopped (linear over the call's life, and
only for calls that are asked), and only a value that the scan finds closed is parsed for real.
"""

from __future__ import annotations

import re
from typing import Final

import orjson

#: Characters that change the structure: quotes, escapes, brackets.
_STRUCTURAL: Final = re.compile(r'["\\{}\[\]]')
_OPENERS: Final = frozenset("{[")
#: A scalar (number, literal, string) longer than this is not parsed to check it: tool
#: arguments are objects, and a long scalar would cost a parse per question.
_SCALAR_PARSE_LIMIT: Final = 256


class Completeness:
    """The resumable scan of one call's argument text (which only ever grows)."""

    __slots__ = ("_depth", "_escaped_at", "_in_string", "_scanned", "_state")

    #: States: nothing but whitespace yet; inside an object or array; that value closed with
    #: nothing after it; something follows the closed value, or the value is a scalar.
    _EMPTY, _OPEN, _CLOSED, _OTHER = range(4)

    def __init__(self) -> None:
        self._scanned = 0
        self._depth = 0
        self._in_string = False
        #: Position of the character a backslash escapes (it may arrive in a later fragment).
        self._escaped_at = -1
        self._state = self._EMPTY

    def complete(self, text: str) -> bool:
        """Whether ``text`` (the earlier text plus what was appended since) is one JSON value."""
        if self._state != self._OTHER:
            self._scan(text)
        if self._state == self._CLOSED:
            return _parses(text)
        if self._state == self._OTHER and len(text) <= _SCALAR_PARSE_LIMIT:
            return _parses(text)  # a scalar, or a value with something after it
        return False

    def _scan(self, text: str) -> None:
        position = self._scanned
        self._scanned = len(text)
        if self._state == self._EMPTY:
            rest = text[position:]
            position += len(rest) - len(rest.lstrip())
            if position == len(text):
                return
            if text[position] not in _OPENERS:
                self._state = self._OTHER  # a scalar: decided by parsing (short ones only)
                return
            self._state = self._OPEN
        elif self._state == self._CLOSED:
            if text[position:].strip():
                self._state = self._OTHER  # ``{…}{…}``: never one value again
            return
        depth, in_string, escaped_at = self._depth, self._in_string, self._escaped_at
        for match in _STRUCTURAL.finditer(text, position):
            char = match.group()
            at = match.start()
            if in_string:
                if at == escaped_at:
                    continue
                if char == "\\":
                    escaped_at = at + 1
                elif char == '"':
                    in_string = False
                continue
            if char == '"':
                in_string = True
            elif char in _OPENERS:
                depth += 1
            else:
                depth -= 1
                if depth <= 0:
                    self._state = self._OTHER if depth < 0 or text[at + 1:].strip() \
                        else self._CLOSED
                    self._depth, self._in_string, self._escaped_at = 0, False, -1
                    return
        self._depth, self._in_string, self._escaped_at = depth, in_string, escaped_at


def _parses(text: str) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True
