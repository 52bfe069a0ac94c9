"""Issue 16 item 8: a damaged or emptied scenario database is never silently replaced.

The attack truncated a database holding 20 scenarios to 0 bytes; SQLite opened it as a new
empty store and the app listed nothing, without a word. Now the file is refused with a message,
kept aside on request (renamed, byte for byte the same), listed on the Scenarios page, and every
saved scenario can be downloaded as one backup file.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from advisor.catalog.user_data import ENV_VAR
from advisor.scenario import Scenario, load_scenario
from advisor.store import DB_NAME, SQLITE_HEADER, Store, StoreError, kept_aside, set_aside
from tests.test_hardening_escape import APP


def _filled(path, n=20) -> Store:
    st = Store(path)
    for i in range(n):
        st.save("Acme" if i % 2 else "Globex", f"s{i}", Scenario(name=f"s{i}", rank_by="gpus"))
    return st


def test_header_constant_is_sqlites():
    # sqlite.org/fileformat.html 1.3.1: the header string "SQLite format 3\000"
    assert SQLITE_HEADER == b"SQLite format 3\x00" and len(SQLITE_HEADER) == 16


def test_a_truncated_database_is_refused_not_opened_empty(tmp_path):
    path = tmp_path / DB_NAME
    _filled(path)
    path.write_bytes(b"")  # truncated to 0 bytes (was: opened as an empty store)
    for extra in ("-wal", "-shm"):
        (tmp_path / f"{DB_NAME}{extra}").unlink(missing_ok=True)
    with pytest.raises(StoreError, match="is empty \\(0 bytes\\)") as info:
        Store(path)
    assert str(path) in str(info.value) and ENV_VAR in str(info.value)
    assert path.stat().st_size == 0  # not written to


def test_set_aside_keeps_the_bytes_and_a_new_store_starts(tmp_path):
    path = tmp_path / DB_NAME
    junk = b"not a database " * 300
    path.write_bytes(junk)
    with pytest.raises(StoreError, match="damaged or not a SQLite file"):
        Store(path)
    moved = set_aside(path)
    assert moved.read_bytes() == junk and not path.exists()
    assert kept_aside(tmp_path) == [moved]
    st = Store(path)
    assert st.engagements() == []
    st.save("A", "x", Scenario())
    assert kept_aside(tmp_path) == [moved]  # still listed until the user deletes it


def test_export_all_holds_every_scenario_loadable(tmp_path):
    st = _filled(tmp_path / DB_NAME)
    doc = json.loads(json.dumps(st.export_all()))
    assert sorted(doc["engagements"]) == ["Acme", "Globex"]
    rows = [r for eng in doc["engagements"].values() for r in eng]
    assert sorted(r["name"] for r in rows) == sorted(f"s{i}" for i in range(20))
    for r in rows:  # each one is a scenario file the upload takes
        assert load_scenario(json.dumps(r["scenario"])).name == r["name"]


def test_scenarios_page_reports_the_emptied_database_and_keeps_it_aside(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv(ENV_VAR, str(data))
    _filled(data / DB_NAME)
    for extra in ("-wal", "-shm"):
        (data / f"{DB_NAME}{extra}").unlink(missing_ok=True)
    (data / DB_NAME).write_bytes(b"")
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("ui/pages/scenarios.py").run()
    assert not at.exception
    assert any("is empty" in e.value and "0 bytes" in e.value for e in at.error)
    at.button(key="sc.aside").click().run()
    assert any("Kept aside as" in s.value for s in at.success)
    assert any("kept aside" in w.value for w in at.warning)
    assert len(kept_aside(data)) == 1 and kept_aside(data)[0].stat().st_size == 0
    assert not at.error  # the new store works
    assert any(
        b.label.startswith("Download all saved scenarios") for b in at.get("download_button")
    )
