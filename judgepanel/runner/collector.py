"""The garbage collector while a run works: the heap set up before the run frozen out of the
cyclic collector's reach (`freeze_heap`), and the youngest generation collected less often
(`RelaxedCollector`).

Boundary: process-wide collector settings, switched on and off around a run by
`runner.executor.Runner.run`; nothing of campaigns or calls.
"""

from __future__ import annotations

import contextlib
import gc


def freeze_heap() -> bool:
    """Move every object alive now (the SDKs, SQLAlchemy, the compiled templates: the process's
    whole heap once a run is set up) out of the cyclic garbage collector's reach until
    `gc.unfreeze()`; True when this call froze it. Every full collection during the run then walks
    only what the run allocated instead of some 300,000 objects that cannot become garbage while it
    runs: at zero latency that was about 5 % of the runner's CPU (one full collection per ~2,000
    calls, 0.15–0.2 s each). Nothing is kept alive: objects freed by their reference count go as
    before, and the run unfreezes when it ends. A heap already frozen (by the caller, or by another
    run in this process) is left to whoever froze it."""
    if gc.get_freeze_count():
        return False
    gc.freeze()
    return True


# the youngest generation's collection threshold while a run works (CPython's default is 700)
RUN_GC_THRESHOLD = 10_000


class RelaxedCollector:
    """Collect the youngest generation every `RUN_GC_THRESHOLD` net allocations instead of every
    700 while a run works (`start` … `stop`). At zero latency the SDKs, their HTTP stack and the
    runner allocate thousands of container objects a call, and the default threshold made about
    150 young collections and 13 middle ones per 2,000 calls, 0.10–0.12 CPU ms a call in all
    (measured with `gc.callbacks`); at 10,000 they cost 0.03–0.04 ms. Cyclic garbage lives a
    little longer (a few MB at most); nothing else changes.

    A caller's higher threshold is left alone, and a collector switched off (threshold 0) stays
    off. Someone lowering the threshold while the run works (the CLI restores CPython's default
    after its start-up, `cli._collect_after_start_up`, which may fall inside a run) is noted and
    raised again after that collection; when the run stops, the threshold is the one it would
    have been without the run."""

    def __init__(self) -> None:
        self._restore: tuple[int, int, int] | None = None
        self._active = False

    def start(self) -> None:
        now = gc.get_threshold()
        if now[0] == 0:
            return
        self._active = True
        if now[0] < RUN_GC_THRESHOLD:
            self._restore = now
            gc.set_threshold(RUN_GC_THRESHOLD, now[1], now[2])
        gc.callbacks.append(self._keep)

    def _keep(self, phase: str, info: dict[str, int]) -> None:
        if phase != "stop" or not self._active:
            return
        now = gc.get_threshold()
        if 0 < now[0] < RUN_GC_THRESHOLD:  # lowered by someone else meanwhile: theirs after the run
            self._restore = now
            gc.set_threshold(RUN_GC_THRESHOLD, now[1], now[2])

    def stop(self) -> None:
        if not self._active:
            return
        self._active = False  # the callback stays inert even if a collection holds it right now
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._keep)
        if self._restore is not None and gc.get_threshold()[0] == RUN_GC_THRESHOLD:
            gc.set_threshold(*self._restore)
