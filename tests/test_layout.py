"""The package's shape: the modules that hold each step of the data's way (frame → wire →
assemble → decide → route → publish), nothing at import, the environment read by the settings
alone, and no module steering another through the environment or ``sys.argv``."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolwire

SOURCE = Path(toolwire.__file__).parent
MODULES = sorted(m.name for m in pkgutil.walk_packages([str(SOURCE)], prefix="toolwire.")
                 if not m.name.endswith("__main__"))

_PROBE = """
import importlib, os, sys
before = set(os.listdir("."))
module = importlib.import_module(sys.argv[1])
from faust.transport import consumer
assert not getattr(consumer.Consumer, "_toolwire_patched", False), "Faust was patched"
created = set(os.listdir(".")) - before
assert not created, f"created {sorted(created)}"
assert not os.path.exists(os.environ["TOOLWIRE_STATE_DIR"]), "made the state directory"
"""


def test_every_module_is_listed() -> None:
    assert {"toolwire.app", "toolwire.cli", "toolwire.core.assembly",
            "toolwire.stream.state"} <= set(MODULES)


#: The module of each step, as the README's "How it works" draws them.
STEPS = {
    "frame": "toolwire.core.framing.sse",
    "wire": "toolwire.core.wires.chat_completions",
    "assemble": "toolwire.core.assembly",
    "decide": "toolwire.core.decide",
    "route": "toolwire.stream.processor",
    "store": "toolwire.stream.store",
    "control and sweep": "toolwire.stream.control",
    "input contract": "toolwire.stream.messages",
    "publish": "toolwire.stream.encode",
    "commit": "toolwire.app.commit",
    "recovery watchdog": "toolwire.app.watchdog",
    "settings": "toolwire.config.settings",
}


def test_each_step_has_its_module_and_the_readme_names_it() -> None:
    assert set(STEPS.values()) <= set(MODULES)
    readme = (SOURCE.parents[1] / "README.md").read_text()
    for module in STEPS.values():
        path = "toolwire/" + module.removeprefix("toolwire.").replace(".", "/") + ".py"
        assert path in readme, f"the README's 'How it works' does not name {path}"


def test_no_flat_modules_beside_the_packages() -> None:
    """Every module but the package's own ``__init__`` lives in a package named for its job
    (core, stream, app, publish, tap, config, kafka, tools, broker, cli)."""
    flat = sorted(p.name for p in SOURCE.glob("*.py") if p.name != "__init__.py")
    assert flat == []
    packages = {p.name for p in SOURCE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == {"app", "broker", "cli", "config", "core", "kafka", "publish", "stream",
                        "tap", "tools"}


def test_the_wire_registry_names_the_chat_completions_wire() -> None:
    from toolwire.core.wires import DEFAULT_WIRE, SUPPORTED_WIRES, UnknownWire, wire_named

    assert "openai-chat" in SUPPORTED_WIRES and DEFAULT_WIRE == "openai-chat"
    with pytest.raises(UnknownWire, match="openai-chat"):
        wire_named("no-such-wire")


def test_the_commit_sequence_lives_in_one_module() -> None:
    """Flush → drain → resend → count → retire is ``Checkpoint.commit``: the faust patches
    keep none of it, and only the commit module drains the producer or resends writes."""
    from toolwire.app import fixes

    for name in ("drain_producer", "RecoveryWatchdog", "RESEND_ATTEMPTS"):
        assert not hasattr(fixes, name), name
    steps = {"drain_producer", "resend_failed", "drained", "retire"}
    callers: set[str] = set()
    for path in SOURCE.rglob("*.py"):
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = (func.attr if isinstance(func, ast.Attribute)
                        else func.id if isinstance(func, ast.Name) else None)
                # A facade method handing its step to the module that does it is no caller.
                if name in steps and name != function.name:
                    callers.add(f"{path.relative_to(SOURCE)}:{function.name}")
    # The service only hands the commit its drain and its resend (the Faust producer and
    # tables it owns); the commit module runs them.
    assert {c.split(":")[0] for c in callers} <= {"app/commit.py", "app/service.py"}, callers
    assert {c for c in callers if c.startswith("app/service.py")} <= {
        "app/service.py:__init__", "app/service.py:_resend_failed"}, callers


@pytest.mark.parametrize("module", MODULES)
def test_importing_has_no_side_effect(module: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = subprocess.run([sys.executable, "-c", _PROBE, module], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", "TOOLWIRE_STATE_DIR": str(state)})
    assert done.returncode == 0, done.stderr[-2000:]


#: What a module must never write: the process environment, and the command line.
_STEERED = frozenset({"os.environ", "os.environb", "sys.argv"})
#: Methods that change a mapping (the environment) or a list (``sys.argv``) in place.
_MUTATING = frozenset({
    "pop", "popitem", "clear", "update", "setdefault", "__setitem__", "__delitem__",
    "__ior__", "__iadd__", "append", "extend", "insert", "remove", "sort", "reverse"})
#: Functions that write the environment without going through ``os.environ``.
_WRITING_CALLS = frozenset({"os.putenv", "os.unsetenv"})
#: The one module that reads ``sys.argv``: the ``toolwire`` command's entry point.
_ARGV_READER = Path("cli") / "__init__.py"


class _Names:
    """What the names of one module stand for: ``import os as o`` makes ``o.environ`` mean
    ``os.environ``, ``from os import environ`` makes ``environ`` mean it, and so does
    ``env = os.environ``."""

    def __init__(self, tree: ast.AST) -> None:
        self.alias: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.alias[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.alias[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(tree):  # after the imports: ``env = environ`` resolves too
            if isinstance(node, ast.Assign):
                value = self.dotted(node.value)
                if value in _STEERED:
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            self.alias[target.id] = value

    def dotted(self, expr: ast.AST) -> str | None:
        if isinstance(expr, ast.Name):
            return self.alias.get(expr.id, expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.dotted(expr.value)
            return None if base is None else f"{base}.{expr.attr}"
        return None


def _written(node: ast.stmt) -> list[ast.expr]:
    """What an assignment or ``del`` writes: items, slices and attributes (``a.b = ...``);
    a bare name only when augmented (``env |= ...`` changes the object ``env`` names, where
    ``env = ...`` and ``del env`` only rebind the local name)."""
    if isinstance(node, (ast.Assign, ast.Delete)):
        found = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        found = [node.target]
    else:
        return []
    written: list[ast.expr] = []
    while found:  # ``a, os.environ["X"] = ...`` and ``*sys.argv[:]``
        target = found.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            found.extend(target.elts)
        elif isinstance(target, ast.Starred):
            found.append(target.value)
        elif isinstance(target, ast.Subscript):
            written.append(target.value)
        elif isinstance(target, ast.Attribute) or isinstance(node, ast.AugAssign):
            written.append(target)
    return written


def environment_writes(source: str) -> list[tuple[int, str]]:
    """Where ``source`` writes the environment or ``sys.argv``: ``(line, what)``.

    Assigning or deleting an item or a slice (``os.environ[k] = v``, ``del os.environ[k]``,
    ``sys.argv[:] = ...``), rebinding (``sys.argv = ...``, ``os.environ |= ...``), calling a
    mutating method (``os.environ.pop``, ``.update``, ``.setdefault``, ``sys.argv.append``...),
    ``os.putenv``/``os.unsetenv`` and ``setattr(sys, "argv", ...)``; through any import alias.
    """
    tree = ast.parse(source)
    names = _Names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            for target in _written(node):
                what = names.dotted(target)
                if what in _STEERED:
                    verb = "del" if isinstance(node, ast.Delete) else "assign"
                    found.append((node.lineno, f"{verb} {what}"))
        if not isinstance(node, ast.Call):
            continue
        func = names.dotted(node.func)
        owner = names.dotted(node.func.value) if isinstance(node.func, ast.Attribute) else None
        if func in _WRITING_CALLS:
            found.append((node.lineno, func))
        elif (isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATING
              and owner in _STEERED):
            found.append((node.lineno, f"{owner}.{node.func.attr}"))
        elif (func in ("setattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str)):
            what = f"{names.dotted(node.args[0])}.{node.args[1].value}"
            if what in _STEERED:
                found.append((node.lineno, f"{func} {what}"))
    return sorted(found)


def argv_reads(source: str) -> list[int]:
    """Lines of ``source`` that refer to ``sys.argv`` at all."""
    tree = ast.parse(source)
    names = _Names(tree)
    return sorted({node.lineno for node in ast.walk(tree)
                   if isinstance(node, (ast.Name, ast.Attribute))
                   and names.dotted(node) == "sys.argv"})


#: Every form of writing the environment or the command line the check must catch.
WRITES = [
    "os.environ['X'] = '1'",
    "os.environ.update(X='1')",
    "os.environ.setdefault('X', '1')",
    "os.environ.pop('X')",
    "os.environ.pop('X', None)",
    "os.environ.popitem()",
    "os.environ.clear()",
    "os.environ.__setitem__('X', '1')",
    "os.environ |= {'X': '1'}",
    "del os.environ['X']",
    "del os.environ['X'], os.environ['Y']",
    "os.environb[b'X'] = b'1'",
    "os.putenv('X', '1')",
    "os.unsetenv('X')",
    "sys.argv[:] = ['toolwire']",
    "sys.argv[1:] = []",
    "sys.argv = ['toolwire']",
    "sys.argv += ['--strict']",
    "sys.argv.append('--strict')",
    "sys.argv.insert(1, '--strict')",
    "del sys.argv[1:]",
    "_, sys.argv[:] = None, []",
    "setattr(sys, 'argv', [])",
    "import os as o\ndel o.environ['X']",
    "from os import environ\nenviron.pop('X', None)",
    "from os import environ as env\nenv['X'] = '1'",
    "from os import putenv\nputenv('X', '1')",
    "from sys import argv\nargv[:] = []",
    "env = os.environ\ndel env['X']",
]
#: Reading is allowed (``Settings.from_env``, ``demo`` passing a copy to a child process).
READS = [
    "value = os.environ.get('X')",
    "value = os.environ['X']",
    "present = 'X' in os.environ",
    "env = {**os.environ, 'X': '1'}",
    "env = dict(os.environ)\nenv['X'] = '1'\nenv.pop('Y', None)",
    "env = os.environ.copy()\nenv['X'] = '1'",
    "args = sys.argv[1:]",
    "args = list(sys.argv)\nargs.append('--strict')",
]


@pytest.mark.parametrize("statement", WRITES)
def test_the_check_flags_every_form_of_writing_the_environment_or_argv(statement: str) -> None:
    """Inside a function, at the line it is on (each form's last): the check itself is
    proven to see it."""
    body = "".join(f"    {line}\n" for line in statement.splitlines())
    source = f"import os\nimport sys\n\n\ndef steer() -> None:\n{body}"
    assert {line for line, _ in environment_writes(source)} == {
        5 + len(statement.splitlines())}, statement


@pytest.mark.parametrize("statement", READS)
def test_the_check_lets_reads_and_copies_through(statement: str) -> None:
    assert environment_writes(f"import os\nimport sys\n{statement}\n") == [], statement


def test_the_check_finds_argv_through_aliases() -> None:
    assert argv_reads("import sys\nfirst = sys.argv[0]\n") == [2]
    assert argv_reads("from sys import argv as a\n\nfirst = a[0]\n") == [3]
    assert argv_reads("import sys\nargs = sys.orig_argv\n") == []


#: The environment itself and the functions that read it without naming ``os.environ``.
_ENVIRONMENT = frozenset({"os.environ", "os.environb", "os.getenv", "os.getenvb"})
#: The one module that reads the environment: the settings.
_ENVIRONMENT_READER = Path("config") / "settings.py"


def environment_reads(source: str) -> list[int]:
    """Lines of ``source`` that refer to the environment at all (``os.environ``,
    ``os.getenv``, through any import alias)."""
    tree = ast.parse(source)
    names = _Names(tree)
    return sorted({node.lineno for node in ast.walk(tree)
                   if isinstance(node, (ast.Name, ast.Attribute))
                   and names.dotted(node) in _ENVIRONMENT})


@pytest.mark.parametrize("statement", [*READS[:5], "value = os.getenv('X')",
                                       "from os import getenv\nvalue = getenv('X')",
                                       "from os import environ as e\nvalue = e['X']",
                                       "import os as o\nvalue = o.environ.get('X')"])
def test_the_read_check_sees_every_form_of_reading_the_environment(statement: str) -> None:
    assert environment_reads(f"import os\nimport sys\n{statement}\n") != [], statement


def test_only_the_settings_read_the_environment() -> None:
    """``KAFKA_BOOTSTRAP_SERVERS`` or any other value set in ``TOOLWIRE_SETTINGS_FILE`` is
    the one every command uses: nothing reads the environment behind the settings' back."""
    readers = sorted(str(path.relative_to(SOURCE)) for path in SOURCE.rglob("*.py")
                     if environment_reads(path.read_text()))
    assert readers == [str(_ENVIRONMENT_READER)]


def test_only_the_cli_entry_point_touches_argv_and_no_module_writes_the_environment() -> None:
    sources = {path.relative_to(SOURCE): path.read_text() for path in SOURCE.rglob("*.py")}
    assert len(sources) >= len(MODULES)
    writes = [f"{path}:{line}: {what}" for path, text in sorted(sources.items())
              for line, what in environment_writes(text)]
    assert writes == []
    readers = sorted(str(path) for path, text in sources.items() if argv_reads(text))
    assert readers == [str(_ARGV_READER)]


def _imported(package: str) -> set[str]:
    """Every ``toolwire`` module the modules of ``package`` import, at any depth of code."""
    found: set[str] = set()
    for path in (SOURCE / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
    return {m for m in found if m.split(".")[0] == "toolwire"}


@pytest.mark.parametrize(("package", "below"), [
    ("app", ("toolwire.tools", "toolwire.cli")),
    ("kafka", ("toolwire.app", "toolwire.tools", "toolwire.cli", "toolwire.broker")),
])
def test_the_worker_and_the_shared_kafka_code_do_not_import_the_operators_tools(
        package: str, below: tuple[str, ...]) -> None:
    """The worker (``app``) does not import the operator's commands; what both need of Kafka
    is ``toolwire.kafka``, which imports neither."""
    bad = sorted(m for m in _imported(package) if m.startswith(below))
    assert bad == [], f"toolwire.{package} imports {bad}"


def test_the_gateway_library_does_not_pull_in_the_development_broker() -> None:
    probe = ("import sys, toolwire.publish; "
             "bad = [m for m in sys.modules if m.startswith(('toolwire.broker', 'toolwire.cli',"
             " 'toolwire.app', 'faust'))]; assert not bad, bad")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_fausts_own_command_line_finds_the_app(tmp_path: Path) -> None:
    """``faust -A toolwire.app worker`` keeps working: the app is built on first access."""
    probe = ("from faust.cli.base import find_app; app = find_app('toolwire.app'); "
             "print(app.conf.id, sorted(app.agents), sorted(app.tables))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", "TOOLWIRE_APP_ID": "via-faust",
                               "TOOLWIRE_STATE_DIR": str(tmp_path / "state"),
                               "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[0] == "via-faust"
    assert "chunks" in done.stdout and "quarantine" in done.stdout


def test_no_wire_imports_another_wire() -> None:
    """A wire module is its API's rules: what wires share lives in ``wires/_base.py`` and
    ``wires/_shared.py``, so that changing one wire never changes another by an import."""
    wires = SOURCE / "core" / "wires"
    modules = {p.stem for p in wires.glob("*.py") if not p.stem.startswith("_")}
    assert {"chat_completions", "anthropic_messages", "ollama_chat"} <= modules
    for name in sorted(modules):
        tree = ast.parse((wires / f"{name}.py").read_text())
        imported = {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module}
        others = {m for m in imported if m.startswith("toolwire.core.wires.")
                  and m.rsplit(".", 1)[1] in modules}
        assert others == set(), f"{name} imports another wire: {sorted(others)}"
