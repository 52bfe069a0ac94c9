"""Scenarios: save the sidebar under a name per engagement, load, delete, rename, download, upload,
and the built-in examples. Everything saved lives in the SQLite store of the user data folder."""

from __future__ import annotations

import json
import re
from datetime import date

import streamlit as st

from advisor.catalog.user_data import ENV_VAR, data_dir
from advisor.scenario import Scenario, ScenarioError, dump_scenario, load_scenario
from advisor.store import (
    DB_NAME,
    DEFAULT_ENGAGEMENT,
    Store,
    StoreError,
    check_name,
    kept_aside,
    set_aside,
)
from ui.format import md_escape as E
from ui.scenarios import (
    ENGAGEMENT_KEY,
    can_load_into_sidebar,
    examples,
    flash,
    load_into_sidebar,
    open_store,
    view_from,
)
from ui.state import current, guarded

SS = st.session_state
MAX_UPLOAD_MB = 2


def _file_name(name: str) -> str:
    return (re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "scenario")[:80] + ".json"


# -- callbacks (run before the script, so they may set widget state) ----------------------------
def _save(store: Store, engagement: str) -> None:
    scenario, view = current()
    try:
        name = check_name(SS.get("sc.name", ""), "scenario name")
        store.save(engagement, name, scenario.model_copy(update={"name": name}), view.model_dump())
    except StoreError as exc:
        SS["sc.flash"] = ("error", f"Not saved: {E(exc)}")
        return
    SS["sc.flash"] = ("success", f"Saved “{E(name)}” in engagement “{E(engagement)}”.")


def _load(store: Store, engagement: str, name: str) -> None:
    try:
        saved = store.load(engagement, name)
    except (StoreError, ScenarioError) as exc:
        SS["sc.flash"] = ("error", f"“{E(name)}” cannot be loaded: {E(exc)}")
        return
    load_into_sidebar(saved.scenario, view_from(saved.view), name)


def _delete(store: Store, engagement: str, name: str) -> None:
    try:
        store.delete(engagement, name)
        SS["sc.flash"] = ("success", f"Deleted “{E(name)}” from “{E(engagement)}”.")
    except StoreError as exc:
        SS["sc.flash"] = ("error", f"Not deleted: {E(exc)}")


def _rename(store: Store, engagement: str) -> None:
    old, new = SS.get("sc.rename_from"), SS.get("sc.rename_to", "")
    try:
        new = store.rename(engagement, old, new)
        SS["sc.flash"] = ("success", f"Renamed “{E(old)}” to “{E(new)}”.")
    except StoreError as exc:
        SS["sc.flash"] = ("error", f"Not renamed: {E(exc)}")


def _set_aside() -> None:
    try:
        moved = set_aside()
    except StoreError as exc:
        SS["sc.flash"] = ("error", f"Not moved: {E(exc)}")
        return
    SS["sc.flash"] = ("success", f"Kept aside as {E(moved)}; a new, empty database was started.")


def store_problems(store_error: str | None) -> None:
    """A damaged or emptied database: say so, offer to keep it aside; list those kept aside."""
    if store_error:
        st.error(
            f"Saved scenarios are unavailable: {E(store_error)}. Examples, upload and download "
            "still work."
        )
        if (data_dir() / DB_NAME).exists():
            st.button(
                "Keep the damaged database aside (renamed, nothing deleted) and start a new one",
                on_click=_set_aside, key="sc.aside",
            )  # fmt: skip
    for path in kept_aside():
        st.warning(
            f"A damaged or emptied scenario database was kept aside: {E(path)} "
            f"({path.stat().st_size:,} bytes). Its scenarios are not listed here; `sqlite3` can "
            "often recover them (`.recover`). Delete the file when it is no longer needed."
        )


def backup_button(store: Store) -> None:
    st.download_button(
        "Download all saved scenarios (backup, JSON)",
        data=lambda: json.dumps(store.export_all(), indent=1, ensure_ascii=False),
        file_name=f"scenarios-backup-{date.today().isoformat()}.json",
        mime="application/json", on_click="ignore", key="sc.backup",
    )  # fmt: skip


def _add_engagement(store: Store) -> None:
    try:
        SS[ENGAGEMENT_KEY] = store.add_engagement(SS.get("sc.new_engagement", ""))
        SS["sc.new_engagement"] = ""
    except StoreError as exc:
        SS["sc.flash"] = ("error", f"Engagement not added: {E(exc)}")


def _save_upload(store: Store, engagement: str, scenario, name: str) -> None:
    try:
        store.save(engagement, name, scenario)
        SS["sc.flash"] = ("success", f"Saved the uploaded “{E(name)}” in “{E(engagement)}”.")
    except StoreError as exc:
        SS["sc.flash"] = ("error", f"Not saved: {E(exc)}")


# -- sections ---------------------------------------------------------------------------------
def engagement_picker(store: Store) -> str:
    names = store.engagements() or [DEFAULT_ENGAGEMENT]
    if SS.get(ENGAGEMENT_KEY) not in names:
        SS[ENGAGEMENT_KEY] = names[0]
    c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
    c1.selectbox("Engagement (client)", names, key=ENGAGEMENT_KEY,
                 help="Scenarios of different engagements are kept apart.")  # fmt: skip
    c2.text_input("New engagement", key="sc.new_engagement", placeholder="e.g. Acme Corp")
    c3.button("Add", on_click=_add_engagement, args=(store,), help="Add the new engagement")
    return SS[ENGAGEMENT_KEY]


def save_section(store: Store, engagement: str) -> None:
    st.subheader("Save the sidebar scenario")
    scenario, _ = current()
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    if not SS.get("sc.name") and scenario.name != Scenario.model_fields["name"].default:
        SS["sc.name"] = scenario.name  # the sidebar's name (a loaded example's, say)
    c1.text_input(
        "Name", key="sc.name", max_chars=200,
        placeholder=f"e.g. {scenario.model} on {scenario.hardware.total_gpus}× "
        f"{scenario.hardware.gpus[0]}",
    )  # fmt: skip
    c2.button("Save", type="primary", on_click=_save, args=(store, engagement), key="sc.save")
    st.caption(
        "Saves the whole sidebar (model, hardware, workload, SLA, cost) and the pages' own "
        "settings; the same name in the same engagement is replaced."
    )


def saved_section(store: Store, engagement: str) -> None:
    st.subheader(f"Saved in “{E(engagement)}”")
    rows = store.list(engagement)
    if not rows:
        st.info("Nothing saved in this engagement yet.")
        return
    for i, row in enumerate(rows):
        c1, c2, c3, c4 = st.columns([3, 1, 1, 1], vertical_alignment="center")
        c1.markdown(f"**{E(row.name)}**  \n:gray[updated {row.updated.replace('T', ' ')} UTC]")
        c2.button("Load", key=f"sc.load.{i}", on_click=_load, args=(store, engagement, row.name))
        c3.download_button(
            "JSON", data=lambda n=row.name: dump_scenario(store.load(engagement, n).scenario),
            file_name=_file_name(row.name), mime="application/json", on_click="ignore",
            key=f"sc.dl.{i}",
        )  # fmt: skip
        c4.button("Delete", key=f"sc.del.{i}", on_click=_delete, args=(store, engagement, row.name))
    with st.expander("Rename"):
        c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
        c1.selectbox("Scenario", [r.name for r in rows], key="sc.rename_from")
        c2.text_input("New name", key="sc.rename_to", max_chars=200)
        c3.button("Rename", on_click=_rename, args=(store, engagement))


def upload_section(store: Store | None, engagement: str) -> None:
    st.subheader("Upload a scenario file")
    up = st.file_uploader(
        "Scenario JSON (as downloaded here or from the Scenario page)", type=["json"],
        key="sc.upload", max_upload_size=MAX_UPLOAD_MB,
        help=f"Limit {MAX_UPLOAD_MB} MB. An older schema version is upgraded or refused with the "
        "reason.",
    )  # fmt: skip
    if up is None:
        return
    try:
        scenario = load_scenario(up.getvalue())
    except ScenarioError as exc:
        st.error(f"{E(up.name)} was not loaded: {E(exc)}")
        return
    st.success(f"{E(up.name)}: a valid scenario, “{E(scenario.name)}” ({E(scenario.model)}).")
    c1, c2 = st.columns(2)
    why = can_load_into_sidebar(scenario)
    c1.button(
        "Load into the sidebar", key="sc.up.load", on_click=load_into_sidebar,
        args=(scenario, view_from(None), scenario.name), disabled=why is not None,
        help=E(why) if why else None,
    )  # fmt: skip
    if store is not None:
        c2.button(
            f"Save in “{E(engagement)}” as “{E(scenario.name)}”", key="sc.up.save",
            on_click=_save_upload, args=(store, engagement, scenario, scenario.name),
        )  # fmt: skip


def examples_section() -> None:
    st.subheader("Examples")
    for i, ex in enumerate(examples()):
        c1, c2 = st.columns([3, 1], vertical_alignment="center")
        c1.markdown(f"**{ex.label}**  \n{ex.scenario.sla.describe()}")
        c2.button("Load", key=f"sc.ex.{i}", on_click=load_into_sidebar,
                  args=(ex.scenario, ex.view, ex.label))  # fmt: skip
    from advisor.examples import EXAMPLES

    with st.expander("What the examples assume"):
        for ex in EXAMPLES.values():
            st.markdown(f"**{ex.title}.** {ex.description}")


def download_current() -> None:
    scenario, _ = current()
    st.download_button(
        "Download the sidebar scenario (JSON)", dump_scenario(scenario),
        file_name="scenario.json", mime="application/json", on_click="ignore", key="sc.dl.cur",
    )  # fmt: skip


st.title("Scenarios")
flash()
store, store_error = open_store()
guarded("Database", store_problems, store_error)
left, right = st.columns([3, 2], gap="large")
with left:
    engagement = DEFAULT_ENGAGEMENT
    if store is not None:
        if store.read_only:
            st.warning(
                f"The scenario database cannot be written ({E(store.read_only)}): saved "
                "scenarios are listed and can be loaded, but saving, renaming and deleting do "
                f"not work here. Set {ENV_VAR} to a writable folder to save."
            )
        engagement = guarded("Engagements", engagement_picker, store) or DEFAULT_ENGAGEMENT
        guarded("Save", save_section, store, engagement)
        guarded("Saved scenarios", saved_section, store, engagement)
        st.caption(f"Stored in {E(store.path)} (set {ENV_VAR} to use another folder).")
        guarded("Backup", backup_button, store)
    guarded("Download", download_current)
with right:
    guarded("Examples", examples_section)
    guarded("Upload", upload_section, store, engagement)
