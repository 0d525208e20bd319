"""Settings of a Toolwire deployment, read from the environment.

Every bound is a setting with a safe default; :meth:`Settings.from_env` says which variable is
wrong and what it expects, so a bad deployment fails at start with a message, not later.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from toolwire.core.limits import Limits, MiB


@dataclass(frozen=True)
class Settings:
    #: Kafka bootstrap servers; empty means "start or reuse the local broker".
    bootstrap: str = ""
    app_id: str = "toolwire"
    topic_chunks: str = "llm.sse.chunks"
    topic_assembled: str = "llm.toolcalls.assembled"
    topic_deadletter: str = "llm.toolcalls.deadletter"
    #: Partitions of the input topic (the changelogs of the tables get the same count).
    partitions: int = 6
    #: A response with no chunk for this long is dead-lettered as ``stream_abandoned``.
    stream_ttl_seconds: float = 600.0
    #: How often idle responses and expired dedupe markers are looked for.
    sweep_interval_seconds: float = 30.0
    #: How long a decided response is remembered, so replayed chunks do not publish it again.
    dedupe_window_seconds: float = 3600.0
    #: A worker that stops heartbeating (crashed) loses its partitions after this long; a
    #: restarted worker may wait as long before it joins the group.
    session_timeout_seconds: float = 30.0
    #: Raw chunk bytes copied into one dead letter (for replay); the rest is cut and flagged.
    #: The copy is also cut to keep the whole record within ``max_record_bytes``.
    deadletter_raw_bytes: int = 1 * MiB
    #: One output message (value, key and headers, framing included) at most: the producer's
    #: request limit is set from it, and it must stay under the output topics'
    #: ``max.message.bytes`` (Kafka's default is 1,048,588). An assembled record over it is
    #: dead-lettered as ``oversize``; a dead letter is cut to fit.
    max_record_bytes: int = 1_000_000
    #: Dead-letter identity conflicts instead of letting the last non-empty value win.
    strict: bool = False
    #: Standby copies of each table partition kept warm on other workers
    #: (``table_standby_replicas``): a take-over then replays less of the changelog.
    standby_replicas: int | None = None
    #: Replication factor of every topic Toolwire creates: the three topics (``toolwire
    #: topics apply``) and the tables' changelog topics (the worker).
    replication_factor: int = 1
    #: ``min.insync.replicas`` of those topics; ``None`` keeps the broker's default. With
    #: ``acks=all`` (always used), a write then needs this many replicas.
    min_insync_replicas: int | None = None
    #: Where local state lives (the embedded broker, worker data).
    state_dir: Path = Path(".toolwire")
    #: Names this worker in dead-letter provenance.
    worker_name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``KAFKA_BOOTSTRAP_SERVERS`` and ``TOOLWIRE_*``; a bad value raises a
        :class:`ValueError` that names the variable and what it expects."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {"bootstrap": env.get("KAFKA_BOOTSTRAP_SERVERS", "")}
        for f in fields(cls):
            if f.name in ("bootstrap", "limits", "worker_name"):
                continue
            name = "TOOLWIRE_" + f.name.upper().removesuffix("_SECONDS")
            raw = env.get(name)
            if raw is None or raw == "":
                continue
            values[f.name] = parse_value(name, raw, str(f.type))
        return cls(limits=limits_from_env(env), **values)  # type: ignore[arg-type]


def limits_from_env(environ: Mapping[str, str] | None = None) -> Limits:
    """``TOOLWIRE_MAX_*`` overrides of :class:`Limits`, e.g. ``TOOLWIRE_MAX_CALLS=64``."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for f in fields(Limits):
        name = "TOOLWIRE_" + f.name.upper()
        raw = env.get(name)
        if raw is not None and raw != "":
            values[f.name] = parse_value(name, raw, "int")
    return Limits(**values)  # type: ignore[arg-type]


def parse_value(name: str, raw: str, kind: str) -> object:
    """The one parser of ``TOOLWIRE_*`` values: ``bool``, positive ``int`` or ``float``,
    ``Path`` or ``str``; the error names the variable and what it expects."""
    try:
        if kind == "bool":
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError
            return raw.lower() in ("1", "true", "yes")
        if kind in ("int", "int | None"):
            value: float = int(raw)
        elif kind == "float":
            value = float(raw)
        elif kind == "Path":
            return Path(raw)
        else:
            return raw
    except ValueError:
        expected = {"bool": "true or false", "int": "positive whole number",
                    "int | None": "positive whole number", "float": "positive number"}[kind]
        raise ValueError(f"{name}={raw!r}: expected a {expected}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name}={raw!r}: expected a positive "
                         f"{'number' if kind == 'float' else 'whole number'}")
    return value
