"""The providers' TLS: one `ssl.SSLContext` per process shared by every SDK client, and certificate
checks still on and still steered by `SSL_CERT_FILE` / `SSL_CERT_DIR` (a real HTTPS server on
127.0.0.1 with a self-signed certificate made here by `openssl`, the real SDKs, no patching)."""

from __future__ import annotations

import shutil
import sqlite3
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest

from judgepanel.errors import CertificateRefused
from judgepanel.fake.server import FakeServer
from judgepanel.providers import ChatRequest, Provider, make_provider, parse_spec
from judgepanel.providers.sdk import CA_VARIABLES, shared_ssl_context
from tests.providers.conftest import OPENAI_KEY, only_test_keys

REQUEST = ChatRequest(messages=[{"role": "user", "content": "Is the sky blue? Answer A or B."}])


def _self_signed(folder: Path, name: str) -> tuple[Path, Path]:
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The server's certificate and another self-signed one (a CA bundle that does not vouch for it)."""
    folder = tmp_path_factory.mktemp("tls")
    server_cert, _ = _self_signed(folder, "server")
    other, _ = _self_signed(folder, "other")
    return server_cert, other


@pytest.fixture(scope="module")
def https_server(certs: tuple[Path, Path]) -> Iterator[FakeServer]:
    cert = certs[0]
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, cert.with_suffix(".key"))
    with FakeServer(seed=3, tls=tls) as server:
        yield server


@pytest.fixture
def https(https_server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    https_server.reset()
    only_test_keys(monkeypatch, *CA_VARIABLES)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", OPENAI_KEY)
    assert https_server.url.startswith("https://127.0.0.1:")
    return https_server


def _provider(kind: str, server: FakeServer) -> Provider:
    if kind == "azure":
        return make_provider(
            parse_spec(f"azure:judge-1?endpoint={server.url}&api_version=2024-10-21&max_tokens=50")
        )
    base = f"{server.url}/v1" if kind == "openai" else server.url
    return make_provider(parse_spec(f"{kind}:judge-1?base_url={base}&max_tokens=50"))


async def _ask(provider: Provider) -> str:
    try:
        return (await provider.complete(REQUEST, timeout=10)).text
    finally:
        await provider.aclose()


def _handshakes(context: ssl.SSLContext) -> int:
    return int(context.session_stats()["connect"])


async def test_every_provider_of_a_process_shakes_hands_with_one_context_until_the_ca_variable_changes(
    https: FakeServer, certs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certs[0]))
    # both SDKs send with the same HTTP library, so they share the one context
    shared = shared_ssl_context(openai.DefaultAsyncHttpxClient)
    assert shared_ssl_context(anthropic.DefaultAsyncHttpxClient) is shared
    assert (
        isinstance(shared, ssl.SSLContext)
        and shared.verify_mode == ssl.CERT_REQUIRED
        and shared.check_hostname
    )
    before = _handshakes(shared)
    kinds = ["openai", "openai", "anthropic", "azure"]
    providers = [_provider(kind, https) for kind in kinds]
    for provider in providers:
        assert "[simulated]" in await _ask(provider)
    # each provider (OpenAI, Anthropic, Azure) opened its own connection, and every handshake went
    # through the shared context
    assert _handshakes(shared) - before == 4
    assert [r.path for r in https.recent()] == [
        "/v1/chat/completions",
        "/v1/chat/completions",
        "/v1/messages",
        "/openai/deployments/judge-1/chat/completions",
    ]

    # another value of SSL_CERT_FILE (the same certificate under another name): a new context
    moved = tmp_path / "bundle.pem"
    shutil.copy(certs[0], moved)
    monkeypatch.setenv("SSL_CERT_FILE", str(moved))
    fresh = shared_ssl_context(openai.DefaultAsyncHttpxClient)
    assert fresh is not shared
    assert "[simulated]" in await _ask(_provider("anthropic", https))
    assert (_handshakes(fresh), _handshakes(shared) - before) == (1, 4)
    # and back: the first context again, not a third one
    monkeypatch.setenv("SSL_CERT_FILE", str(certs[0]))
    assert shared_ssl_context(anthropic.DefaultAsyncHttpxClient) is shared


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_certificates_are_still_checked_against_the_ca_variables(
    kind: str, https: FakeServer, certs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    server_cert, other = certs
    # no CA variable: the system bundle does not vouch for a self-signed certificate
    # (not retried: no retry changes a certificate; the message says what does)
    with pytest.raises(
        CertificateRefused,
        match=r"connection failed \(ConnectError: certificate verify failed: self.signed.*SSL_CERT_FILE",
    ):
        await _ask(_provider(kind, https))
    # a bundle that holds another certificate: still refused
    monkeypatch.setenv("SSL_CERT_FILE", str(other))
    with pytest.raises(CertificateRefused, match="certificate verify failed"):
        await _ask(_provider(kind, https))
    assert https.recent() == []  # nothing reached the server
    # SSL_CERT_FILE naming the server's certificate: the call goes through
    monkeypatch.setenv("SSL_CERT_FILE", str(server_cert))
    assert "[simulated]" in await _ask(_provider(kind, https))
    # SSL_CERT_DIR alone, a folder holding it under its subject hash (as `c_rehash` names it)
    monkeypatch.delenv("SSL_CERT_FILE")
    folder = server_cert.parent / f"dir-{kind}"
    folder.mkdir()
    subject_hash = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(server_cert)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    shutil.copy(server_cert, folder / f"{subject_hash}.0")
    monkeypatch.setenv("SSL_CERT_DIR", str(folder))
    assert "[simulated]" in await _ask(_provider(kind, https))
    assert len(https.recent()) == 2


SDK_CLIENTS = {"OpenAI", "AsyncOpenAI", "AzureOpenAI", "AsyncAzureOpenAI", "Anthropic", "AsyncAnthropic"}
HTTP_CLIENTS = {"DefaultHttpxClient", "DefaultAsyncHttpxClient", "DefaultAioHttpClient"}


def test_every_sdk_client_judgepanel_builds_gets_the_shared_http_client() -> None:
    """Each SDK client made in judgepanel's code is handed `http_client=` (which `sdk.http_client`
    builds with the shared context), and only `providers/sdk.py` calls the SDKs' HTTP client classes:
    a new call site that let the SDK build its own client would build its own TLS context again."""
    import ast

    import judgepanel

    package = Path(judgepanel.__file__).parent
    sdk_calls, offences = 0, []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            where = f"{path.relative_to(package)}:{node.lineno}"
            if name in SDK_CLIENTS:
                sdk_calls += 1
                if "http_client" not in {k.arg for k in node.keywords}:
                    offences.append(f"{where}: {name}(…) without http_client=")
            if name in HTTP_CLIENTS and path.name != "sdk.py":
                offences.append(f"{where}: {name}(…) outside providers/sdk.py")
    assert offences == []
    assert sdk_calls >= 3  # OpenAI, Azure and Anthropic providers: the walk did find them


def test_a_run_whose_judge_tls_refuses_fails_each_job_once_and_resumes_once_trusted(
    https: FakeServer, certs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A refused certificate was retried as transient: every job spent its attempts and back-off on
    a handshake that no retry changes. Now each job fails at once (class `certificate`, one attempt
    stored, the message says what to set), and `--retry-failed` after trusting the CA finishes it."""
    from tests.helpers import cli
    from tests.runner.conftest import create_argv, tiny_db

    db = tmp_path / "tls.db"
    url = f"sqlite:///{db}"
    tiny_db(url, n_groups=1, per_group=3).dispose()
    judge = f"openai:judge-1?base_url={https.url}/v1&max_tokens=50"
    assert cli(*create_argv("tls", judge), db=url).code == 0
    refused = cli("campaign", "run", "tls", "--json", "--max-attempts", "3", db=url)
    out = refused.json(code=3)
    jobs = out["jobs"]
    assert f"`campaign run tls --retry-failed` re-asks the {jobs} failed on certificate" in refused.stderr
    assert jobs > 0 and (out["failed"], out["errors"]) == (jobs, {"certificate": jobs}), out
    assert https.recent() == []  # nothing reached the server
    with sqlite3.connect(db) as con:
        requests = con.execute("SELECT count(*) FROM request").fetchone()[0]
        errors = con.execute("SELECT DISTINCT error_class, error_message FROM response").fetchall()
    assert requests == jobs  # one attempt each (was --max-attempts each, with back-off between)
    assert len(errors) == 1 and errors[0][0] == "certificate", errors
    assert "certificate verify failed" in errors[0][1] and "SSL_CERT_FILE" in errors[0][1]
    monkeypatch.setenv("SSL_CERT_FILE", str(certs[0]))
    again = cli("campaign", "run", "tls", "--json", "--retry-failed", db=url).json()
    assert (again["status"], again["done"]) == ("done", jobs)
