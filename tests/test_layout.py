"""The package's shape: nothing happens at import, and no module steers another through the
environment or ``sys.argv``."""

from __future__ import annotations

import pkgutil
import re
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


@pytest.mark.parametrize("module", MODULES)
def test_importing_has_no_side_effect(module: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = subprocess.run([sys.executable, "-c", _PROBE, module], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", "TOOLWIRE_STATE_DIR": str(state)})
    assert done.returncode == 0, done.stderr[-2000:]


def test_only_the_cli_entry_point_touches_argv_and_no_module_writes_the_environment() -> None:
    writes = re.compile(r"os\.environ\[[^\]]+\]\s*=|os\.environ\.(update|setdefault)|"
                        r"os\.putenv|sys\.argv\s*=")
    offenders = [f"{path.relative_to(SOURCE)}:{n}" for path in SOURCE.rglob("*.py")
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if writes.search(line)]
    assert offenders == []


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
