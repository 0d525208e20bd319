"""The worker's memory after a sweep: give freed heap back to the system, and report the Python
heap when it is traced.

A worker that held many open responses keeps its resident size (RSS) after they complete:
Python's small-object allocator returns an arena to the C allocator only when every object in
it is free, and glibc's ``malloc`` returns freed memory to the system only from the top of its
heaps (``docs/benchmarks.md``, "RSS after completion"). Two opt-in aids, both called at the end
of each sweep (:func:`after_sweep`):

- ``TOOLWIRE_TRIM_AFTER_SWEEP=true`` calls glibc's ``malloc_trim(0)``, which returns the free
  pages inside the C heaps too (:func:`trim`; a no-op returning ``False`` where the C library
  is not glibc). It gives back little with Python's own allocator (its arenas are not free);
  with ``PYTHONMALLOC=malloc`` (every object from ``malloc``) it gives back most of what the
  completed responses held. The call walks the heaps: a few milliseconds on a large one.
- When ``tracemalloc`` traces (Python's own ``PYTHONTRACEMALLOC=1``; no Toolwire setting, the
  tracing slows the worker severalfold, for diagnosis only), each sweep logs the traced
  current and peak bytes: what Python objects hold, beside the RSS the system sees.
"""

from __future__ import annotations

import ctypes
import logging
import tracemalloc
from functools import cache
from typing import Any

from toolwire.config.settings import Settings

log = logging.getLogger("toolwire.app.memory")

MiB = 1 << 20


@cache
def _malloc_trim() -> Any | None:
    """glibc's ``malloc_trim``, or ``None`` where the process's C library has none (musl,
    macOS)."""
    try:
        libc = ctypes.CDLL(None)
        function = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    return function


def trim() -> bool:
    """``malloc_trim(0)``: return the C heaps' free memory to the system. ``True`` if glibc
    says some was released; ``False`` if none was, or where there is no glibc."""
    function = _malloc_trim()
    if function is None:
        return False
    return bool(function(0))


def traced() -> tuple[int, int] | None:
    """tracemalloc's (current, peak) traced bytes, or ``None`` when it does not trace."""
    if not tracemalloc.is_tracing():
        return None
    current, peak = tracemalloc.get_traced_memory()
    return current, peak


def after_sweep(settings: Settings) -> None:
    """What the worker does with its memory at the end of each sweep (see the module)."""
    trimmed = trim() if settings.trim_after_sweep else None
    heap = traced()
    if heap is not None:
        log.info("memory after sweep: tracemalloc current %.2f MiB, peak %.2f MiB%s",
                 heap[0] / MiB, heap[1] / MiB,
                 "" if trimmed is None else f", malloc_trim released: {trimmed}")
