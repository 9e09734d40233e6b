"""`judgepanel fake-server` (issue 19 §5): the offline playground as a command a user can find.

Started as a user starts it — the console script in a child process — and spoken to with the real
OpenAI SDK: the first stdout line is the URL, the answers are labelled simulated, `--fail-rate`
injects retryable errors, Ctrl-C (SIGINT) stops it, and bad options end in one line and exit 2."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import openai

from tests.helpers import cli

COMMAND = [sys.executable, "-m", "judgepanel", "fake-server"]


@contextmanager
def serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = subprocess.Popen(
        [*COMMAND, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def _post(url: str, body: dict[str, object]) -> int:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_first_line_is_the_url_answers_are_simulated_and_ctrl_c_stops_it() -> None:
    with serving("--port", "0", "--latency", "0") as (proc, url):
        assert url.startswith("http://127.0.0.1:"), url
        client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "<candidate>A short text.</candidate> Score it 1-5."}],
        )
        assert reply.model == "sim/gpt-4o-mini"
        assert "[simulated]" in (reply.choices[0].message.content or "")
        client.close()
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        proc.wait(timeout=10)
        assert time.monotonic() - started < 10
        assert proc.returncode == 0


def test_fail_rate_one_fails_every_call_with_a_retryable_503() -> None:
    with serving("--port", "0", "--fail-rate", "1") as (proc, url):
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert [_post(url + "/v1/chat/completions", body) for _ in range(3)] == [503, 503, 503]
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


def test_a_port_in_use_is_one_line_and_exit_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([*COMMAND, "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr


def test_bad_options_are_one_line_and_exit_2() -> None:
    for args, message in (
        (["--fail-rate", "2"], "--fail-rate must be in [0, 1]"),
        (["--port", "70000"], "--port must be 0"),
        (["--latency", "soon"], "invalid float value"),
        (["--fault", "418=0.1"], "unknown fault"),
    ):
        r = cli("fake-server", *args)
        assert r.code == 2, (args, r.stderr)
        assert r.stdout == ""
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert message in r.stderr


def test_help_lists_the_servers_own_options() -> None:
    r = cli("fake-server", "--help")
    assert r.code == 0
    assert r.stdout.startswith("Usage: judgepanel fake-server")
    for option in ("--port", "--latency", "--fail-rate", "--fault", "--rpm", "--served-model"):
        assert option in r.stdout
