"""What every command shares: exit codes, errors, validators, finding the broker."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, Final, TypeAlias

from toolwire.config.settings import Settings
from toolwire.core.wires import UnknownWire, check_wire_name

EXIT_OK: Final = 0
#: The command's negative outcome: a dead letter, a topic that disagrees, a broker not found.
EXIT_NEGATIVE: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130

Handler = Callable[[argparse.Namespace], int]
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class CommandError(Exception):
    """Ends a command with a message on stderr and an exit status."""

    status: int = EXIT_NEGATIVE

    def __init__(self, message: str, prog: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog


class Failure(CommandError):
    status = EXIT_NEGATIVE


class UsageError(CommandError):
    status = EXIT_USAGE


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The help of every command: descriptions as written, option help wrapped without
    breaking a name at its hyphen (``ollama-chat``, ``--end-without-done``)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def say(prog: str, message: str) -> None:
    """Progress for humans, on stderr: stdout stays for what scripts parse."""
    print(f"{prog}: {message}", file=sys.stderr, flush=True)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value}")
    return value


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def tool_names(text: str) -> tuple[str, ...]:
    """``a,b`` in order, without repeats; an empty value declares no tool at all (every call
    is then an unknown tool)."""
    return tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))


def find_broker(prog: str, *, start: bool = False) -> str:
    """The one way every command finds Kafka: ``KAFKA_BOOTSTRAP_SERVERS``, else the running
    local broker, else (only for commands that own one) a local broker started now."""
    from toolwire.broker.local import BrokerError
    from toolwire.tools.connect import resolve_bootstrap

    try:
        bootstrap, started = resolve_bootstrap(start=start)
    except BrokerError as exc:
        raise Failure(str(exc), prog) from None
    if started:
        say(prog, f"started the local broker at {bootstrap} (it keeps running; "
                  "'toolwire broker stop' stops it)")
    return bootstrap


def load_settings(prog: str) -> Settings:
    """Settings from the environment; a bad value is a usage error that names it."""
    try:
        return Settings.from_env()
    except ValueError as exc:
        raise UsageError(str(exc), prog) from None


def kafka_security(prog: str, settings: Settings) -> dict[str, Any]:
    """The aiokafka connection options of every client a command makes (TLS, SASL), from
    the settings; a file that cannot be used (CA, certificate, key, password file) is a usage
    error that names its variable."""
    from toolwire.config.security import client_options

    try:
        return client_options(settings)
    except ValueError as exc:
        raise UsageError(str(exc), prog) from None


def bootstrap_advice(settings: Settings, source: str | None = None) -> str:
    """What to do about a bootstrap address no broker answers at: fix where it came from
    (``source``, e.g. ``--bootstrap``; else ``KAFKA_BOOTSTRAP_SERVERS`` when set, else the
    local broker)."""
    if source is None and not settings.bootstrap.strip():
        return ("the local broker does not answer: restart it ('toolwire broker stop', then "
                "'toolwire broker start'), or set KAFKA_BOOTSTRAP_SERVERS to a running one")
    return f"start the broker, or point {source or 'KAFKA_BOOTSTRAP_SERVERS'} at a running one"


def _unreachable(exc: BaseException) -> BaseException | None:
    """The :class:`~toolwire.kafka.KafkaUnreachable` that ``exc`` is or was raised from."""
    from toolwire.kafka.clients import KafkaUnreachable

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KafkaUnreachable):
            return seen
        seen = seen.__cause__
    return None


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says that no bootstrap server answered (not a refusal of any kind)."""
    return _unreachable(exc) is not None


def kafka_failure(prog: str, exc: BaseException, bootstrap: str, settings: Settings,
                  security: dict[str, Any], *, source: str | None = None) -> Failure:
    """The failure of a command whose Kafka client failed, on one line that names the
    address. A cluster no bootstrap server of which answers says so and what to fix
    (:func:`bootstrap_advice`; ``source``: where ``bootstrap`` came from, when not the
    settings). aiokafka reports a refused login or TLS handshake only as "unable to
    bootstrap", so on a secured cluster one direct connection finds the cause and names the
    setting to fix. Call it outside an event loop."""
    unreachable = _unreachable(exc)
    if unreachable is not None:
        message = f"{unreachable}: {bootstrap_advice(settings, source)}"
    else:
        name, text = type(exc).__name__, " ".join(str(exc).split())
        why = text if name in text else f"{name}: {text}" if text else name
        message = why if bootstrap in why else f"Kafka at {bootstrap}: {why}"
    if settings.secured:
        import asyncio

        from toolwire.config.security import SecurityError, verify

        try:
            asyncio.run(verify(bootstrap, security, settings))
        except SecurityError as cause:
            message = str(cause)
        except Exception:  # the diagnosis must not hide the failure it explains
            pass
    return Failure(message, prog)


def wire_name(text: str) -> str:
    """``--wire``'s value: a registered wire or ``auto``; anything else is a usage error that
    lists the valid names (argparse's ``choices`` would fix them when the parser is built,
    and word them differently from every other place a wire is refused)."""
    try:
        check_wire_name(text)
    except UnknownWire as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
