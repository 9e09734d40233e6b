"""Importing other tools' graders: speed and peak memory as the files grow (issue 35 §4).

promptfoo: a results file of N results (default 10⁵; `JP_BENCH_PROMPTFOO_N`, comma-separated, e.g.
`100000,1000000`) is made from a result the real promptfoo CLI wrote (tests/data/promptfoo: one
test, two `llm-rubric` assertions; the article cut to 600 characters so that 10⁶ results fit a
disk), each copy with its own test id; `judgepanel data import-promptfoo` runs in its own process
on a fresh SQLite file; reported: seconds, peak RSS, results per second. The target is ≤ 5 s at 10⁵.

Inspect AI: a `.eval` log of N samples (default 10⁴; `JP_BENCH_INSPECT_N`) written by Inspect's own
`write_eval_log` from a log the real Inspect wrote (tests/datasets/graded_logs.py: fake-server
graders, two scorers), each sample copied under its own id; then, each in its own process, Inspect's
`inspect_ai.analysis.samples_df` reading that log (the reference, measured in the same run) and
`judgepanel data import-inspect`. Reported: seconds and peak RSS of both, and their ratio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROMPTFOO_NS = [int(n) for n in os.environ.get("JP_BENCH_PROMPTFOO_N", "100000").split(",")]
INSPECT_NS = [int(n) for n in os.environ.get("JP_BENCH_INSPECT_N", "10000").split(",")]
# VmHWM, this process image's own peak: ru_maxrss survives exec and starts at the parent's
PEAK = "print(int([x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0].split()[1]) / 1024)"

IMPORT = f"""
import sys, time
t = time.perf_counter()
from judgepanel.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    assert not e.code, e.code
print(time.perf_counter() - t)
{PEAK}
"""

SAMPLES_DF = f"""
import sys, time
t = time.perf_counter()
from inspect_ai.analysis import samples_df
n = len(samples_df(sys.argv[1], quiet=True))
print(time.perf_counter() - t)
{PEAK}
assert n > 0
"""


def _run(code: str, *args: str) -> tuple[float, float]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    seconds, rss = done.stdout.split()[-2:]
    return float(seconds), float(rss)


def promptfoo_file(path: Path, n: int) -> Path:
    """`n` copies of the kept file's first result, each under its own test id, streamed to disk."""
    data = json.loads((REPO / "tests/data/promptfoo/results-0.121.20.json").read_text(encoding="utf-8"))
    one = data["results"]["results"][0]
    article = one["vars"]["article"]
    short = article[:600]

    # the article also sits JSON-escaped inside the rendered grading prompts (a string of JSON)
    escaped, escaped_short = (
        json.dumps(article, ensure_ascii=False)[1:-1],
        json.dumps(short, ensure_ascii=False)[1:-1],
    )

    def cut(v: object) -> object:
        if isinstance(v, str):
            return v.replace(article, short).replace(escaped, escaped_short)
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
    subprocess.run([sys.executable, "-c", code, source, str(out), str(n)], cwd=REPO, check=True)
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in PROMPTFOO_NS:
            t = time.perf_counter()
            path = promptfoo_file(folder / f"pf-{n}.json", n)
            size = path.stat().st_size / 1e6
            made = time.perf_counter() - t
            db = f"sqlite:///{folder}/pf-{n}.db"
            subprocess.run(
                [sys.executable, "-m", "judgepanel", "--db", db, "db", "upgrade"],
                check=True,
                capture_output=True,
            )
            secs, rss = _run(
                IMPORT, f"--db={db}", "data", "import-promptfoo", str(path), "--name", "bench", "--json"
            )
            print(
                f"promptfoo {n:>9,} results ({size:,.0f} MB, made in {made:.1f} s): import {secs:6.1f} s, "
                f"peak {rss:5.0f} MB, {n / secs:,.0f} results/s"
            )
            path.unlink()
        for n in INSPECT_NS:
            log = inspect_log(folder, n)
            ref = _run(SAMPLES_DF, str(log))
            db = f"sqlite:///{folder}/in-{n}.db"
            subprocess.run(
                [sys.executable, "-m", "judgepanel", "--db", db, "db", "upgrade"],
                check=True,
                capture_output=True,
            )
            ours = _run(IMPORT, f"--db={db}", "data", "import-inspect", str(log), "--name", "bench", "--json")
            print(
                f"inspect   {n:>9,} samples ({log.stat().st_size / 1e6:,.0f} MB .eval): judgepanel import "
                f"{ours[0]:6.1f} s, peak {ours[1]:5.0f} MB | samples_df {ref[0]:6.1f} s, peak {ref[1]:5.0f} MB | "
                f"import / samples_df {ours[0] / ref[0]:.2f}x"
            )


if __name__ == "__main__":
    main()
