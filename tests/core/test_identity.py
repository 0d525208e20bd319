"""The identity rule: only a non-empty string sets an id or a name."""

from __future__ import annotations

import pytest

from toolwire.core.identity import ABSENT, REPAIR_NAMES, Repair, accept_identity, settle_identity


@pytest.mark.parametrize("offered", ["call_1", "get_weather", " ", "0"])
def test_non_empty_strings_are_accepted(offered: object) -> None:
    assert accept_identity(offered)


@pytest.mark.parametrize("offered", ["", None, ABSENT, 0, 1, True, [], ["x"], {"a": 1}, 1.5])
def test_everything_else_is_refused(offered: object) -> None:
    assert not accept_identity(offered)


@pytest.mark.parametrize(
    ("established", "offered", "expected", "repair"),
    [
        (None, "call_1", "call_1", None),
        ("call_1", "", "call_1", Repair.EMPTY_IDENTITY_IGNORED),
        ("call_1", None, "call_1", Repair.NULL_IDENTITY_IGNORED),
        ("call_1", 7, "call_1", Repair.NON_STRING_IDENTITY_IGNORED),
        ("call_1", ABSENT, "call_1", None),
        ("call_1", "call_1", "call_1", Repair.IDENTITY_REPEATED),
        ("call_1", "call_2", "call_2", Repair.IDENTITY_CONFLICTS),
        (None, "", None, Repair.EMPTY_IDENTITY_IGNORED),
        (None, None, None, Repair.NULL_IDENTITY_IGNORED),
    ],
)
def test_settle_identity(established: str | None, offered: object, expected: str | None,
                         repair: Repair | None) -> None:
    repairs = [0] * len(Repair)
    assert settle_identity(established, offered, repairs) == expected
    counted = {REPAIR_NAMES[i]: n for i, n in enumerate(repairs) if n}
    assert counted == ({} if repair is None else {repair.name.lower(): 1})
