"""The annotators' page in real headless Chromium against `judgepanel annotate serve` (issue 32
§5): two annotators label at once with the keyboard; a lapsed reservation is handed to another;
a reload resumes; a revoked link and a POST without the CSRF token are refused; pairwise sides are
stored as shown and the humans' position bias equals `metrics bias` on the same answers; every
stored text is hostile (`tests/xss.py`) and stays inert, on the annotators' and the owner's pages."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from judgepanel.store.engine import make_engine
from tests import xss
from tests.annotate.conftest import Server, as_judge_campaign
from tests.helpers import chromium_driver, cli, load_summeval_sample


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("annotate-browser")
    url = f"sqlite:///{folder / 'judgepanel.db'}"
    load_summeval_sample(url)
    eng = make_engine(url)
    with eng.begin() as c:  # hostile text in everything the pages show
        c.execute(
            text("UPDATE item SET output = :p || output, input = :p || coalesce(input, '')"), {"p": xss.TEXT}
        )
    eng.dispose()
    how = folder / "how.txt"
    how.write_text(xss.TEXT)
    assert cli("data", "pairs", "se", "--name", "sp", "--sample", "8", "--seed", "4", db=url).code == 0
    for args in (
        ["two", "--items", "6", "--per-item", "2", "--instructions", str(how)],
        ["lapse", "--items", "1", "--per-item", "1", "--reserve-minutes", "0.02"],
        ["solo", "--items", "3", "--per-item", "1"],
    ):
        r = cli("annotate", "create", *args, "--dataset", "se", "--dimension", "coherence", db=url)
        assert r.code == 0, r.stderr
    r = cli(
        "annotate",
        "create",
        "pairs",
        "--kind",
        "pairwise",
        "--pairs",
        "sp",
        "--per-item",
        "2",
        "--seed",
        "9",
        db=url,
    )
    assert r.code == 0, r.stderr
    return url


@pytest.fixture(scope="module")
def server(db: str) -> Iterator[Server]:
    s = Server(db)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def second_browser() -> Iterator[Any]:
    """A second Chromium with its own cookies: the other annotator."""
    d: Any = chromium_driver()
    yield d
    d.quit()


def invite(db: str, queue: str, name: str) -> str:
    r = cli("annotate", "invite", queue, name, "--json", db=db)
    assert r.code == 0, r.stderr
    return str(r.json()["token"])


def _by_id(driver: Any, ident: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, ident)


def _state(driver: Any) -> dict[str, Any]:
    return dict(
        driver.execute_script(
            "const g = (i) => document.getElementById(i);"
            "return {item: g('item').hidden ? null : g('item-id').textContent, finished: !g('finished').hidden,"
            " progress: g('progress').textContent, message: g('message').hidden ? null : g('message').textContent};"
        )
    )


def _wait(driver: Any, until: Any, timeout: float = 15) -> dict[str, Any]:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: until(_state(d)))
    return _state(driver)


def open_link(driver: Any, url: str, queue: str, token: str) -> dict[str, Any]:
    driver.get(f"{url}/a/{queue}?token={token}")
    return _wait(driver, lambda s: s["item"] is not None or s["finished"] or s["message"])


def press(driver: Any, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(key).perform()


def _inert(driver: Any) -> None:
    probe = driver.execute_script(xss.PROBE_JS)
    assert {k: probe[k] for k in xss.CLEAN} == xss.CLEAN, probe
    assert probe["inline_scripts"] == 0
    errors = [
        e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]
    ]
    assert not [e for e in errors if "Content Security Policy" in e["message"]], errors


def test_two_annotators_label_concurrently_with_the_keyboard(
    chromium: Any, second_browser: Any, server: Server, db: str
) -> None:
    a, b = chromium, second_browser
    sa = open_link(a, server.url, "two", invite(db, "two", "ann-a"))
    sb = open_link(b, server.url, "two", invite(db, "two", "ann-b"))
    assert sa["item"] and sb["item"] and sa["progress"] == "0 of 6" == sb["progress"]
    seen: dict[str, list[str]] = {"a": [], "b": []}
    for _ in range(6):
        for who, d, key in (("a", a, "4"), ("b", b, "2")):
            before = _state(d)
            if before["finished"]:
                continue
            seen[who].append(before["item"])
            press(d, key)
            _wait(
                d, lambda s, old=before: s["finished"] or (s["item"] != old["item"] and s["item"] is not None)
            )
    assert _state(a)["finished"] and _state(b)["finished"]
    assert sorted(seen["a"]) == sorted(set(seen["a"])) and len(seen["a"]) == 6  # each item once per annotator
    assert sorted(seen["a"]) == sorted(seen["b"])  # per-item 2: both labelled every item
    status = cli("annotate", "status", "two", "--json", "--bootstrap", "0", db=db).json()
    assert status["progress"]["labels_done"] == 12 and status["labels_per_unit"] == {"2": 6}
    assert {m: v["labels"] for m, v in status["annotators"].items()} == {"ann-a": 6, "ann-b": 6}
    eng = make_engine(db)
    with eng.connect() as c:
        values = dict(
            c.execute(
                text("SELECT a.name, group_concat(DISTINCT l.value_text) FROM label l JOIN annotator a ON a.id = l.annotator_id "
                     "WHERE a.name IN ('ann-a', 'ann-b') GROUP BY a.name")
            ).all()
        )  # fmt: skip
    eng.dispose()
    assert values == {"ann-a": "4", "ann-b": "2"}
    _inert(a)
    assert xss.PAYLOADS[0] in _by_id(a, "instructions").text  # shown, as text


def test_a_lapsed_reservation_is_handed_to_another_and_the_first_is_told(
    chromium: Any, second_browser: Any, server: Server, db: str
) -> None:
    a, b = chromium, second_browser
    first = open_link(a, server.url, "lapse", invite(db, "lapse", "slow"))
    assert first["item"] is not None
    time.sleep(1.5)  # 0.02 minutes
    other = open_link(b, server.url, "lapse", invite(db, "lapse", "quick"))
    assert other["item"] == first["item"]  # the same item, handed on
    press(a, "3")
    told = _wait(a, lambda s: s["message"] is not None)
    assert "not reserved for you" in told["message"]
    press(b, "5")
    assert _wait(b, lambda s: s["finished"])["progress"] == "1 of 1"


def test_a_reload_resumes_and_a_revoked_link_is_refused(chromium: Any, server: Server, db: str) -> None:
    d = chromium
    s = open_link(d, server.url, "solo", invite(db, "solo", "reloader"))
    d.refresh()
    again = _wait(d, lambda st: st["item"] is not None)
    assert again["item"] == s["item"]  # the same item after a reload
    press(d, "1")
    nxt = _wait(d, lambda st: st["item"] not in (None, s["item"]))
    d.refresh()
    assert _wait(d, lambda st: st["item"] is not None)["item"] == nxt["item"]
    # a POST without the CSRF token, from the page itself: refused, nothing written
    code = d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/api/annotate/solo/label', {method: 'POST', headers: {'Content-Type': 'application/json'},"
        " body: JSON.stringify({slot: 1, value: '3'})}).then(r => done(r.status));"
    )
    assert code == 403
    assert cli("annotate", "revoke", "solo", "reloader", db=db).code == 0
    press(d, "2")
    assert "revoked" in _wait(d, lambda st: st["message"] is not None)["message"]
    d.refresh()
    assert "revoked" in d.find_element("tag name", "body").text


def test_pairwise_sides_are_stored_as_shown_and_human_bias_is_metrics_bias(
    chromium: Any, second_browser: Any, server: Server, db: str
) -> None:
    from selenium.webdriver.common.keys import Keys

    outputs: dict[str, str] = {}
    eng = make_engine(db)
    with eng.connect() as c:
        outputs = {str(e): str(o) for e, o in c.execute(text("SELECT external_id, output FROM item"))}
    shown: list[tuple[str, str]] = []  # (pair id as shown, the left text)
    for d, name, keys in (
        (chromium, "pa", [Keys.ARROW_LEFT, "a", "t"]),
        (second_browser, "pb", [Keys.ARROW_RIGHT, "a", "b"]),
    ):
        st = open_link(d, server.url, "pairs", invite(db, "pairs", name))
        k = 0
        while not st["finished"]:
            shown.append((st["item"], _by_id(d, "left").get_attribute("textContent")))
            press(d, keys[k % len(keys)])
            k += 1
            st = _wait(
                d, lambda s, old=st: s["finished"] or (s["item"] is not None and s["item"] != old["item"])
            )
        _inert(d)
    assert len(shown) == 16  # 8 pairs × 2 annotators
    with eng.connect() as c:
        stored = c.execute(
            text("SELECT ia.external_id || '|' || ib.external_id, e.shown_order FROM annotation_event e "
                 "JOIN annotation_unit u ON u.id = e.unit_id JOIN pair p ON p.id = u.pair_id "
                 "JOIN item ia ON ia.id = p.item_a_id JOIN item ib ON ib.id = p.item_b_id ORDER BY e.id")
        ).all()  # fmt: skip
    assert len(stored) == 16
    for (pair, left), (pair_stored, order) in zip(shown, stored, strict=True):
        assert pair == pair_stored
        a_id, b_id = pair.split("|")
        assert left == outputs[a_id if order == "AB" else b_id]  # the side shown left is the order stored
    n = as_judge_campaign(eng, "pairs", "se", "sp", "pairs-as-judge")
    eng.dispose()
    assert n >= 2
    human = cli("annotate", "status", "pairs", "--json", "--bootstrap", "0", db=db).json()[
        "human_position_bias"
    ]
    (judge,) = (
        cli("metrics", "bias", "--campaign", "pairs-as-judge", "--json", db=db).json()["judges"].values()
    )
    assert {k: human[k] for k in ("back_wins", "front_wins", "consistent", "inconsistent")} == {
        k: judge[k] for k in ("back_wins", "front_wins", "consistent", "inconsistent")
    }
    assert human["p_value"] == pytest.approx(judge["p_value"], rel=1e-12)


def test_the_owner_page_is_inert_with_hostile_names(chromium: Any, server: Server, db: str) -> None:
    invite(db, "two", xss.NAME)  # a hostile annotator name reaches the owner's tables
    chromium.get(f"{server.url}/annotate/two")
    assert "Queue" in chromium.find_element("tag name", "h1").text
    _inert(chromium)
    assert xss.NAME in chromium.find_element("id", "annotators").text
    chromium.get(f"{server.url}/annotate")
    _inert(chromium)


def test_every_stored_text_is_inert_on_both_pages(
    chromium: Any, server: Server, db: str, tmp_path: Any
) -> None:
    """Beyond the items and instructions: a hostile queue name, group, scale, rubric clause,
    annotator name, comment and skip reason, on the annotator's page (first view, and the earlier
    item shown again with its comment) and on the owner's pages."""
    import urllib.parse

    import httpx
    import yaml

    from judgepanel.resources import resource_dir

    doc = yaml.safe_load((resource_dir("rubrics") / "helpfulness.yaml").read_text())
    doc["dimensions"]["helpfulness"]["clauses"][0]["text"] = xss.TEXT
    evil = tmp_path / "evil.yaml"
    evil.write_text(yaml.safe_dump(doc))
    assert cli("rubric", "add", str(evil), "--name", "evil", db=db).code == 0
    (tmp_path / "how.txt").write_text(xss.TEXT)
    queue, person = xss.NAME + "q", "<img src=x onerror=window.__xss=2>"
    r = cli(
        "annotate", "create", queue, "--dataset", "se", "--dimension", "helpfulness", "--rubric", "evil",
        "--items", "3", "--per-item", "1", "--instructions", str(tmp_path / "how.txt"), "--group", xss.NAME,
        "--scale", "<svg/onload=__xss=1>,'\"><b>x</b>", db=db,
    )  # fmt: skip
    assert r.code == 0, r.stderr
    token = invite(db, queue, person)
    api = f"{server.url}/api/annotate/{urllib.parse.quote(queue, safe='')}"
    h = {"Authorization": f"Bearer {token}"}
    first = httpx.get(f"{api}/next", headers=h).json()
    sent = {
        "slot": first["slot"],
        "value": "<svg/onload=__xss=1>",
        "csrf": first["csrf"],
        "comment": xss.TEXT[:4000],
    }
    assert httpx.post(f"{api}/label", json=sent, headers=h).status_code == 200
    second = httpx.get(f"{api}/next", headers=h).json()
    skip = {"slot": second["slot"], "csrf": second["csrf"], "skip_reason": xss.TEXT[:4000]}
    assert httpx.post(f"{api}/label", json=skip, headers=h).status_code == 200
    s = open_link(chromium, server.url, urllib.parse.quote(queue, safe=""), token)
    assert s["item"] is not None and not s["message"], s
    assert xss.TEXT in _by_id(chromium, "instructions").text and xss.TEXT in _by_id(chromium, "clauses").text
    assert _by_id(chromium, "queue-name").text == queue and _by_id(chromium, "annotator-name").text == person
    _inert(chromium)
    press(chromium, "p")  # the earlier item, with its hostile comment in the box
    _wait(chromium, lambda st: st["item"] == first["item"]["id"])
    assert _by_id(chromium, "comment").get_attribute("value") == xss.TEXT[:4000]
    _inert(chromium)
    for page in (f"/annotate/{urllib.parse.quote(queue, safe='')}", "/annotate"):
        chromium.get(server.url + page)
        assert queue in chromium.find_element("tag name", "main").text
        _inert(chromium)
