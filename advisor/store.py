"""Saved scenarios: an embedded SQLite database in the user's data folder, one per machine.

Layout: ``engagement(id, name)`` keeps clients apart; ``scenario(engagement_id, name, json,
view_json, created, updated)`` holds each saved scenario, unique by name within its engagement.
``client_profile(engagement_id, name, yaml, created)`` keeps the engagement's client calibration
profiles (advisor/perf/calibration/client_profile.py), validated on the way in and out. ``json`` is exactly
``dump_scenario`` output and is read back through ``load_scenario`` (so an
older ``schema_version`` is upgraded or refused with a ScenarioError naming why); ``view_json`` is
a small JSON object of display settings (e.g. TP/PP of the single-deployment pages). Nothing read
from the database is ever unpickled or executed: JSON only.

Durability: WAL journal, every write in ``BEGIN IMMEDIATE ... COMMIT`` on its own connection (a
scenario saved is complete or absent, never half-written; concurrent writers wait on the lock for
up to ``timeout_s``). A file that is not a SQLite database, or a damaged one, raises StoreError
with a message naming the file, never a bare sqlite3 traceback.

The folder comes from the environment variable ``INFERENCE_ARCHITECT_DATA_DIR`` (default
``~/.local/share/inference-architect``); the database file is ``scenarios.sqlite3`` in it.

A folder (or database file) that cannot be written is opened read-only: listing, loading and
exporting work (SQLite's ``immutable`` mode: a WAL database cannot be read otherwise where its
-shm file cannot be created), and every write raises a StoreError saying the folder is read-only.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor.catalog.quoting import visible_name
from advisor.catalog.user_data import ENV_VAR, data_dir
from advisor.scenario import Scenario, dump_scenario, load_scenario

DB_NAME = "scenarios.sqlite3"
MAX_NAME_CHARS = 200
DEFAULT_ENGAGEMENT = "default"
#: Store schema version, kept in SQLite's ``user_version``.
STORE_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS engagement (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS scenario (
    id INTEGER PRIMARY KEY,
    engagement_id INTEGER NOT NULL REFERENCES engagement(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    json TEXT NOT NULL,
    view_json TEXT NOT NULL DEFAULT '{}',
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    UNIQUE (engagement_id, name)
);
CREATE TABLE IF NOT EXISTS client_profile (
    id INTEGER PRIMARY KEY,
    engagement_id INTEGER NOT NULL REFERENCES engagement(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    yaml TEXT NOT NULL,
    created TEXT NOT NULL,
    UNIQUE (engagement_id, name)
);
"""


class StoreError(ValueError):
    """The store cannot do what was asked; the message says which file or name and why."""


#: The first 16 bytes of every SQLite 3 database file (sqlite.org/fileformat.html, 1.3.1).
SQLITE_HEADER = b"SQLite format 3\x00"
#: Suffix of a database file kept aside by :func:`set_aside` (followed by a UTC timestamp).
ASIDE_SUFFIX = ".damaged-"


@contextmanager
def _init_lock(db: Path) -> Iterator[None]:
    """An exclusive lock on ``<db>.lock`` while a store checks and creates its file, so one
    session never sees another's half-created (still empty) database as damaged."""
    try:
        fd = os.open(f"{db}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:  # a read-only folder: nobody can create the database there either
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _refuse_unusable(db: Path) -> None:
    """StoreError when ``db`` exists but is empty or not a SQLite file: SQLite would open a
    0-byte file as a new empty store, and the scenarios it held would be gone without a word."""
    try:
        with db.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot read the scenario database {db}: {exc.strerror or exc}") from None
    if not head:
        raise StoreError(
            f"the scenario database {db} is empty (0 bytes): it was truncated or never written; "
            f"keep it aside to start a new one (nothing is deleted), or set {ENV_VAR} to another "
            "folder"
        )
    if head != SQLITE_HEADER:
        raise StoreError(
            f"the scenario database {db} is damaged or not a SQLite file (it does not start with "
            f"the SQLite header); keep it aside to start a new one (nothing is deleted), or set "
            f"{ENV_VAR} to another folder"
        )


def set_aside(db: Path | None = None) -> Path:
    """Rename a damaged database (and its -wal/-shm files) to ``<name>.damaged-<UTC time>``,
    so a new store can start; nothing is deleted. Returns the new path of the main file."""
    db = Path(db) if db is not None else data_dir() / DB_NAME
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    target = db.with_name(f"{db.name}{ASIDE_SUFFIX}{stamp}")
    with _init_lock(db):
        try:
            os.rename(db, target)
            for extra in ("-wal", "-shm"):
                side = Path(f"{db}{extra}")
                if side.exists():
                    os.rename(side, f"{target}{extra}")
        except OSError as exc:
            raise StoreError(f"cannot move {db} aside: {exc.strerror or exc}") from None
    return target


def kept_aside(folder: Path | None = None) -> list[Path]:
    """Databases set aside in ``folder`` (default: the data folder), oldest first."""
    folder = Path(folder) if folder is not None else data_dir()
    try:
        found = [p for p in folder.glob(f"{DB_NAME}{ASIDE_SUFFIX}*") if p.name[-4:] not in
                 ("-wal", "-shm")]  # fmt: skip
    except OSError:
        return []
    return sorted(found)


@dataclass(frozen=True)
class ScenarioInfo:
    """One row of a listing (the scenario itself is parsed only on ``load``)."""

    engagement: str
    name: str
    created: str
    updated: str


@dataclass(frozen=True)
class Saved:
    """A loaded scenario with its display settings and timestamps (ISO 8601, UTC)."""

    engagement: str
    name: str
    scenario: Scenario
    view: dict[str, Any]
    created: str
    updated: str


def _why_read_only(db: Path) -> str | None:
    """Why ``db`` cannot be written (its folder or the file is read-only), or None."""
    if not os.access(db.parent, os.W_OK):
        return f"the folder {db.parent} is read-only"
    if db.exists() and not os.access(db, os.W_OK):
        return "the file is read-only"
    return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def check_name(value: str, what: str = "name") -> str:
    """A stripped, non-empty name of at most 200 characters; StoreError otherwise.

    The name is :func:`advisor.catalog.quoting.visible_name`: NFKC-normalised, stripped, and
    made of printable characters only (no zero-width, bidi or control character), so two names
    that print the same are the same name.

    >>> check_name("  H100 vs MI300X "), check_name("Ｈ100")
    ('H100 vs MI300X', 'H100')
    >>> check_name("base\u200b")
    Traceback (most recent call last):
    ...
    advisor.store.StoreError: name 'base\u200b' contains U+200B ZERO WIDTH SPACE (character 5), which prints as nothing or reorders the text; use visible characters only
    """
    if not isinstance(value, str):
        raise StoreError(f"{what} must be text, got {type(value).__name__}")
    try:
        return visible_name(value, what, MAX_NAME_CHARS)
    except ValueError as exc:
        raise StoreError(str(exc)) from None


def _view_json(view: dict[str, Any] | None) -> str:
    view = view or {}
    if not isinstance(view, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, bool | int | float | str))
        for k, v in view.items()
    ):
        raise StoreError(f"view must map names to plain values, got {view!r:.80}")
    return json.dumps(view, sort_keys=True)


class Store:
    """Named scenarios per engagement in one SQLite file. Cheap to create; one connection per call.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     st = Store(Path(d) / "s.sqlite3")
    ...     st.save("Acme", "baseline", Scenario())
    ...     [i.name for i in st.list("Acme")], st.load("Acme", "baseline").scenario == Scenario()
    (['baseline'], True)
    """

    def __init__(self, path: Path | str | None = None, *, timeout_s: float = 10.0) -> None:
        self.path = Path(path) if path is not None else data_dir() / DB_NAME
        self.timeout_s = timeout_s
        #: Why the store cannot be written (a read-only folder or file), or None.
        self.read_only: str | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # nothing saved there yet: an empty listing, saving refused
            self.read_only = (
                f"the data folder {self.path.parent} cannot be created ({exc.strerror or exc})"
            )
        self.read_only = self.read_only or _why_read_only(self.path)
        if self.read_only:
            if self.path.exists():
                _refuse_unusable(self.path)
            with self._read() as con:
                self._check_version(con)
            return
        with _init_lock(self.path):
            _refuse_unusable(self.path)
            self._init_schema()

    def _check_version(self, con: sqlite3.Connection) -> int:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version > STORE_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer version of the app (store version "
                f"{version}, this app reads {STORE_VERSION}); update the app"
            )
        return version

    def _init_schema(self) -> None:
        with self._write() as con:
            version = self._check_version(con)
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    con.execute(statement)
            if version < STORE_VERSION:
                con.execute(f"PRAGMA user_version = {STORE_VERSION}")

    # -- connections -----------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            return self._connect_read_only()
        try:
            con = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
            con.execute("PRAGMA foreign_keys = ON")
            mode = con.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":  # e.g. a read-only folder
                con.execute("PRAGMA synchronous = FULL")
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        return con

    def _connect_read_only(self) -> sqlite3.Connection:
        """The database opened read-only (with its -wal file, when SQLite can open it), else
        ``immutable`` (a WAL database whose -shm file cannot be created here is read from the
        main file alone). No file yet: an empty in-memory store."""
        try:
            if not self.path.exists():
                con = sqlite3.connect(":memory:", isolation_level=None)
                con.executescript(_SCHEMA)
                return con
            uri = f"file:{urllib.parse.quote(str(self.path))}?mode=ro"
            try:
                con = sqlite3.connect(uri, uri=True, timeout=self.timeout_s, isolation_level=None)
                con.execute("PRAGMA user_version").fetchone()
                return con
            except sqlite3.OperationalError:  # "unable to open database file": no -shm
                pass
            return sqlite3.connect(
                uri + "&immutable=1", uri=True, timeout=self.timeout_s, isolation_level=None
            )
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None

    def _error(self, exc: sqlite3.Error) -> StoreError:
        msg = str(exc)
        if "not a database" in msg or "malformed" in msg or "corrupt" in msg:
            return StoreError(
                f"the scenario database {self.path} is damaged or not a SQLite file ({msg}); "
                f"move it aside to start a new one, or set {ENV_VAR} to another folder"
            )
        if "locked" in msg or "busy" in msg:
            return StoreError(
                f"the scenario database {self.path} stayed locked by another writer for "
                f"{self.timeout_s:g} s; try again"
            )
        return StoreError(f"scenario database {self.path}: {msg}")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        con = self._connect()
        try:
            yield con
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            con.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction: BEGIN IMMEDIATE (takes the write lock first), COMMIT or ROLLBACK."""
        if self.read_only:
            raise StoreError(
                f"cannot save to the scenario database {self.path}: {self.read_only}; saved "
                "scenarios can be listed and opened, not saved, renamed or deleted (set "
                f"{ENV_VAR} to a writable folder to save)"
            )
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            con.close()

    # -- engagements -----------------------------------------------------------------------
    def engagements(self) -> list[str]:
        """Engagement names, sorted (case-insensitive)."""
        with self._read() as con:
            rows = con.execute(
                "SELECT name FROM engagement ORDER BY name COLLATE NOCASE"
            ).fetchall()
        return [r[0] for r in rows]

    @staticmethod
    def _engagement_id(con: sqlite3.Connection, engagement: str, *, create: bool) -> int | None:
        row = con.execute("SELECT id FROM engagement WHERE name = ?", (engagement,)).fetchone()
        if row is not None:
            return int(row[0])
        if not create:
            return None
        cur = con.execute(
            "INSERT INTO engagement (name, created) VALUES (?, ?)", (engagement, _now())
        )
        return int(cur.lastrowid)

    def add_engagement(self, engagement: str) -> str:
        """Create an engagement (no error when it exists); returns the cleaned name."""
        engagement = check_name(engagement, "engagement")
        with self._write() as con:
            self._engagement_id(con, engagement, create=True)
        return engagement

    def delete_engagement(self, engagement: str) -> int:
        """Delete an engagement and all its scenarios; returns how many scenarios went."""
        with self._write() as con:
            eid = self._engagement_id(con, engagement, create=False)
            if eid is None:
                return 0
            n = con.execute("SELECT COUNT(*) FROM scenario WHERE engagement_id = ?", (eid,))
            count = int(n.fetchone()[0])
            con.execute("DELETE FROM engagement WHERE id = ?", (eid,))
        return count

    # -- scenarios -------------------------------------------------------------------------
    def save(
        self,
        engagement: str,
        name: str,
        scenario: Scenario,
        view: dict[str, Any] | None = None,
    ) -> None:
        """Insert or replace the scenario ``name`` of ``engagement`` (created if new)."""
        engagement = check_name(engagement, "engagement")
        name = check_name(name, "scenario name")
        if not isinstance(scenario, Scenario):
            raise StoreError(f"can only save a Scenario, got {type(scenario).__name__}")
        doc, view_doc, now = dump_scenario(scenario), _view_json(view), _now()
        with self._write() as con:
            eid = self._engagement_id(con, engagement, create=True)
            con.execute(
                "INSERT INTO scenario (engagement_id, name, json, view_json, created, updated) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (engagement_id, name) DO UPDATE SET "
                "json = excluded.json, view_json = excluded.view_json, updated = excluded.updated",
                (eid, name, doc, view_doc, now, now),
            )

    def list(self, engagement: str) -> list[ScenarioInfo]:
        """The engagement's scenarios, most recently updated first (empty if none)."""
        with self._read() as con:
            rows = con.execute(
                "SELECT e.name, s.name, s.created, s.updated FROM scenario s "
                "JOIN engagement e ON e.id = s.engagement_id WHERE e.name = ? "
                "ORDER BY s.updated DESC, s.name COLLATE NOCASE",
                (engagement,),
            ).fetchall()
        return [ScenarioInfo(*r) for r in rows]

    def load(self, engagement: str, name: str) -> Saved:
        """The saved scenario; StoreError if absent, ScenarioError if its JSON is refused."""
        with self._read() as con:
            row = con.execute(
                "SELECT s.json, s.view_json, s.created, s.updated FROM scenario s "
                "JOIN engagement e ON e.id = s.engagement_id WHERE e.name = ? AND s.name = ?",
                (engagement, name),
            ).fetchone()
        if row is None:
            raise StoreError(f"no scenario named {name!r} in engagement {engagement!r}")
        scenario = load_scenario(row[0])  # ScenarioError says why an old/bad one is refused
        try:
            view = json.loads(row[1])
        except (ValueError, RecursionError):  # a hand-edited database: display defaults
            view = {}
        return Saved(engagement, name, scenario, view if isinstance(view, dict) else {}, *row[2:])

    def delete(self, engagement: str, name: str) -> bool:
        """Delete one scenario; True if it existed."""
        with self._write() as con:
            cur = con.execute(
                "DELETE FROM scenario WHERE name = ? AND engagement_id = "
                "(SELECT id FROM engagement WHERE name = ?)",
                (name, engagement),
            )
            return cur.rowcount > 0

    def rename(self, engagement: str, old: str, new: str) -> str:
        """Rename a scenario within its engagement; StoreError if absent or the new name is taken."""
        new = check_name(new, "new scenario name")
        with self._write() as con:
            eid = self._engagement_id(con, engagement, create=False)
            exists = (
                eid is not None
                and con.execute(
                    "SELECT 1 FROM scenario WHERE engagement_id = ? AND name = ?", (eid, old)
                ).fetchone()
            )
            if not exists:
                raise StoreError(f"no scenario named {old!r} in engagement {engagement!r}")
            if (
                new != old
                and con.execute(
                    "SELECT 1 FROM scenario WHERE engagement_id = ? AND name = ?", (eid, new)
                ).fetchone()
            ):
                raise StoreError(f"engagement {engagement!r} already has a scenario named {new!r}")
            con.execute(
                "UPDATE scenario SET name = ?, updated = ? WHERE engagement_id = ? AND name = ?",
                (new, _now(), eid, old),
            )
        return new

    # -- client profiles ---------------------------------------------------------------------
    def save_profile(self, engagement: str, yaml_text: str) -> str:
        """Keep a client profile (validated; StoreError naming the field otherwise) under its
        own name in ``engagement``; returns the name."""
        from advisor.perf.calibration.client_profile import ProfileError, parse_profile

        engagement = check_name(engagement, "engagement")
        try:
            name = check_name(parse_profile(yaml_text, "profile").name, "profile name")
        except ProfileError as exc:
            raise StoreError(str(exc)) from None
        with self._write() as con:
            eid = self._engagement_id(con, engagement, create=True)
            con.execute(
                "INSERT INTO client_profile (engagement_id, name, yaml, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (engagement_id, name) DO UPDATE SET yaml = excluded.yaml, "
                "created = excluded.created",
                (eid, name, yaml_text, _now()),
            )
        return name

    def profiles(self, engagement: str) -> list[str]:
        """Names of the engagement's client profiles, sorted."""
        with self._read() as con:
            rows = con.execute(
                "SELECT p.name FROM client_profile p JOIN engagement e ON e.id = p.engagement_id "
                "WHERE e.name = ? ORDER BY p.name COLLATE NOCASE",
                (engagement,),
            ).fetchall()
        return [r[0] for r in rows]

    def load_profile(self, engagement: str, name: str) -> str:
        """A kept profile's YAML, validated again (a hand-edited database is refused)."""
        from advisor.perf.calibration.client_profile import ProfileError, parse_profile

        with self._read() as con:
            row = con.execute(
                "SELECT p.yaml FROM client_profile p JOIN engagement e ON e.id = p.engagement_id "
                "WHERE e.name = ? AND p.name = ?",
                (engagement, name),
            ).fetchone()
        if row is None:
            raise StoreError(f"no client profile named {name!r} in engagement {engagement!r}")
        try:
            parse_profile(row[0], name)
        except ProfileError as exc:
            raise StoreError(str(exc)) from None
        return row[0]

    def export_all(self) -> dict[str, Any]:
        """Every engagement with its scenarios (as saved, JSON) and display settings: a backup
        that a person can read and that the Scenarios page's upload takes scenario by scenario."""
        with self._read() as con:
            engagements = [r[0] for r in con.execute(
                "SELECT name FROM engagement ORDER BY name COLLATE NOCASE")]  # fmt: skip
            rows = con.execute(
                "SELECT e.name, s.name, s.json, s.view_json, s.created, s.updated FROM scenario s "
                "JOIN engagement e ON e.id = s.engagement_id ORDER BY e.name, s.name"
            ).fetchall()
        out: dict[str, list] = {e: [] for e in engagements}
        for eng, name, doc, view, created, updated in rows:
            try:
                scenario: Any = json.loads(doc)
            except (ValueError, RecursionError):  # kept verbatim: a backup drops nothing
                scenario = doc
            out.setdefault(eng, []).append({"name": name, "scenario": scenario,
                                            "view": view, "created": created,
                                            "updated": updated})  # fmt: skip
        with self._read() as con:
            kept = con.execute(
                "SELECT e.name, p.name, p.yaml FROM client_profile p "
                "JOIN engagement e ON e.id = p.engagement_id ORDER BY e.name, p.name"
            ).fetchall()
        profiles: dict[str, list] = {}
        for eng, name, text in kept:
            profiles.setdefault(eng, []).append({"name": name, "yaml": text})
        return {"exported": _now(), "store_version": STORE_VERSION, "engagements": out,
                "client_profiles": profiles}  # fmt: skip

    def check(self) -> str:
        """SQLite's integrity check: 'ok' or the problems found."""
        with self._read() as con:
            rows = con.execute("PRAGMA integrity_check").fetchall()
        return "; ".join(r[0] for r in rows)
