"""Persistence: SIGKILL a process while it saves scenarios; everything committed survives.

A child process saves scenarios in a loop (``Store.save``: BEGIN IMMEDIATE ... COMMIT in WAL
mode) and prints each name after ``save`` returned, i.e. after COMMIT. The test kills it with
SIGKILL at a random moment (seeded), reopens the database and checks that every printed (committed)
scenario loads and equals what was saved, that PRAGMA integrity_check says ok and the journal mode
is still WAL. A save in flight at the kill is absent or complete, never half-written. Repeated with
several kill delays; then with a second writer killed while another process also writes.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from advisor.scenario import Scenario, Workload
from advisor.store import Store

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 6

CHILD = r"""
import sys
from advisor.scenario import Scenario, Workload
from advisor.store import Store

store = Store(sys.argv[1])
tag = sys.argv[2]
i = 0
while True:
    # The name encodes the values, so the parent can rebuild what was saved.
    store.save("kill-test", f"{tag}-{i}", Scenario(name=f"{tag}-{i}",
               workload=Workload(isl_tokens=1 + i, osl_tokens=1 + (i % 97))),
               {"tp": 1 + i % 8})
    print(f"{tag}-{i}", flush=True)
    i += 1
"""


def _expected(name: str) -> tuple[Scenario, dict]:
    i = int(name.rsplit("-", 1)[1])
    s = Scenario(name=name, workload=Workload(isl_tokens=1 + i, osl_tokens=1 + (i % 97)))
    return s, {"tp": 1 + i % 8}


def _spawn(db: Path, tag: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), tag],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip


def _kill_after(proc: subprocess.Popen, min_saves: int, extra_s: float) -> list[str]:
    """Wait for ``min_saves`` committed saves, sleep ``extra_s``, SIGKILL; the names printed."""
    names: list[str] = []
    deadline = time.monotonic() + 30
    while len(names) < min_saves and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        names.append(line.strip())
    time.sleep(extra_s)
    os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL, err
    lines = out.split("\n")
    # A last line without its newline (killed mid-print) may be cut short: drop it.
    names += [n for n in lines[:-1] if n.strip()]
    return names


def _check_db(db: Path, committed: list[str]) -> None:
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        con.close()
    store = Store(db)
    assert store.check() == "ok"
    saved = {i.name for i in store.list("kill-test")}
    missing = set(committed) - saved
    assert not missing, f"committed but lost: {sorted(missing)[:5]}"
    for name in committed:
        got = store.load("kill-test", name)
        scenario, view = _expected(name)
        assert got.scenario == scenario, name
        assert got.view == view, name
    # Rows beyond the printed ones (committed just before the kill) are complete too.
    for name in saved - set(committed):
        assert store.load("kill-test", name).scenario == _expected(name)[0]


def test_sigkill_during_saves_keeps_every_committed_scenario(tmp_path):
    rng = random.Random(8)
    db = tmp_path / "scenarios.sqlite3"
    Store(db)  # create it (WAL) before the first child
    committed: list[str] = []
    mid_write = 0
    for r in range(ROUNDS):
        proc = _spawn(db, f"r{r}")
        committed += _kill_after(proc, rng.randint(1, 40), rng.uniform(0.0, 0.05))
        # A -wal file left behind: the process died with its connection open (inside a save).
        mid_write += (tmp_path / "scenarios.sqlite3-wal").exists()
        _check_db(db, committed)
    assert len(committed) >= ROUNDS  # the kills happened after real saves
    assert mid_write >= 1  # at least one kill landed inside a save, not between two
    print(f"{ROUNDS} SIGKILLs ({mid_write} inside a save), {len(committed)} committed, all intact")


def test_sigkill_one_of_two_concurrent_writers(tmp_path):
    db = tmp_path / "scenarios.sqlite3"
    Store(db)
    a, b = _spawn(db, "a0"), _spawn(db, "b0")
    committed_a = _kill_after(a, 20, 0.01)
    committed_b = _kill_after(b, 5, 0.0)
    _check_db(db, committed_a + committed_b)
    # The survivor's database still takes writes after the crash.
    Store(db).save("kill-test", "after-crash", Scenario())
    assert Store(db).load("kill-test", "after-crash").scenario == Scenario()


def test_database_header_says_wal(tmp_path):
    """WAL is recorded in the file itself (header bytes 18-19 = 2), so it survives the crash and
    every later connection uses it. Source: sqlite.org/fileformat2.html, "1.3 The Database Header"."""
    db = tmp_path / "scenarios.sqlite3"
    Store(db).save("e", "s", Scenario())
    proc = _spawn(db, "w0")
    _kill_after(proc, 3, 0.0)
    header = db.read_bytes()[:100]
    assert header[:16] == b"SQLite format 3\x00"
    assert (header[18], header[19]) == (2, 2)
