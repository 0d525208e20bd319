"""The identity rule: what may set a call's ``id`` or ``function.name``.

Providers repeat identity on continuation deltas as ``""`` (DeepSeek, DashScope), ``null``
(hy3, longcat, vLLM), in full (Fireworks, LiteLLM, llama-server), or never send it. Writing
whatever arrives erases the identity (``""``) or doubles it (``call_1call_1``); the executor then
refuses ``unknown tool ""`` and a session store holding an empty call id cannot load the session
again. So one predicate decides, and everything else only counts what it decided.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final, TypeGuard

#: Marks a field the delta did not send at all (distinct from an explicit ``null``).
ABSENT: Final = object()


def accept_identity(offered: object) -> TypeGuard[str]:
    """Only a non-empty string may set an identity; anything else leaves it as it was."""
    return type(offered) is str and offered != ""


class Repair(IntEnum):
    """What the assembler did instead of trusting the wire; counted per response."""

    EMPTY_IDENTITY_IGNORED = 0
    NULL_IDENTITY_IGNORED = 1
    NON_STRING_IDENTITY_IGNORED = 2
    IDENTITY_REPEATED = 3
    IDENTITY_CONFLICTS = 4
    INDEX_FALLBACKS = 5
    INDEX_REUSE_SPLITS = 6
    #: A call that ended without an id was given a deterministic one (opt-in, see ``decide``).
    IDS_SYNTHESIZED = 7
    #: The body ended without its wire's explicit end after every choice had finished, for a
    #: provider that never sends one (opt-in, ``Options.end_without_done``): taken as complete.
    ENDED_WITHOUT_DONE = 8


REPAIR_NAMES: Final = tuple(r.name.lower() for r in Repair)


def settle_identity(established: str | None, offered: object, repairs: list[int]) -> str | None:
    """The identity after ``offered`` arrives, counting in ``repairs`` what was not trusted.

    ``ABSENT`` counts nothing: a field that is not sent was not repaired. A different non-empty
    value replaces the established one (last non-empty wins) and counts as a conflict, which
    strict mode turns into a dead letter.
    """
    if accept_identity(offered):
        if established is not None:
            repairs[REPEATED if offered == established else CONFLICT] += 1
        return offered
    if offered is not ABSENT:
        repairs[NULL if offered is None else EMPTY if offered == "" else NON_STRING] += 1
    return established


EMPTY: Final = int(Repair.EMPTY_IDENTITY_IGNORED)
NULL: Final = int(Repair.NULL_IDENTITY_IGNORED)
NON_STRING: Final = int(Repair.NON_STRING_IDENTITY_IGNORED)
REPEATED: Final = int(Repair.IDENTITY_REPEATED)
CONFLICT: Final = int(Repair.IDENTITY_CONFLICTS)
