"""The commands users run most, on a real store, against references timed in the same run (issue 20).

The store: the bundled SummEval sample (128 summaries, 8 annotators), a 200-pair set `se200`, and
a finished pairwise campaign `c` of two simulated judges over its first 50 pairs (200 verdicts).
Each command line runs in a fresh interpreter (`python -m judgepanel …`), alternating with the
references, best of `REPEAT` of wall and of CPU time each (on a shared machine CPU time moves
less than wall time; the load average is printed):

- `--help` against `python -c "import typer"` (target: at most 3×);
- `campaign list`, `campaign status c`, `metrics agreement --pairs se200 --metric alpha`
  (target: at most 0.5 s wall; shown beside `python -c pass`).

`python -m benchmarks.bench_read_commands --before DIR` also times the judgepanel tree in DIR
(e.g. `git archive main | tar -x -C DIR`) in the same rounds, so the ratio after/before is
measured under the same load. Run: `python -m benchmarks read_commands`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_startup import _once, bench_env

REPEAT = 5
CREATE = ("--judge", "sim:a", "--judge", "sim:b", "--limit", "50")
COMMANDS = (
    "--help",
    "campaign list",
    "campaign status c",
    "metrics agreement --pairs se200 --metric alpha",
)


def _store(url: str, env: dict[str, str], cwd: str) -> None:
    from judgepanel.resources import sample_path

    py = sys.executable
    steps = [
        ["db", "upgrade"],
        ["data", "import-summeval", str(sample_path("summeval_sample.jsonl.gz")), "--name", "se"],
        ["data", "pairs", "se", "--name", "se200", "--sample", "200"],
        ["campaign", "create", "c", "--dataset", "se", "--pairs", "se200", "--protocol", "pairwise", *CREATE],
        ["campaign", "run", "c", "--json"],
    ]
    for step in steps:
        subprocess.run(
            [py, "-m", "judgepanel", "--db", url, *step], env=env, cwd=cwd, check=True, capture_output=True
        )


def measure(before: str | None) -> None:
    here = str(Path(__file__).resolve().parent.parent)
    trees = {"after": here} if before is None else {"before": str(Path(before).resolve()), "after": here}
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'read.db'}"
        py = sys.executable
        envs = {k: bench_env(tmp, PYTHONPATH=d) for k, d in trees.items()}
        _store(url, envs["after"], here)
        refs = {"python -c pass": [py, "-c", "pass"], 'python -c "import typer"': [py, "-c", "import typer"]}
        lines = {
            (key, line): [py, "-m", "judgepanel", "--db", url, *shlex.split(line)]
            for line in COMMANDS
            for key in trees
        }
        for (key, _), argv in lines.items():  # fills the bytecode caches
            _once(argv, envs[key], trees[key])
        for argv in refs.values():
            _once(argv, envs["after"], None)
        runs: dict[object, list[tuple[float, float]]] = {k: [] for k in [*refs, *lines]}
        for _ in range(REPEAT):
            for name, argv in refs.items():
                runs[name].append(_once(argv, envs["after"], None))
            for (key, line), argv in lines.items():
                runs[(key, line)].append(_once(argv, envs[key], trees[key]))
        best = {k: (min(w for w, _ in r), min(c for _, c in r)) for k, r in runs.items()}
        load = os.getloadavg()
        print(
            f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores; best of {REPEAT} rounds, alternating"
        )
        for name in refs:
            print(f"{name:50} {best[name][0]:7.3f} s wall {best[name][1]:6.3f} s cpu")
        typer_wall, typer_cpu = best['python -c "import typer"']
        for line in COMMANDS:
            for key in trees:
                wall, cpu = best[(key, line)]
                note = (
                    f"  {wall / typer_wall:.1f}x / {cpu / typer_cpu:.1f}x import typer"
                    if line == "--help"
                    else ""
                )
                print(f"{key:6} judgepanel {line:36} {wall:7.3f} s wall {cpu:6.3f} s cpu{note}")
            if before is not None:
                b, a = best[("before", line)], best[("after", line)]
                print(f"{'':6} after/before: {a[0] / b[0]:.2f} wall, {a[1] / b[1]:.2f} cpu")


def main() -> None:
    before = None
    if "--before" in sys.argv:
        before = sys.argv[sys.argv.index("--before") + 1]
    measure(before)


if __name__ == "__main__":
    main()
