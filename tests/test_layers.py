"""Who may import whom, and what each package offers: pinned, so that a new edge is a decision.

The packages are layers, from the bottom up: ``core`` (one response's bytes → its record, pure),
``config``, ``stream`` (the processor over plain mappings), ``kafka`` (the clients and admin
reads the worker and the tools share), ``publish`` and ``broker``, ``tap`` and ``app`` (the
Faust worker), ``tools`` (the operator's), ``cli``. A package imports only packages below it —
every import counts, those inside functions and under ``TYPE_CHECKING`` too — and never a
private module (``_name``) of another package. Each package's ``__init__`` has a public
``__all__``, pinned here as httpx pins its own: a name that leaves it, or joins it, is a change
of the package's API and shows in this file's diff.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolwire

SOURCE = Path(toolwire.__file__).parent

#: What each package may import (besides itself), with why.
MAY_IMPORT: dict[str, frozenset[str]] = {
    # Pure: tested, profiled and replayed offline, with no Kafka and no settings.
    "core": frozenset(),
    # The settings carry the core's limits.
    "config": frozenset({"core"}),
    # The processor: the core's records under the settings, over mappings (no Kafka client).
    "stream": frozenset({"core", "config"}),
    # Kafka clients and admin reads: they decode the tables' values (stream.state).
    "kafka": frozenset({"config", "stream"}),
    # The gateways' publisher: the input contract's headers, the wires' event boundaries.
    "publish": frozenset({"core", "stream", "kafka"}),
    # The local broker for development: a probe over a client.
    "broker": frozenset({"config", "kafka"}),
    # The client-side tap publishes what a client reads.
    "tap": frozenset({"publish", "stream"}),
    # The worker: never the operator's tools, the tap, the publisher or the CLI.
    "app": frozenset({"core", "config", "stream", "kafka"}),
    # The operator's tools: everything below but the worker.
    "tools": frozenset({"core", "config", "stream", "kafka", "publish", "broker"}),
    # The command line reaches everything.
    "cli": frozenset({"core", "config", "stream", "kafka", "publish", "broker", "tap", "app",
                      "tools"}),
}

#: The public ``__all__`` of every package.
PUBLIC: dict[str, list[str]] = {
    "toolwire": ["__version__"],
    "toolwire.app": ["Toolwire", "create_app"],
    "toolwire.broker": ["BrokerError", "BrokerInfo", "LocalBroker", "configured_bootstrap",
                        "default_state_dir", "ensure_broker", "fetch", "start", "status",
                        "stop"],
    "toolwire.cli": ["main"],
    "toolwire.config": ["SecurityError", "Settings", "client_options"],
    "toolwire.core": ["Assembler", "Decision", "Limits", "Options", "Provenance",
                      "accept_identity", "assemble", "decide", "new_assembler"],
    "toolwire.core.framing": ["BOM", "SUPPORTED_FRAMINGS", "EventFramer", "EventMessage",
                              "EventStreamFramer", "Framer", "FramingDamage", "JSONArrayFramer",
                              "LineOversize", "NDJSONFramer", "NamedEvent", "event_name",
                              "split_events"],
    "toolwire.core.wires": ["AUTO", "DEFAULT_WIRE", "SUPPORTED_WIRES", "FinishPolicy",
                            "ProviderError", "UnknownWire", "Wire", "WireTarget",
                            "check_wire_name", "resolve_wire", "wire_named"],
    "toolwire.kafka": ["GroupStatus", "KafkaUnreachable", "PartitionPosition", "Stall",
                       "TopicError", "changelog_configs", "close_client", "group_members",
                       "group_status",
                       "open_client", "partition_counts", "start_client", "topic_configs",
                       "topic_max_message_bytes"],
    "toolwire.publish": ["COMPLETED", "DEFAULT_COALESCE_BYTES", "DROPPED", "ENDED_WITH_ERROR",
                         "END_CANCELLED", "END_EOF", "END_ERROR", "BrokerUnreachable",
                         "Cancellable", "ChunkPublisher", "CoalescingClock", "PublishError",
                         "PublishReport", "PublisherThread", "PushStats", "PushStream",
                         "RequestMeta", "TopicNotFound", "load_captures", "publish_captures",
                         "publish_loaded", "split_events", "split_fixed"],
    "toolwire.stream": ["InputMessage", "Output", "Processor", "Sink"],
    "toolwire.tap": ["SESSION", "SUPPORTED_DECODERS", "ContentDecoder", "DecodedTooLarge",
                     "DecodingError", "Httpx2TeeTransport", "HttpxTeeTransport",
                     "StreamOpener", "Tap", "Tee", "TeeHook", "TeeProxy", "Upstream",
                     "decoder_for", "parse_codings", "parse_upstreams", "request_fields",
                     "wire_of"],
    "toolwire.tools": [],
}


def _package_of(path: Path) -> str:
    rel = path.relative_to(SOURCE)
    return rel.parts[0] if len(rel.parts) > 1 else ""


def imports() -> Iterator[tuple[str, str, str]]:
    """(importing file, imported module, line) for every absolute import of ``toolwire.*``."""
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
                # ``from toolwire.tap import _proxy`` names a private module too.
                names += [f"{node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
            for name in names:
                if name.startswith("toolwire."):
                    yield str(path.relative_to(SOURCE)), name, f"{path.name}:{node.lineno}"


def test_the_layers_cover_every_package() -> None:
    packages = {p.name for p in SOURCE.iterdir() if (p / "__init__.py").is_file()}
    assert set(MAY_IMPORT) == packages


def test_each_package_imports_only_the_layers_below_it() -> None:
    wrong = []
    for source, module, where in imports():
        importer, imported = _package_of(SOURCE / source), module.split(".")[1]
        if importer and imported != importer and imported not in MAY_IMPORT[importer]:
            wrong.append(f"{importer} imports {module} ({where})")
    assert wrong == []


def test_the_layers_have_no_cycle() -> None:
    """Bottom up, each package's imports are all placed before it."""
    placed: list[str] = []
    left = dict(MAY_IMPORT)
    while left:
        ready = sorted(p for p, below in left.items() if below <= set(placed))
        assert ready, f"a cycle among {sorted(left)}"
        placed += ready
        for p in ready:
            del left[p]
    assert placed[0] == "core" and placed[-1] == "cli"


def test_no_package_imports_a_private_module_of_another() -> None:
    wrong = []
    for source, module, where in imports():
        parts = module.split(".")
        private = next((i for i, p in enumerate(parts) if p.startswith("_")), None)
        if private is None:
            continue
        owner = ".".join(parts[:private])  # the package the private module belongs to
        importer = "toolwire." + str(Path(source).parent).replace("/", ".")
        if not (importer == owner or importer.startswith(owner + ".")):
            wrong.append(f"{source} imports {module} ({where})")
    assert wrong == []


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_every_package_pins_its_public_names(package: str) -> None:
    module = importlib.import_module(package)
    public = getattr(module, "__all__", None)
    assert isinstance(public, list), f"{package} has no __all__"
    assert sorted(public) == sorted(PUBLIC[package])
    for name in public:
        assert hasattr(module, name), f"{package}.__all__ names {name}, which it lacks"


def test_every_package_is_pinned() -> None:
    packages = {"toolwire", *(f"toolwire.{p.name}" for p in SOURCE.iterdir()
                              if (p / "__init__.py").is_file())}
    # Sub-packages that declare a registry or a strategy interface are pinned too.
    packages |= {"toolwire.core.framing", "toolwire.core.wires"}
    assert packages == set(PUBLIC)
