"""Start-up time of the `judgepanel` command against `python -c pass`, measured in the same run.

Every command line runs in a fresh interpreter (`python -m judgepanel …`), the way a shell script
calls it. Each is run a few times and the fastest run counts (wall clock; the CPU time of that
run is shown too, since on a shared machine it moves less; "cpu over" is the CPU time beyond
`python -c pass`). "Overhead" is the time beyond a bare
`python -c pass`: what judgepanel's imports, argument parsing and opening the database cost. The
commands that open a database ask about a name that does not exist, so they stop right after
start-up with their one-line error. Targets (issue 8): `--help` under 0.3 s, any command's import
overhead under 0.5 s.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEAT = 3
HELP_TARGET, COMMAND_TARGET = 0.3, 0.5

# (command line after `judgepanel --db URL`, target overhead in seconds)
COMMANDS: list[tuple[str, float]] = [
    ("--help", HELP_TARGET),
    ("metrics --help", HELP_TARGET),
    ("data list", COMMAND_TARGET),
    ("data pairs nosuch --name x", COMMAND_TARGET),
    ("metrics agreement --pairs nosuch --metric alpha", COMMAND_TARGET),
    ("metrics bias --campaign nosuch", COMMAND_TARGET),
    ("campaign status nosuch", COMMAND_TARGET),
    ("validate loo --dataset nosuch --judge x", COMMAND_TARGET),
    ("rubric list", COMMAND_TARGET),
    ('query "select 1"', COMMAND_TARGET),
    ("plan overlap --sigma0 0.5 --mu-d 0.1", COMMAND_TARGET),
]


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Fastest (wall, cpu) seconds of REPEAT runs."""
    best: tuple[float, float] | None = None
    for _ in range(REPEAT):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if best is None or wall < best[0]:
            best = (wall, cpu)
    assert best is not None
    return best


def main() -> None:
    import shlex

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'judgepanel.db'}"
        env = {**os.environ, "COLUMNS": "100"}
        py = sys.executable
        subprocess.run(
            [py, "-m", "judgepanel", "--db", url, "db", "upgrade"], env=env, check=True, capture_output=True
        )
        base_wall, base_cpu = run([py, "-c", "pass"], env)
        print(f"python -c pass: {base_wall:.3f} s wall, {base_cpu:.3f} s cpu (best of {REPEAT})")
        print(
            f"{'judgepanel …':48} {'wall s':>6} {'overhead':>8} {'ratio':>5} {'cpu s':>5} {'cpu over':>8} {'target':>6}"
        )
        over = 0
        for line, target in COMMANDS:
            wall, cpu = run([py, "-m", "judgepanel", "--db", url, *shlex.split(line)], env)
            overhead = wall - base_wall
            flag = "" if overhead < target else "  over"
            over += bool(flag)
            print(
                f"{line[:48]:48} {wall:6.3f} {overhead:8.3f} {wall / base_wall:5.1f} {cpu:5.2f} "
                f"{cpu - base_cpu:8.2f} {target:6.1f}{flag}"
            )
        print(
            f"{len(COMMANDS) - over} of {len(COMMANDS)} command lines within their target overhead (wall clock)"
        )


if __name__ == "__main__":
    main()
