"""Topic contracts: what each Kafka topic holds, and making a broker agree with them.

The JSON files under ``topics/`` are the contract with the gateways that produce chunks and with
the services that consume records. The same files create the topics (``toolwire topics apply``),
so the documentation and the broker cannot drift apart unnoticed.

Which values win:

- Topic names come from :class:`~toolwire.config.settings.Settings`
  (``TOOLWIRE_TOPIC_CHUNKS`` …): the worker reads and writes the names in its settings, so
  those are the topics that must exist. The names in the files are the defaults.
- Partitions come from ``Settings.partitions`` (``TOOLWIRE_PARTITIONS``) for all three topics,
  because the worker gives the changelog topics of its tables that same count, and Faust needs
  the input topic and the changelogs co-partitioned (a table's partition N holds the state of
  input partition N). A file whose count differs from the worker's built-in default is refused
  rather than obeyed: obeying it would create an input topic the worker disagrees with.
- Cleanup policy and retention come from the files only.

Existing topics are never altered: a partition count or cleanup policy that differs from the
contract is reported (:class:`TopicMismatch`) with what to do, because changing either on a live
topic loses data or breaks ordering, which is a decision for a human.

The admin reads this uses (partition counts, topic configs) are :mod:`toolwire.kafka.topics`,
shared with the worker; a refusal is its :class:`~toolwire.kafka.topics.TopicError`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError, for_code

from toolwire.config.settings import Settings
from toolwire.kafka.clients import open_client
from toolwire.kafka.topics import TopicError, partition_counts, topic_configs
from toolwire.stream.messages import Sink

ENV_TOPICS_DIR = "TOOLWIRE_TOPICS_DIR"
ENV_REPLICATION = "TOOLWIRE_REPLICATION_FACTOR"
ENV_PARTITIONS = "TOOLWIRE_PARTITIONS"

#: The order contracts are listed and applied in: input first, then its outputs.
ROLES: tuple[Sink, ...] = (Sink.INPUT, Sink.ASSEMBLED, Sink.DEADLETTER)

CLEANUP_POLICIES = frozenset({"delete", "compact", "compact,delete"})
_REQUIRED_KEYS = ("name", "role", "partitions", "cleanup_policy", "retention_ms", "key",
                  "headers", "value")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class ContractError(ValueError):
    """A contract file is missing, unreadable or inconsistent; says which file and what."""


class TopicMismatch(RuntimeError):
    """Existing topics disagree with their contracts; each problem says what to do about it."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Header:
    """One Kafka header of a topic's messages."""

    name: str
    required: bool
    description: str


@dataclass(frozen=True)
class Contract:
    """One topic as deployed: the file's contract with the deployment's overrides applied."""

    role: Sink
    name: str
    partitions: int
    cleanup_policy: str
    retention_ms: int
    key: Mapping[str, str]
    headers: tuple[Header, ...]
    value: Mapping[str, Any]
    description: str = ""
    source: Path | None = field(default=None, compare=False)
    #: ``min.insync.replicas`` of the deployment (``TOOLWIRE_MIN_INSYNC_REPLICAS``), if set.
    min_insync_replicas: int | None = None

    @property
    def schema(self) -> dict[str, Any] | None:
        """JSON Schema of the value, for topics whose value is JSON."""
        schema = self.value.get("schema")
        return schema if isinstance(schema, dict) else None

    def header_names(self) -> list[str]:
        return [h.name for h in self.headers]

    def configs(self) -> dict[str, str]:
        """Topic configs as the broker spells them (string values)."""
        configs = {"cleanup.policy": self.cleanup_policy, "retention.ms": str(self.retention_ms)}
        if self.min_insync_replicas is not None:
            configs["min.insync.replicas"] = str(self.min_insync_replicas)
        return configs

    def to_json(self) -> dict[str, Any]:
        """The contract in the file's shape, with the effective name and partitions."""
        return {"name": self.name, "role": self.role.value, "description": self.description,
                "partitions": self.partitions, "cleanup_policy": self.cleanup_policy,
                "retention_ms": self.retention_ms, "key": dict(self.key),
                "headers": [{"name": h.name, "required": h.required,
                             "description": h.description} for h in self.headers],
                "value": dict(self.value)}

    @classmethod
    def from_json(cls, data: object, source: Path | None = None) -> Contract:
        """Check the shape of one contract file (a wrong file fails here, not at the broker)."""
        where = str(source) if source is not None else "contract"
        if not isinstance(data, dict):
            raise ContractError(f"{where}: expected a JSON object")
        missing = [k for k in _REQUIRED_KEYS if k not in data]
        if missing:
            raise ContractError(f"{where}: missing key(s) {', '.join(missing)}")
        roles = {s.value: s for s in ROLES}
        if data["role"] not in roles:
            raise ContractError(f"{where}: role {data['role']!r} is not one of "
                                f"{', '.join(roles)}")
        name, partitions = data["name"], data["partitions"]
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", name):
            raise ContractError(f"{where}: name {name!r} is not a valid Kafka topic name")
        if type(partitions) is not int or partitions < 1:
            raise ContractError(f"{where}: partitions must be a positive whole number")
        if data["cleanup_policy"] not in CLEANUP_POLICIES:
            raise ContractError(f"{where}: cleanup_policy must be one of "
                                f"{', '.join(sorted(CLEANUP_POLICIES))}")
        retention = data["retention_ms"]
        if type(retention) is not int or retention < -1 or retention == 0:
            raise ContractError(f"{where}: retention_ms must be a positive number of "
                                "milliseconds, or -1 for no limit")
        key, value = data["key"], data["value"]
        if not isinstance(key, dict) or not isinstance(key.get("description"), str):
            raise ContractError(f"{where}: key must be an object with a description")
        if not isinstance(value, dict) or not isinstance(value.get("encoding"), str):
            raise ContractError(f"{where}: value must be an object with an encoding")
        if "schema" in value and not isinstance(value["schema"], dict):
            raise ContractError(f"{where}: value.schema must be a JSON Schema object")
        headers = []
        for i, h in enumerate(data["headers"] if isinstance(data["headers"], list) else [None]):
            if (not isinstance(h, dict) or not isinstance(h.get("name"), str)
                    or type(h.get("required")) is not bool
                    or not isinstance(h.get("description"), str)):
                raise ContractError(f"{where}: headers[{i}] must be an object with name "
                                    "(string), required (boolean) and description (string)")
            headers.append(Header(h["name"], h["required"], h["description"]))
        names = [h.name for h in headers]
        if len(set(names)) != len(names):
            raise ContractError(f"{where}: a header is listed twice")
        description = data.get("description", "")
        return cls(role=roles[data["role"]], name=name, partitions=partitions,
                   cleanup_policy=data["cleanup_policy"], retention_ms=retention,
                   key={k: str(v) for k, v in key.items()}, headers=tuple(headers),
                   value=value, description=description if isinstance(description, str) else "",
                   source=source)


def default_directory() -> Path:
    """``$TOOLWIRE_TOPICS_DIR``, else ``topics/`` beside the package (a checkout or editable
    install); an installed wheel has no checkout, so images set the variable."""
    configured = Settings.from_env().topics_dir
    if configured is not None and str(configured).strip():
        return configured.expanduser()
    return Path(__file__).resolve().parents[3] / "topics"


def load_contracts(directory: Path | None = None,
                   settings: Settings | None = None) -> list[Contract]:
    """The three contracts (chunks, assembled, deadletter) with the deployment's overrides.

    ``settings`` defaults to :meth:`Settings.from_env`, so the names and partition count are
    the ones a worker started from the same environment uses.
    """
    directory = directory if directory is not None else default_directory()
    settings = settings if settings is not None else Settings.from_env()
    if not directory.is_dir():
        raise ContractError(f"no topic contracts at {directory}: run from a toolwire checkout "
                            f"or set {ENV_TOPICS_DIR} to the directory of the topics/*.json files")
    found: dict[Sink, Contract] = {}
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ContractError(f"{path}: cannot read it: {exc}") from None
        contract = Contract.from_json(data, path)
        if contract.role in found:
            raise ContractError(f"{path}: a second contract for role {contract.role.value} "
                                f"(the first is {found[contract.role].source})")
        found[contract.role] = contract
    absent = [r.value for r in ROLES if r not in found]
    if absent:
        raise ContractError(f"{directory}: no contract for role(s) {', '.join(absent)}")
    default_partitions = Settings().partitions
    contracts = []
    for role in ROLES:
        contract = found[role]
        if contract.partitions != default_partitions:
            raise ContractError(
                f"{contract.source}: partitions is {contract.partitions} but the worker's "
                f"default is {default_partitions}; the file states the default, so set "
                f"{ENV_PARTITIONS}={contract.partitions} for the workers and `topics apply` "
                "instead of editing it")
        name = getattr(settings, f"topic_{role.value}")
        contracts.append(replace(contract, name=name, partitions=settings.partitions,
                                 min_insync_replicas=settings.min_insync_replicas))
    return contracts


# --------------------------------------------------------------------------- broker


def _policy_set(policy: str) -> frozenset[str]:
    return frozenset(p.strip() for p in policy.split(",") if p.strip())


def _partition_advice(contract: Contract, actual: int) -> str:
    text = (f"topic {contract.name} has {actual} partitions, the contract says "
            f"{contract.partitions}: recreate it or set {ENV_PARTITIONS}={actual}")
    if contract.role is Sink.INPUT:
        text += (" (for the workers too: their tables' changelog topics must have the same "
                 "count as this topic)")
    return text


def _policy_advice(contract: Contract, actual: str, bootstrap: str) -> str:
    return (f"topic {contract.name} has cleanup.policy={actual}, the contract says "
            f"{contract.cleanup_policy}: change it with `kafka-configs.sh --bootstrap-server "
            f"{bootstrap} --alter --entity-type topics --entity-name {contract.name} "
            f"--add-config cleanup.policy=[{contract.cleanup_policy}]` or recreate it")


async def _wait_ready(admin: Any, expected: Mapping[str, int | None], timeout: float) -> None:
    """Until every topic is in the metadata with its partitions (``None``: with any count),
    so that whatever starts after ``apply`` (the workers) finds them complete."""
    deadline = time.monotonic() + timeout
    while True:
        counts = await partition_counts(admin, list(expected))
        pending = [n for n, want in expected.items()
                   if n not in counts or (want is not None and counts[n] != want)]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TopicError(f"topic(s) {', '.join(pending)} were created but are not complete "
                             f"in the broker's metadata after {timeout:.0f}s")
        await asyncio.sleep(0.2)


async def apply_topics(bootstrap: str, contracts: Sequence[Contract], *,
                       replication_factor: int = 1, app_id: str | None = None,
                       changelog: Mapping[str, str] | None = None,
                       timeout: float = 30.0,
                       security: Mapping[str, Any] | None = None) -> list[str]:
    """Create the missing topics and check the existing ones; one line per topic for humans.

    Every existing topic is checked before anything is created, so a disagreement leaves the
    broker as it was (short of a concurrent creation by someone else). With ``app_id``, the
    worker's changelog topics (``<app_id>-…-changelog``) must also have the chunks topic's
    partition count, and each whose configs differ from ``changelog`` (the configs the worker
    creates them with, :func:`toolwire.kafka.changelog_configs`) gets a line after the
    contracts' saying how to change them: Kafka keeps an existing topic's configs, and a
    changelog created with its defaults is in practice never compacted. Those are reported,
    not altered, as every existing topic is. Raises :class:`TopicMismatch` listing every
    disagreement, :class:`TopicError` when the broker refuses. ``security``: aiokafka
    connection options (:func:`toolwire.config.security.client_options`).
    """
    async with open_client(AIOKafkaAdminClient, bootstrap, start_timeout=timeout,
                           client_id="toolwire-topics", request_timeout_ms=int(timeout * 1000),
                           **(security or {})) as admin:
        existing = await _existing(admin, contracts, replication_factor, timeout)
        present = [c for c in contracts if c.name in existing]
        lines, problems = await _check_existing(admin, present, bootstrap)
        chunks = next((c for c in contracts if c.role is Sink.INPUT), None)
        drifted: list[str] = []
        if app_id and chunks is not None:
            changelog_problems, drifted = await _check_changelogs(
                admin, existing, app_id, chunks, changelog or {}, bootstrap)
            problems += changelog_problems
        if problems:
            raise TopicMismatch(problems)
        missing = [c for c in contracts if c.name not in existing]
        if missing:
            created, raced = await _create(admin, missing, replication_factor, timeout)
            await _wait_ready(admin, {c.name: c.partitions for c in created}, timeout)
            for c in created:
                lines[c.name] = (f"created {c.name}: {c.partitions} partitions, "
                                 f"replication {replication_factor}, "
                                 f"cleanup.policy={c.cleanup_policy}, "
                                 f"retention.ms={c.retention_ms}")
            if raced:
                # Another `apply` created them meanwhile: check them like any existing topic.
                await _wait_ready(admin, dict.fromkeys(c.name for c in raced), timeout)
                raced_lines, problems = await _check_existing(admin, raced, bootstrap)
                lines.update(raced_lines)
                if problems:
                    raise TopicMismatch(problems)
        return [lines[c.name] for c in contracts] + drifted


async def _existing(admin: Any, contracts: Sequence[Contract], replication_factor: int,
                    timeout: float) -> set[str]:
    """Names of the existing topics, the contracted ones answered by the controller.

    A broker's topic listing can lag a creation by a moment, and describing an absent topic
    may auto-create it; a validate-only creation asks the controller instead, which knows.
    It also refuses an impossible request (a replication factor above the broker count)
    before anything is created.
    """
    existing = set(await admin.list_topics())
    unlisted = [c for c in contracts if c.name not in existing]
    if unlisted:
        _, hidden = await _create(admin, unlisted, replication_factor, timeout,
                                  validate_only=True)
        if hidden:
            await _wait_ready(admin, dict.fromkeys(c.name for c in hidden), timeout)
            existing.update(c.name for c in hidden)
    return existing


async def _create(admin: Any, contracts: Sequence[Contract], replication_factor: int,
                  timeout: float, *, validate_only: bool = False,
                  ) -> tuple[list[Contract], list[Contract]]:
    """``(created, already existing)``; any other refusal raises :class:`TopicError`."""
    response = await admin.create_topics(
        [NewTopic(c.name, c.partitions, replication_factor, topic_configs=c.configs())
         for c in contracts], timeout_ms=int(timeout * 1000), validate_only=validate_only)
    by_name = {c.name: c for c in contracts}
    created, exists = [], []
    for error in response.to_object()["topic_errors"]:
        contract, code = by_name[error["topic"]], error["error_code"]
        if code == 0:
            created.append(contract)
        elif for_code(code) is TopicAlreadyExistsError:
            exists.append(contract)
        else:
            message = error.get("error_message") or ""
            raise TopicError(f"creating topic {contract.name} failed: "
                             f"{for_code(code).__name__} {message}".rstrip())
    return created, exists


async def _check_existing(admin: Any, contracts: Sequence[Contract],
                          bootstrap: str) -> tuple[dict[str, str], list[str]]:
    """``({name: ok line}, problems)`` for topics that exist."""
    names = [c.name for c in contracts]
    counts = await partition_counts(admin, names)
    configs = await topic_configs(admin, names)
    lines, problems = {}, []
    for c in contracts:
        problems += _check(c, counts.get(c.name), configs.get(c.name, {}), bootstrap)
        lines[c.name] = _ok_line(c, configs.get(c.name, {}))
    return lines, problems


def _check(contract: Contract, partitions: int | None, configs: Mapping[str, str],
           bootstrap: str) -> list[str]:
    problems = []
    if partitions is None:
        problems.append(f"topic {contract.name} exists but the broker does not describe it; "
                        "retry, or check the broker's log")
    elif partitions != contract.partitions:
        problems.append(_partition_advice(contract, partitions))
    policy = configs.get("cleanup.policy")
    if policy is not None and _policy_set(policy) != _policy_set(contract.cleanup_policy):
        problems.append(_policy_advice(contract, policy, bootstrap))
    return problems


def _ok_line(contract: Contract, configs: Mapping[str, str]) -> str:
    line = (f"ok {contract.name}: {contract.partitions} partitions, "
            f"cleanup.policy={contract.cleanup_policy}")
    retention = configs.get("retention.ms")
    if retention is not None and retention != str(contract.retention_ms):
        line += (f" (retention.ms is {retention}, the contract says {contract.retention_ms}; "
                 "left as it is)")
    return line


async def _check_changelogs(admin: Any, existing: set[str], app_id: str, chunks: Contract,
                            wanted: Mapping[str, str], bootstrap: str,
                            ) -> tuple[list[str], list[str]]:
    """``(problems, drift lines)`` of the changelog topics of app ``app_id``."""
    pattern = re.compile(re.escape(app_id) + r"-.+-changelog")
    changelogs = sorted(t for t in existing if pattern.fullmatch(t))
    counts = await partition_counts(admin, changelogs)
    problems = [
        f"changelog topic {t} has {n} partitions, the input topic {chunks.name} is to have "
        f"{chunks.partitions}: a table's partitions must match the input's; with no worker "
        f"running, delete the changelog topics of app {app_id} (their open responses and "
        f"dedupe markers are lost) or set {ENV_PARTITIONS}={n}"
        for t, n in sorted(counts.items()) if n != chunks.partitions]
    configs = await topic_configs(admin, changelogs, wanted=list(wanted)) if wanted else {}
    drift = []
    for t in changelogs:
        differ = {k: v for k, v in wanted.items() if configs.get(t, {}).get(k) != v}
        if differ:
            now = ", ".join(f"{k}={configs.get(t, {}).get(k)}" for k in differ)
            drift.append(
                f"changelog topic {t} has {now}; the worker creates its changelogs with "
                f"{', '.join(f'{k}={v}' for k, v in differ.items())}, and Kafka keeps an "
                f"existing topic's configs (left as they are; a restart restores every "
                f"write the log was not compacted of). To change them, live: kafka-configs.sh "
                f"--bootstrap-server {bootstrap} --alter --entity-type topics --entity-name "
                f"{t} --add-config {','.join(f'{k}={v}' for k, v in differ.items())}")
    return problems, drift
