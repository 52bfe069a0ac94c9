"""The SQLite scenario store: persistence across restarts, engagements, corruption, concurrency.

Expected values are the scenarios the tests save themselves (a round trip must return them equal).
"""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest

from advisor.catalog.user_data import ENV_VAR, data_dir
from advisor.examples import EXAMPLES
from advisor.scenario import SLA, Hardware, Scenario, ScenarioError, dump_scenario, load_scenario
from advisor.store import DB_NAME, Store, StoreError


def _scenario(i: int = 0) -> Scenario:
    return Scenario(
        name=f"s{i}",
        hardware=Hardware(gpus=["h100-sxm"], gpus_per_node=4),
        sla=SLA(percentile=95, tpot_ms=40.0 + i),
    )


def test_save_restart_load_identical(tmp_path):
    path = tmp_path / DB_NAME
    s = _scenario()
    Store(path).save("Acme", "baseline", s, view={"tp": 4, "pp": 1})
    again = Store(path).load("Acme", "baseline")  # a new object on the same file = a restart
    assert again.scenario == s
    assert dump_scenario(again.scenario) == dump_scenario(s)
    assert again.view == {"tp": 4, "pp": 1}
    assert [i.name for i in Store(path).list("Acme")] == ["baseline"]


def test_env_var_sets_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "data"))
    assert data_dir() == tmp_path / "data"
    Store().save("A", "x", Scenario())
    assert (tmp_path / "data" / DB_NAME).is_file()


def test_save_is_an_upsert(tmp_path):
    st = Store(tmp_path / DB_NAME)
    st.save("A", "x", _scenario(1))
    created = st.load("A", "x").created
    st.save("A", "x", _scenario(2))
    assert len(st.list("A")) == 1
    got = st.load("A", "x")
    assert got.scenario == _scenario(2)
    assert got.created == created


def test_engagements_are_isolated(tmp_path):
    st = Store(tmp_path / DB_NAME)
    st.save("Acme", "plan", _scenario(1))
    st.save("Globex", "plan", _scenario(2))
    assert st.engagements() == ["Acme", "Globex"]
    assert st.load("Acme", "plan").scenario == _scenario(1)
    assert st.load("Globex", "plan").scenario == _scenario(2)
    assert st.delete("Acme", "plan")
    assert st.list("Acme") == []
    assert st.load("Globex", "plan").scenario == _scenario(2)
    with pytest.raises(StoreError, match="no scenario named 'plan' in engagement 'Acme'"):
        st.load("Acme", "plan")
    assert st.delete_engagement("Globex") == 1
    assert st.engagements() == ["Acme"]


def test_rename(tmp_path):
    st = Store(tmp_path / DB_NAME)
    st.save("A", "x", _scenario(1))
    st.save("A", "y", _scenario(2))
    with pytest.raises(StoreError, match="already has a scenario named 'y'"):
        st.rename("A", "x", "y")
    assert st.rename("A", "x", " z ") == "z"
    assert sorted(i.name for i in st.list("A")) == ["y", "z"]
    assert st.load("A", "z").scenario == _scenario(1)
    with pytest.raises(StoreError, match="no scenario named 'x'"):
        st.rename("A", "x", "w")


@pytest.mark.parametrize("bad", ["", "   ", "x" * 201, "a\x00b"])
def test_bad_names_refused_with_a_message(tmp_path, bad):
    with pytest.raises(StoreError, match="scenario name"):
        Store(tmp_path / DB_NAME).save("A", bad, Scenario())


def test_corrupt_file_refused_with_a_message(tmp_path):
    path = tmp_path / DB_NAME
    path.write_bytes(b"this is not a database, just some bytes " * 100)
    with pytest.raises(StoreError, match="damaged or not a SQLite file") as exc:
        Store(path)
    assert str(path) in str(exc.value)
    assert ENV_VAR in str(exc.value)


def test_truncated_database_refused_with_a_message(tmp_path):
    path = tmp_path / DB_NAME
    st = Store(path)
    for i in range(50):
        st.save("A", f"s{i}", _scenario(i))
    # Fold the WAL into the main file, then damage the page after the header.
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=str(path).replace("\\", "\\\\")):
        s2 = Store(path)
        s2.list("A")
        s2.load("A", "s1")


def test_an_older_or_bad_row_gives_a_scenario_error(tmp_path):
    path = tmp_path / DB_NAME
    st = Store(path)
    st.save("A", "x", Scenario())
    con = sqlite3.connect(path)
    doc = json.loads(dump_scenario(Scenario()))
    doc["schema_version"] = 0
    con.execute("UPDATE scenario SET json = ?", (json.dumps(doc),))
    con.commit()
    con.close()
    with pytest.raises(ScenarioError, match="schema_version 0 is not supported"):
        st.load("A", "x")


def test_newer_store_version_refused(tmp_path):
    path = tmp_path / DB_NAME
    Store(path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version = 99")
    con.close()
    with pytest.raises(StoreError, match="newer version of the app"):
        Store(path)


def test_concurrent_writers_do_not_corrupt(tmp_path):
    path = tmp_path / DB_NAME
    errors: list[BaseException] = []

    def writer(tag: str) -> None:
        st = Store(path)  # each thread its own Store, as two app sessions would
        try:
            for i in range(40):
                st.save("A", f"{tag}-{i}", _scenario(i))
                st.save("A", "shared", _scenario(i))  # both upsert the same row
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    st = Store(path)
    assert st.check() == "ok"
    names = {i.name for i in st.list("A")}
    assert len(names) == 81  # 40 + 40 + "shared"
    assert st.load("A", "shared").scenario in [_scenario(i) for i in range(40)]


def test_json_round_trip_of_every_example(tmp_path):
    st = Store(tmp_path / DB_NAME)
    for ex in EXAMPLES.values():
        assert load_scenario(dump_scenario(ex.scenario)) == ex.scenario
        st.save("examples", ex.title, ex.scenario, view={"tp": ex.tp, "pp": ex.pp})
        assert st.load("examples", ex.title).scenario == ex.scenario
