"""Importing other tools' graders: speed and peak memory as the files grow (issue 35 §4).

promptfoo: a results file of N results (default 10⁵; `JP_BENCH_PROMPTFOO_N`, comma-separated, e.g.
`100000,1000000`) is made from a result the real promptfoo CLI wrote (tests/data/promptfoo: one
test, two `llm-rubric` assertions; the article cut to 600 characters so that 10⁶ results fit a
disk), each copy with its own test id; `judgepanel data import-promptfoo` runs in its own process
on a fresh SQLite file; reported: seconds (wall and CPU), peak RSS, results per second, and, as the
reference measured in the same run, the standard library's `json.load` of the same file in its own
process (CPU seconds; it holds the whole file, so only up to 2·10⁵ results). The target is ≤ 5 s at
10⁵. The machine is shared: the load average is printed before and after, and the CPU seconds are
the figures to compare (wall time under load counts other processes' time).

Inspect AI: a `.eval` log of N samples (default 10⁴; `JP_BENCH_INSPECT_N`) written by Inspect's own
`write_eval_log` from a log the real Inspect wrote (tests/datasets/graded_logs.py: fake-server
graders, two scorers), each sample copied under its own id; then, each in its own process, Inspect's
`inspect_ai.analysis.samples_df` reading that log (the reference, measured in the same run) and
`judgepanel data import-inspect`, alternating `JP_BENCH_ROUNDS` times (default 3). Reported: each
run's seconds (wall and CPU) and peak RSS, and the ratios of the medians. The import reads a log of
more than one batch in two child processes (`datasets.inspect_log`): its CPU is its own and its
children's, its peak RSS the parent's and the largest child's.

`JP_BENCH_PROMPTFOO_N=` / `JP_BENCH_INSPECT_N=` (empty) skip one tool; `JP_BENCH_KEEP=DIR` keeps the
Inspect logs in DIR and reuses them (writing 10⁴ samples with Inspect's writer takes over a minute).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROMPTFOO_NS = [int(n) for n in os.environ.get("JP_BENCH_PROMPTFOO_N", "100000").split(",") if n]
# "short" (question/answer records), "article" (the article cut to 600 characters), or both
PROMPTFOO_KINDS = os.environ.get("JP_BENCH_PROMPTFOO_KINDS", "article,short").split(",")
INSPECT_NS = [int(n) for n in os.environ.get("JP_BENCH_INSPECT_N", "10000").split(",") if n]
ROUNDS = int(os.environ.get("JP_BENCH_ROUNDS", "3"))
KEEP = os.environ.get("JP_BENCH_KEEP")
REFERENCE_MAX = int(
    os.environ.get("JP_BENCH_REFERENCE_MAX", "200000")
)  # json.load holds the whole file (≈ 4.5 GB at 10⁵ results here)
# VmHWM, this process image's own peak: ru_maxrss survives exec and starts at the parent's
PEAK = "print(int([x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0].split()[1]) / 1024)"
# CPU seconds of this process from the start (interpreter start-up and imports included) and of
# the children it waited for (the import's reader processes); then the largest child's peak RSS
CPU = (
    "import resource as _r; _u = _r.getrusage(_r.RUSAGE_SELF); _c = _r.getrusage(_r.RUSAGE_CHILDREN); "
    "print(_u.ru_utime + _u.ru_stime + _c.ru_utime + _c.ru_stime)"
)
CHILD_PEAK = "import resource as _r; print(_r.getrusage(_r.RUSAGE_CHILDREN).ru_maxrss / 1024)"

IMPORT = f"""
import sys, time
t = time.perf_counter()
from judgepanel.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    assert not e.code, e.code
print(time.perf_counter() - t)
{CPU}
{PEAK}
{CHILD_PEAK}
"""

JSON_LOAD = f"""
import json, sys, time
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    n = len(json.load(f)["results"]["results"])
print(time.perf_counter() - t)
{CPU}
{PEAK}
{CHILD_PEAK}
assert n > 0
"""

SAMPLES_DF = f"""
import sys, time
t = time.perf_counter()
from inspect_ai.analysis import samples_df
n = len(samples_df(sys.argv[1], quiet=True))
print(time.perf_counter() - t)
{CPU}
{PEAK}
{CHILD_PEAK}
assert n > 0
"""


def _run(code: str, *args: str) -> tuple[float, float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MB, largest child's peak RSS MB) of `code` run in its
    own process."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    seconds, cpu, rss, child = done.stdout.split()[-4:]
    return float(seconds), float(cpu), float(rss), float(child)


def _load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


SHORT_QUESTION = "Which city is the capital of Australia, and why was it chosen?"
SHORT_ANSWER = "Canberra, a compromise between Sydney and Melbourne."


def promptfoo_file(path: Path, n: int, short: bool = False) -> Path:
    """`n` copies of the kept file's first result, each under its own test id, streamed to disk.
    `short`: its vars replaced by a short question and answer (as most promptfoo suites are: a
    record of about 7 KB, the rendered prompts and promptfoo's own fields around them), else the
    article cut to 600 characters."""
    data = json.loads((REPO / "tests/data/promptfoo/results-0.121.20.json").read_text(encoding="utf-8"))
    one = data["results"]["results"][0]
    swaps = [(one["vars"]["article"], SHORT_QUESTION if short else one["vars"]["article"][:600])]
    if short:
        swaps.append((one["vars"]["summary"], SHORT_ANSWER))
    # each also sits JSON-escaped inside the rendered grading prompts (a string of JSON)
    swaps += [
        (json.dumps(a, ensure_ascii=False)[1:-1], json.dumps(b, ensure_ascii=False)[1:-1]) for a, b in swaps
    ]

    def cut(v: object) -> object:
        if isinstance(v, str):
            for a, b in swaps:
                v = v.replace(a, b)
            return v
        if isinstance(v, dict):
            return {k: cut(x) for k, x in v.items()}
        if isinstance(v, list):
            return [cut(x) for x in v]
        return v

    template = json.dumps(cut(one))
    marker = json.dumps(one["vars"]["id"])[1:-1]
    head = dict(data)
    results = dict(data["results"])
    results["results"] = []
    head["results"] = results
    text = json.dumps(head)
    before, after = text.split('"results": []', 1)
    with path.open("w", encoding="utf-8") as f:
        f.write(before + '"results": [')
        for k in range(n):
            f.write(("," if k else "") + template.replace(marker, f"bench-{k}"))
        f.write("]" + after)
    return path


def inspect_log(folder: Path, n: int) -> Path:
    """A log of `n` samples (Inspect's writer) copied from the real log tests/datasets writes."""
    manifest = folder / "logs.json"
    if not manifest.exists():
        subprocess.run(
            [sys.executable, "-m", "tests.datasets.graded_logs", str(folder)], cwd=REPO, check=True
        )
    source = json.loads(manifest.read_text())["graded"]
    code = """
import sys
from inspect_ai.log import read_eval_log, write_eval_log
log = read_eval_log(sys.argv[1])
base = [s for s in log.samples if s.epoch == 1]
n = int(sys.argv[3])
log.samples = [base[k % len(base)].model_copy(update={"id": f"bench-{k}", "uuid": None}) for k in range(n)]
log.eval.dataset.sample_ids = [s.id for s in log.samples]
log.eval.dataset.samples = n
log.eval.config.epochs = 1
write_eval_log(log, sys.argv[2])
"""
    out = folder / f"bench-{n}.eval"
    if out.exists():  # kept from an earlier run (JP_BENCH_KEEP)
        return out
    subprocess.run([sys.executable, "-c", code, source, str(out), str(n)], cwd=REPO, check=True)
    return out


def _inspect(folder: Path, n: int) -> None:
    log = inspect_log(folder, n)
    size = log.stat().st_size / 1e6
    ours, ref = [], []
    for k in range(ROUNDS):  # alternating, so that both meet the same load
        ref.append(_run(SAMPLES_DF, str(log)))
        db = folder / f"in-{n}-{k}.db"
        subprocess.run(
            [sys.executable, "-m", "judgepanel", "--db", f"sqlite:///{db}", "db", "upgrade"],
            check=True,
            capture_output=True,
        )
        ours.append(
            _run(IMPORT, f"--db=sqlite:///{db}", "data", "import-inspect", str(log), "--name", "b", "--json")
        )
        db.unlink()
        print(
            f"inspect   {n:>9,} samples ({size:,.0f} MB .eval), round {k + 1}: samples_df {ref[-1][0]:6.1f} s "
            f"(CPU {ref[-1][1]:5.1f} s), peak {ref[-1][2]:4.0f} MB | judgepanel import {ours[-1][0]:6.1f} s "
            f"(CPU {ours[-1][1]:5.1f} s), peak {ours[-1][2]:4.0f} MB, readers {ours[-1][3]:4.0f} MB | "
            f"{_load()}",
            flush=True,
        )
    wall = [statistics.median(r[0] for r in runs) for runs in (ours, ref)]
    cpu = [statistics.median(r[1] for r in runs) for runs in (ours, ref)]
    print(
        f"inspect   {n:>9,} samples, medians of {ROUNDS}: import {wall[0]:.1f} s wall, {cpu[0]:.1f} s CPU | "
        f"samples_df {wall[1]:.1f} s wall, {cpu[1]:.1f} s CPU | import / samples_df: wall {wall[0] / wall[1]:.2f}x, "
        f"CPU {cpu[0] / cpu[1]:.2f}x",
        flush=True,
    )


def _promptfoo(folder: Path, n: int, kind: str) -> None:
    t = time.perf_counter()
    path = promptfoo_file(folder / f"pf-{kind}-{n}.json", n, short=kind == "short")
    size = path.stat().st_size / 1e6
    made = time.perf_counter() - t
    db = f"sqlite:///{folder}/pf-{kind}-{n}.db"
    subprocess.run(
        [sys.executable, "-m", "judgepanel", "--db", db, "db", "upgrade"], check=True, capture_output=True
    )
    secs, cpu, rss, _child = _run(
        IMPORT, f"--db={db}", "data", "import-promptfoo", str(path), "--name", "bench", "--json"
    )
    print(
        f"promptfoo {n:>9,} {kind} results ({size:,.0f} MB, made in {made:.1f} s): import {secs:6.1f} s "
        f"(CPU {cpu:5.1f} s), peak {rss:5.0f} MB; {1e6 * cpu / n:,.0f} CPU µs a result, "
        f"{cpu / size:.3f} CPU s a MB | {_load()}",
        flush=True,
    )
    if n <= REFERENCE_MAX:
        ref = _run(JSON_LOAD, str(path))
        print(
            f"          json.load of the same file: {ref[0]:6.1f} s (CPU {ref[1]:5.1f} s), peak "
            f"{ref[2]:5.0f} MB | import / json.load (CPU) {cpu / ref[1]:.2f}x",
            flush=True,
        )
    path.unlink()
    Path(f"{folder}/pf-{kind}-{n}.db").unlink()


def main() -> None:
    print(f"before: {_load()} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind in PROMPTFOO_KINDS:
            for n in PROMPTFOO_NS:
                _promptfoo(folder, n, kind)
        for n in INSPECT_NS:
            _inspect(Path(KEEP) if KEEP else folder, n)
    print(f"after: {_load()}")


if __name__ == "__main__":
    main()
