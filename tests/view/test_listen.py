"""`judgepanel view` and `judgepanel annotate serve` bound to a loopback address other than the
three usual names answer the Host a browser sends for it (they answered 403 to `--host 127.0.0.2`),
and still refuse any other Host."""

from __future__ import annotations

import httpx
import pytest

from judgepanel.view.listen import LOOPBACK_HOSTS, host_names, is_loopback
from tests.annotate.conftest import Server
from tests.view.conftest import Viewer


def test_host_names_of_a_bound_address() -> None:
    assert host_names("127.0.0.2") == LOOPBACK_HOSTS | {"127.0.0.2"}
    assert host_names("[::1]") == LOOPBACK_HOSTS
    assert host_names("LOCALHOST") is None and not is_loopback("LOCALHOST")  # as the CLI refuses it
    assert host_names("0.0.0.0") is None and host_names("192.0.2.7") is None
    assert is_loopback("127.255.0.9") and is_loopback("::1") and not is_loopback("evil.example")


@pytest.mark.parametrize("server", ["view", "annotate"])
def test_a_server_on_127_0_0_2_answers_its_own_host_only(demo_url: str, server: str) -> None:
    proc = (
        Viewer(demo_url, "--host", "127.0.0.2")
        if server == "view"
        else Server(demo_url, "--host", "127.0.0.2")
    )
    try:
        assert proc.url.startswith("http://127.0.0.2:")
        path = "/api/campaigns" if server == "view" else "/api/annotate"
        assert httpx.get(proc.url + path, timeout=10).status_code == 200
        port = proc.url.rsplit(":", 1)[1]
        for host in ("evil.example", f"evil.example:{port}", f"127.0.0.3:{port}"):
            assert httpx.get(proc.url + path, headers={"Host": host}, timeout=10).status_code == 403, host
    finally:
        proc.stop()
