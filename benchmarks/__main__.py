"""Run every ``benchmarks/bench_*.py`` module's ``main()`` in name order (``python -m benchmarks``,
or ``python -m benchmarks agreement`` for the modules whose name contains a word)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import benchmarks


def main(argv: list[str]) -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_"))
    if argv:
        names = [n for n in names if any(word in n for word in argv)]
    if not names:
        print("no benchmark matches", " ".join(argv), file=sys.stderr)
        return 2
    for name in names:
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        importlib.import_module(f"benchmarks.{name}").main()
        print(f"({name}: {time.perf_counter() - start:.1f} s)\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
