"""Settings of a Toolwire deployment: the one reader of the environment.

Every command, the worker and the local broker take their configuration from
:meth:`Settings.from_env` — the environment over the file ``TOOLWIRE_SETTINGS_FILE`` names —
and no other module reads ``os.environ`` (``tests/test_layout.py`` holds the package to it).
So a value set only in the settings file (``KAFKA_BOOTSTRAP_SERVERS`` included) is the value
every command uses, not one the settings accept and a command then ignores.

Every bound is a setting with a safe default; :meth:`Settings.from_env` says which variable is
wrong and what it expects, so a bad deployment fails at start with a message, not later.

The connection settings (``TOOLWIRE_SECURITY_PROTOCOL``, ``TOOLWIRE_SASL_*``,
``TOOLWIRE_SSL_*``) are checked as a whole when the settings are made: a combination that
cannot connect (SASL without a user name, a certificate without its key, a file that is not
there) is refused naming the variable to fix. :mod:`toolwire.config.security` turns them into the
options of the Kafka clients. The password is a :class:`Secret`: it never shows in ``repr()``,
``str()``, a log line or an error message.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import get_args, get_type_hints

from toolwire.core.limits import Limits, MiB

log = logging.getLogger("toolwire.config.settings")

#: ``TOOLWIRE_SECURITY_PROTOCOL`` values, as Kafka spells them.
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
#: ``TOOLWIRE_SASL_MECHANISM`` values; PLAIN when not set.
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_MECHANISM = "PLAIN"


class Secret:
    """A value that must not be shown: ``repr()`` and ``str()`` give ``'********'``; only
    :meth:`reveal` gives the value, to the one client that needs it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash((Secret, self._value))


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
    #: The tables' changelog topics roll a segment after this long (``segment.ms``) or this
    #: many bytes (``segment.bytes``). Kafka compacts rolled segments only: with its defaults
    #: (7 days, 1 GiB) a changelog is in practice never compacted, and every restart or
    #: take-over restores every write ever made (the hour's soak: 358,922 changelog records
    #: for about 19,000 live keys, and each restart slower than the one before).
    changelog_segment_seconds: float = 600.0
    changelog_segment_bytes: int = 64 * MiB
    #: How long a compacted changelog keeps the tombstone of a deleted key
    #: (``delete.retention.ms``; Kafka's default: a day). Every decided response deletes its
    #: chunks, and its dedupe marker after the window, so tombstones are most of what a
    #: restore reads; a restore that lasts longer than this could miss a deletion made while
    #: it ran (the key comes back until the sweep or the dedupe window drops it).
    changelog_tombstone_retention_seconds: float = 3600.0
    #: A worker that stops heartbeating (crashed) loses its partitions after this long; a
    #: restarted worker may wait as long before it joins the group.
    session_timeout_seconds: float = 30.0
    #: A worker whose heartbeats go unanswered for the session timeout holds every write
    #: until its group coordinator answers (``toolwire.app.fencing``); held this long with no
    #: answer, it stops with status 75 instead, for its supervisor to start it afresh.
    fence_hold_timeout_seconds: float = 600.0
    #: Raw chunk bytes copied into one dead letter (for replay); the rest is cut and flagged.
    #: The copy is also cut to keep the whole record within ``max_record_bytes``.
    deadletter_raw_bytes: int = 1 * MiB
    #: Table writes held in memory between two commits (chunks of open responses, done
    #: markers, deletions), all partitions together: past it they are written at once instead
    #: of at the next commit, so a burst cannot grow the worker's memory without bound.
    state_cache_bytes: int = 32 * MiB
    #: One output message (value, key and headers, framing included) at most: the producer's
    #: request limit is set from it, and it must stay under the output topics'
    #: ``max.message.bytes`` (Kafka's default is 1,048,588). An assembled record over it is
    #: dead-lettered as ``oversize``; a dead letter is cut to fit.
    max_record_bytes: int = 1_000_000
    #: Dead-letter identity conflicts instead of letting the last non-empty value win.
    strict: bool = False
    #: How long a record that fails to publish with a retriable error (a leader moving, a
    #: timeout, not enough replicas) is sent again, with backoff, before the worker stops
    #: (non-zero) for its supervisor to restart it.
    publish_retry_timeout_seconds: float = 60.0
    #: Providers (the ``provider`` header, comma-separated, or ``*`` for all) whose calls that
    #: end without an id get a deterministic one (``id_synthesized: true``) instead of a
    #: ``missing_identity`` dead letter. Empty (the default): never; a name is never made up.
    synthesize_ids: str = ""
    #: Providers (the ``provider`` header, comma-separated, or ``*``) that never send their
    #: wire's explicit end (Writer, Perplexity's older ``chat.completion`` chunks send no
    #: ``data: [DONE]``): a body of theirs that ends after every choice sent its finish reason
    #: is complete (``repairs.ended_without_done``) instead of a ``stream_closed`` dead
    #: letter. Empty (the default): none; a body cut before that is ``stream_closed`` anyway.
    end_without_done: str = ""
    #: Standby copies of each table partition kept warm on other workers
    #: (``table_standby_replicas``): a take-over then replays less of the changelog.
    standby_replicas: int | None = None
    #: Replication factor of every topic Toolwire creates: the three topics (``toolwire
    #: topics apply``) and the tables' changelog topics (the worker).
    replication_factor: int = 1
    #: ``min.insync.replicas`` of those topics; ``None`` keeps the broker's default. With
    #: ``acks=all`` (always used), a write then needs this many replicas.
    min_insync_replicas: int | None = None
    #: How every Kafka client connects: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
    security_protocol: str = "PLAINTEXT"
    #: SASL mechanism (SASL protocols only): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512;
    #: ``None`` means PLAIN.
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    #: The SASL password, or ``sasl_password_file`` (exactly one of them with SASL).
    sasl_password: Secret | None = field(default=None, repr=False)
    #: A file holding the SASL password (read when a client is made; one trailing newline is
    #: not part of it), e.g. a mounted secret.
    sasl_password_file: Path | None = None
    #: PEM file of the CA certificates that signed the brokers' certificates (TLS protocols);
    #: ``None`` trusts the system's CAs.
    ssl_ca_file: Path | None = None
    #: PEM client certificate (chain) and its unencrypted private key, for clusters that
    #: authenticate clients by certificate (TLS protocols): both or neither.
    ssl_cert_file: Path | None = None
    ssl_key_file: Path | None = None
    #: Check that a broker's certificate names the host connected to (TLS protocols).
    ssl_check_hostname: bool = True
    #: Port of the worker's Prometheus ``/metrics``; ``None`` serves none.
    metrics_port: int | None = None
    #: Address ``/metrics`` listens on: loopback unless configured (``0.0.0.0`` in a container).
    metrics_bind: str = "127.0.0.1"
    #: A worker with unread input on its assigned partitions that handles no message for this
    #: long is reported not live by ``/healthz`` (``TOOLWIRE_STALL_TIMEOUT``), and ``toolwire
    #: status`` names a partition whose oldest unprocessed message is older while workers live.
    stall_timeout_seconds: float = 120.0
    #: Worker logs: ``text`` (Faust's format) or ``json`` (one JSON object per line).
    log_format: str = "text"
    #: How often the topic metrics (offsets, lag) are read from Kafka.
    topic_metrics_interval_seconds: float = 30.0
    #: The worker's event loop: ``asyncio`` (the standard one) or ``uvloop`` (libuv-based,
    #: needs the ``uvloop`` package; see docs/benchmarks.md for what it gives).
    event_loop: str = "asyncio"
    #: Call glibc's ``malloc_trim(0)`` at the end of each sweep, returning the free memory
    #: inside the C heaps to the system (``toolwire.app.memory``; a no-op without glibc). It
    #: matters with ``PYTHONMALLOC=malloc``; see docs/benchmarks.md, "RSS after completion".
    trim_after_sweep: bool = False
    #: Where local state lives (the embedded broker, worker data).
    state_dir: Path = Path(".toolwire")
    #: The topic contracts' folder; ``None``: ``topics/`` of the checkout the package runs
    #: from (an installed wheel has none: images set it).
    topics_dir: Path | None = None
    #: Root of the Kafka jar cache of the local broker; ``None``: ``~/.cache/toolwire``.
    kafka_cache: Path | None = None
    #: The pom that pins the local broker's Kafka version; ``None``: ``ops/kafka/pom.xml`` of
    #: the checkout.
    kafka_pom: Path | None = None
    #: ``JAVA_HOME``: the Java that runs the local broker (else ``java`` on the ``PATH``).
    java_home: Path | None = None
    #: Names this worker in dead-letter provenance.
    worker_name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self) -> None:
        if self.log_format not in ("text", "json"):
            raise ValueError(f"TOOLWIRE_LOG_FORMAT={self.log_format!r}: expected text or json")
        if self.event_loop not in ("asyncio", "uvloop"):
            raise ValueError(f"TOOLWIRE_EVENT_LOOP={self.event_loop!r}: expected asyncio or "
                             "uvloop")
        if self.changelog_segment_bytes < MiB:
            raise ValueError(f"TOOLWIRE_CHANGELOG_SEGMENT_BYTES={self.changelog_segment_bytes}: "
                             f"expected at least {MiB} (1 MiB, Kafka's least segment.bytes)")
        # Kafka reads protocol and mechanism names in any case; they are kept in upper case.
        object.__setattr__(self, "security_protocol", self.security_protocol.strip().upper())
        if self.sasl_mechanism is not None:
            object.__setattr__(self, "sasl_mechanism", self.sasl_mechanism.strip().upper())
        check_security(self)

    def synthesizes_ids(self, provider: str | None) -> bool:
        """Whether calls of ``provider``'s responses that lack an id get a synthesized one."""
        return _names(self.synthesize_ids, provider)

    def ends_without_done(self, provider: str | None) -> bool:
        """Whether ``provider``'s bodies are complete without their wire's explicit end once
        every choice has finished."""
        return _names(self.end_without_done, provider)

    @property
    def secured(self) -> bool:
        """Whether Kafka is reached with TLS or SASL (anything but PLAINTEXT)."""
        return self.security_protocol != "PLAINTEXT"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``KAFKA_BOOTSTRAP_SERVERS`` and ``TOOLWIRE_*``, over those of the
        file ``TOOLWIRE_SETTINGS_FILE`` names (``NAME=VALUE`` lines; the environment wins).
        A bad value, or a ``TOOLWIRE_*`` name no setting has, raises a :class:`ValueError`
        that names the variable and what it expects."""
        env = os.environ if environ is None else environ
        from_file = read_settings_file(env.get(SETTINGS_FILE))
        known = known_variables()
        unknown = sorted(name for name in from_file if name not in known
                         and name != "KAFKA_BOOTSTRAP_SERVERS")
        if unknown:
            raise ValueError(f"{env.get(SETTINGS_FILE)}: unknown setting(s) "
                             f"{', '.join(unknown)}: check the spelling (see 'Settings' in "
                             "the README)")
        stray = sorted(n for n in env if n.startswith("TOOLWIRE_") and n not in known)
        if stray:
            log.warning("ignoring unknown environment variable(s) %s: a misspelt setting?",
                        ", ".join(stray))
        env = {**from_file, **env}
        values: dict[str, object] = {"bootstrap": env.get("KAFKA_BOOTSTRAP_SERVERS", "")}
        types = get_type_hints(cls)
        for f in fields(cls):
            if f.name in _NOT_TOOLWIRE:
                continue
            name = "TOOLWIRE_" + f.name.upper().removesuffix("_SECONDS")
            raw = env.get(name)
            if raw is None or raw == "":
                continue
            values[f.name] = parse_value(name, raw, types[f.name])
        if env.get("JAVA_HOME"):
            values["java_home"] = Path(env["JAVA_HOME"])
        settings = cls(limits=limits_from_env(env), **values)  # type: ignore[arg-type]
        if settings.secured and not settings.bootstrap:
            raise ValueError(
                f"TOOLWIRE_SECURITY_PROTOCOL={settings.security_protocol} is for an existing "
                "cluster: set KAFKA_BOOTSTRAP_SERVERS to its secured listeners (the local "
                "broker of 'toolwire broker start' speaks PLAINTEXT only)")
        return settings


#: Names a file of ``NAME=VALUE`` lines read under the environment (which wins).
SETTINGS_FILE = "TOOLWIRE_SETTINGS_FILE"
#: Fields not read from a ``TOOLWIRE_*`` variable: ``KAFKA_BOOTSTRAP_SERVERS`` and
#: ``JAVA_HOME`` keep their usual names, the limits have their own, the worker's name is made.
_NOT_TOOLWIRE = frozenset({"bootstrap", "limits", "worker_name", "java_home"})


def known_variables() -> frozenset[str]:
    """Every ``TOOLWIRE_*`` name a Toolwire command reads."""
    names = {"TOOLWIRE_" + f.name.upper().removesuffix("_SECONDS") for f in fields(Settings)
             if f.name not in _NOT_TOOLWIRE}
    names |= {"TOOLWIRE_" + f.name.upper() for f in fields(Limits)}
    return frozenset(names | {SETTINGS_FILE})


def child_environment(**overrides: str) -> dict[str, str]:
    """The environment for a child process of ours (the demo's worker): this one's, with
    ``overrides``. Here, so that the environment is read in this module only."""
    return {**os.environ, **overrides}


def read_settings_file(path: str | None) -> dict[str, str]:
    """``NAME=VALUE`` lines (``#`` comments, blank lines, optional quotes); ``{}`` for none."""
    if not path:
        return {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{SETTINGS_FILE}={path!r}: cannot read it ({exc.strerror})") from None
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.removeprefix("export ").partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name.replace("_", "").isalnum():
            raise ValueError(f"{path}:{number}: expected NAME=VALUE, got {line[:60]!r}")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name] = value
    return values


def check_security(settings: Settings) -> None:
    """Refuse connection settings that cannot work together, naming the variable to fix.

    Only looks: files are checked for existence here and read by :mod:`toolwire.config.security`
    when a client is made.
    """
    protocol = settings.security_protocol
    if protocol not in PROTOCOLS:
        raise ValueError(f"TOOLWIRE_SECURITY_PROTOCOL={protocol!r}: expected one of "
                         f"{', '.join(PROTOCOLS)}")
    sasl, tls = protocol in SASL_PROTOCOLS, protocol in TLS_PROTOCOLS
    password_vars = "TOOLWIRE_SASL_PASSWORD or TOOLWIRE_SASL_PASSWORD_FILE"
    if sasl:
        mechanism = settings.sasl_mechanism
        if mechanism is not None and mechanism not in MECHANISMS:
            raise ValueError(f"TOOLWIRE_SASL_MECHANISM={mechanism!r}: expected one of "
                             f"{', '.join(MECHANISMS)}")
        if not settings.sasl_username:
            raise ValueError(f"TOOLWIRE_SECURITY_PROTOCOL={protocol} needs "
                             "TOOLWIRE_SASL_USERNAME: set it to the SASL user name")
        given = (settings.sasl_password is not None) + (settings.sasl_password_file is not None)
        if given != 1:
            raise ValueError(
                f"TOOLWIRE_SECURITY_PROTOCOL={protocol} needs exactly one of {password_vars} "
                f"({'both are set: unset one' if given else 'neither is set'})")
    else:
        stray = [name for name, value in (
            ("TOOLWIRE_SASL_MECHANISM", settings.sasl_mechanism),
            ("TOOLWIRE_SASL_USERNAME", settings.sasl_username),
            ("TOOLWIRE_SASL_PASSWORD", settings.sasl_password),
            ("TOOLWIRE_SASL_PASSWORD_FILE", settings.sasl_password_file)) if value is not None]
        if stray:
            raise ValueError(f"{_are_set(stray)} but TOOLWIRE_SECURITY_PROTOCOL="
                             f"{protocol} does not use SASL: set TOOLWIRE_SECURITY_PROTOCOL="
                             f"{'SASL_SSL' if tls else 'SASL_PLAINTEXT or SASL_SSL'}, or unset "
                             "them")
    if not tls:
        stray = [name for name, value in (
            ("TOOLWIRE_SSL_CA_FILE", settings.ssl_ca_file),
            ("TOOLWIRE_SSL_CERT_FILE", settings.ssl_cert_file),
            ("TOOLWIRE_SSL_KEY_FILE", settings.ssl_key_file),
            ("TOOLWIRE_SSL_CHECK_HOSTNAME", None if settings.ssl_check_hostname else False),
        ) if value is not None]
        if stray:
            raise ValueError(f"{_are_set(stray)} but TOOLWIRE_SECURITY_PROTOCOL="
                             f"{protocol} does not use TLS: set TOOLWIRE_SECURITY_PROTOCOL="
                             f"{'SASL_SSL' if sasl else 'SSL or SASL_SSL'}, or unset them")
    elif (settings.ssl_cert_file is None) != (settings.ssl_key_file is None):
        present, absent = (("TOOLWIRE_SSL_CERT_FILE", "TOOLWIRE_SSL_KEY_FILE")
                           if settings.ssl_key_file is None
                           else ("TOOLWIRE_SSL_KEY_FILE", "TOOLWIRE_SSL_CERT_FILE"))
        raise ValueError(f"{present} is set without {absent}: a client certificate needs "
                         "both its certificate and its private key")
    for name, path in (("TOOLWIRE_SASL_PASSWORD_FILE", settings.sasl_password_file),
                       ("TOOLWIRE_SSL_CA_FILE", settings.ssl_ca_file),
                       ("TOOLWIRE_SSL_CERT_FILE", settings.ssl_cert_file),
                       ("TOOLWIRE_SSL_KEY_FILE", settings.ssl_key_file)):
        if path is not None and not path.is_file():
            why = "is not a file" if path.exists() else "does not exist"
            raise ValueError(f"{name}={str(path)!r}: {why}; give the path of a readable file")


def _names(setting: str, provider: str | None) -> bool:
    """Whether a provider list setting (comma-separated names, or ``*`` for all) names
    ``provider``."""
    names = {n.strip() for n in setting.split(",") if n.strip()}
    return "*" in names or (provider is not None and provider in names)


def _are_set(names: list[str]) -> str:
    return f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} set"


def limits_from_env(environ: Mapping[str, str] | None = None) -> Limits:
    """``TOOLWIRE_MAX_*`` overrides of :class:`Limits`, e.g. ``TOOLWIRE_MAX_CALLS=64``."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for f in fields(Limits):
        name = "TOOLWIRE_" + f.name.upper()
        raw = env.get(name)
        if raw is not None and raw != "":
            values[f.name] = parse_value(name, raw, int)
    return Limits(**values)  # type: ignore[arg-type]


def parse_value(name: str, raw: str, kind: object) -> object:
    """The one parser of ``TOOLWIRE_*`` values, picked by the field's type (``X | None`` is
    read as ``X``): ``bool``, positive ``int`` or ``float``, ``Path``, :class:`Secret` or
    ``str``; the error names the variable and what it expects (never a secret's value)."""
    args = [a for a in get_args(kind) if a is not type(None)]
    if args:  # ``X | None``
        if len(args) != 1:
            raise TypeError(f"{name}: no parser for the type {kind!r}")
        kind = args[0]
    if kind is Secret:
        return Secret(raw)
    if kind is Path:
        return Path(raw)
    if kind is str:
        return raw
    expected = {bool: "true or false", int: "positive whole number", float: "positive number"}
    if kind not in expected:
        raise TypeError(f"{name}: no parser for the type {kind!r}")
    if kind is bool:
        if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
            raise ValueError(f"{name}={raw!r}: expected a {expected[bool]}")
        return raw.lower() in ("1", "true", "yes")
    try:
        value: float = int(raw) if kind is int else float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a {expected[kind]}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name}={raw!r}: expected a {expected[kind]}")
    return value
