"""Scenario names that print as something else, and a store folder that cannot be written
(issue 36): names made of or hiding invisible characters are refused; a read-only folder still
lists and opens its scenarios, and saving says it cannot write."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.catalog.user_data import ENV_VAR
from advisor.scenario import Scenario, load_scenario
from advisor.store import Store, StoreError, check_name

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


# -- 7: look-alike and invisible names ----------------------------------------------------------
@pytest.mark.parametrize(
    "name, code_point",
    [
        ("\u200b", "U+200B ZERO WIDTH SPACE"),  # prints as nothing
        ("base\u200b", "U+200B ZERO WIDTH SPACE"),  # prints as "base", another name
        ("\u202etxt.exe", "U+202E RIGHT-TO-LEFT OVERRIDE"),  # prints as "exe.txt"
        ("a\u2066b", "U+2066 LEFT-TO-RIGHT ISOLATE"),
        ("x\u00adx", "U+00AD SOFT HYPHEN"),
    ],
)
def test_invisible_characters_in_a_name_are_refused_naming_them(name, code_point, tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    with pytest.raises(StoreError, match=re.escape(code_point)):
        store.save("default", name, Scenario())
    with pytest.raises(StoreError, match=re.escape(code_point)):
        store.add_engagement(name)
    store.save("default", "base", Scenario())
    with pytest.raises(StoreError, match=re.escape(code_point)):
        store.rename("default", "base", name)
    assert [i.name for i in store.list("default")] == ["base"]
    with pytest.raises(ValueError, match=re.escape(code_point)):
        Scenario(name=name)


def test_look_alikes_are_one_name(tmp_path):
    # NFKC: full-width letters and the "fi" ligature are the plain letters
    assert check_name("Ｂａｓｅ") == "Base" and check_name("\ufb01nal") == "final"
    store = Store(tmp_path / "s.sqlite3")
    store.save("default", "Base", Scenario())
    store.save("default", " Ｂａｓｅ ", Scenario(name="x"))  # the same name: replaced, not added
    assert [i.name for i in store.list("default")] == ["Base"]


def test_a_scenario_file_with_a_bidi_name_is_refused_by_the_cli(tmp_path):
    f = tmp_path / "s.json"
    f.write_text('{"schema_version": 1, "name": "\\u202etxt.exe"}')
    r = subprocess.run([sys.executable, "-m", "advisor", "recommend", "--scenario", str(f)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in r.stderr and "name" in r.stderr
    with pytest.raises(ValueError, match=re.escape("U+202E")):
        load_scenario(f.read_bytes())


def test_the_scenarios_page_refuses_a_hidden_character(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "data"))
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("ui/pages/scenarios.py").run()
    at.text_input(key="sc.name").set_value("base\u200b").run()
    next(b for b in at.button if b.key == "sc.save").click().run()
    assert not at.exception
    assert any("Not saved" in e.value and "ZERO WIDTH SPACE" in e.value for e in at.error)
    assert Store(tmp_path / "data" / "scenarios.sqlite3").list("default") == []


# -- 8: a read-only store folder ----------------------------------------------------------------
_LIST_THEN_SAVE = textwrap.dedent(
    """
    from advisor.scenario import Scenario
    from advisor.store import Store, StoreError
    s = Store()
    print([i.name for i in s.list("default")], s.load("default", "base").scenario.name)
    try:
        s.save("default", "new", Scenario())
    except StoreError as exc:
        print("refused:", exc)
    """
)


def _read_only_run(folder: Path) -> subprocess.CompletedProcess:
    """Run the listing with ``folder`` read-only: a read-only bind mount in a private mount
    namespace as root (root ignores file modes), the folder's mode otherwise."""
    cmd = [sys.executable, "-c", _LIST_THEN_SAVE]
    env = {**os.environ, ENV_VAR: str(folder), "PYTHONPATH": str(ROOT)}
    if os.geteuid() == 0:
        if shutil.which("unshare") is None:
            pytest.skip("root without unshare: no way to make a folder read-only")
        mount = (f"mount --bind {folder} {folder} && mount -o remount,ro,bind {folder} && "
                 'exec "$@"')  # fmt: skip
        cmd = ["unshare", "-m", "sh", "-c", mount, "sh", *cmd]
        probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
        if probe.returncode != 0:
            pytest.skip("cannot create a mount namespace here")
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    os.chmod(folder, 0o555)
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    finally:
        os.chmod(folder, 0o755)


def test_a_read_only_folder_lists_and_opens_and_saving_says_why(tmp_path):
    folder = tmp_path / "data"
    Store(folder / "scenarios.sqlite3").save("default", "base", Scenario(name="base"))
    r = _read_only_run(folder)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "['base'] base"
    assert lines[1].startswith("refused: cannot save to the scenario database")
    assert f"the folder {folder} is read-only" in lines[1] and ENV_VAR in lines[1]


def test_the_scenarios_page_says_the_folder_is_read_only(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    Store(folder / "scenarios.sqlite3").save("default", "base", Scenario(name="base"))
    monkeypatch.setenv(ENV_VAR, str(folder))
    import advisor.store as store_mod

    monkeypatch.setattr(
        store_mod, "_why_read_only", lambda db: f"the folder {db.parent} is read-only"
    )
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("ui/pages/scenarios.py").run()
    assert not at.exception
    assert any("cannot be written" in w.value for w in at.warning)
    assert any("base" in m.value for m in at.markdown)  # still listed


def test_a_data_folder_that_cannot_be_created_lists_nothing_and_refuses_saving(tmp_path):
    (tmp_path / "file").write_text("a file where the folder would go")
    store = Store(tmp_path / "file" / "data" / "scenarios.sqlite3")  # was: StoreError at once
    assert store.list("default") == [] and store.engagements() == []
    with pytest.raises(StoreError, match="cannot be created .*Not a directory.*" + ENV_VAR):
        store.save("default", "base", Scenario())
