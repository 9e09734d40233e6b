"""Start-up time of the `judgepanel` command against `python -c pass`, measured in the same run.

Every command line runs in a fresh interpreter (`python -m judgepanel …`), the way a shell script
calls it. Each is run a few times and the fastest run counts (wall clock; the CPU time of that
run is shown too, since on a shared machine it moves less; "cpu over" is the CPU time beyond
`python -c pass`). "Overhead" is the time beyond a bare
`python -c pass`: what judgepanel's imports, argument parsing and opening the database cost. The
commands that open a database ask about a name that does not exist, so they stop right after
start-up with their one-line error. Targets (issue 8): `--help` under 0.3 s, any command's import
overhead under 0.5 s.

Python runs with compiled bytecode, as an installed package does: the environment may say
PYTHONDONTWRITEBYTECODE (then every module of the source tree is compiled anew at each start,
20–50 ms here), so the runs get a bytecode cache of their own in a temporary folder
(PYTHONPYCACHEPREFIX), filled by one unmeasured run of each command line first.

`python -m benchmarks.bench_startup --before DIR` also measures the judgepanel source tree in DIR
(e.g. an older commit, `git archive COMMIT | tar -x -C DIR`) in the same run, each command line
alternating between the two trees, so that load on a shared machine falls on both alike.
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


def _once(argv: list[str], env: dict[str, str], cwd: str | None) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_env(tmp: str, **extra: str) -> dict[str, str]:
    """The environment of the measured runs: a bytecode cache of their own (see the docstring)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "COLUMNS": "100", "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache"), **extra}


def run(argv: list[str], env: dict[str, str], cwd: str | None = None) -> tuple[float, float]:
    """Fastest (wall, cpu) seconds of REPEAT runs (the CPU time is that of the fastest run)."""
    return min(_once(argv, env, cwd) for _ in range(REPEAT))


def compare(before: str) -> None:
    """Each command line on the tree in `before` and on this one, alternating: best of REPEAT
    wall and best of REPEAT CPU seconds of each."""
    import shlex

    here = str(Path(__file__).resolve().parent.parent)
    trees = {"before": str(Path(before).resolve()), "after": here}
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'judgepanel.db'}"
        py = sys.executable
        envs = {k: bench_env(tmp, PYTHONPATH=d) for k, d in trees.items()}
        subprocess.run(
            [py, "-m", "judgepanel", "--db", url, "db", "upgrade"],
            env=envs["after"],
            cwd=here,
            check=True,
            capture_output=True,
        )
        base = [_once([py, "-c", "pass"], envs["after"], None) for _ in range(REPEAT + 1)][1:]
        base_wall, base_cpu = min(w for w, _ in base), min(c for _, c in base)
        print(f"python -c pass: {base_wall:.3f} s wall, {base_cpu:.3f} s cpu (best of {REPEAT} each)")
        print(
            f"{'judgepanel …':48} {'before wall':>11} {'cpu':>5} {'after wall':>10} {'cpu':>5} {'target':>6}"
        )
        met = 0
        for line, target in COMMANDS:
            argv = [py, "-m", "judgepanel", "--db", url, *shlex.split(line)]
            for key in ("before", "after"):  # fills the bytecode cache
                _once(argv, envs[key], trees[key])
            runs: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
            for _ in range(REPEAT):
                for key in ("before", "after"):
                    runs[key].append(_once(argv, envs[key], trees[key]))
            best = {k: (min(w for w, _ in r), min(c for _, c in r)) for k, r in runs.items()}
            ok = best["after"][0] - base_wall < target
            met += ok
            print(
                f"{line[:48]:48} {best['before'][0]:11.3f} {best['before'][1]:5.2f} "
                f"{best['after'][0]:10.3f} {best['after'][1]:5.2f} {target:6.1f}{'' if ok else '  over'}"
            )
        print(f"{met} of {len(COMMANDS)} command lines (after) within their target overhead (wall clock)")


def main() -> None:
    import shlex

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'judgepanel.db'}"
        env = bench_env(tmp)
        py = sys.executable
        subprocess.run(
            [py, "-m", "judgepanel", "--db", url, "db", "upgrade"], env=env, check=True, capture_output=True
        )
        _once([py, "-c", "pass"], env, None)
        base_wall, base_cpu = run([py, "-c", "pass"], env)
        print(f"python -c pass: {base_wall:.3f} s wall, {base_cpu:.3f} s cpu (best of {REPEAT})")
        print(
            f"{'judgepanel …':48} {'wall s':>6} {'overhead':>8} {'ratio':>5} {'cpu s':>5} {'cpu over':>8} {'target':>6}"
        )
        over = 0
        for line, target in COMMANDS:
            argv = [py, "-m", "judgepanel", "--db", url, *shlex.split(line)]
            _once(argv, env, None)  # fills the bytecode cache
            wall, cpu = run(argv, env)
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
    if sys.argv[1:2] == ["--before"] and len(sys.argv) == 3:
        compare(sys.argv[2])
    else:
        main()
