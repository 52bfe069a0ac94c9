"""profiles._calibration reads data/calibration.yaml without its per-row residuals, and
validate.out_of_sample data/crossval.yaml without its per-row predictions (issue 38: the bulk of
each file's parse, on a fresh process's first answer and on every PDF). Expected values: the
files themselves, parsed whole by the same YAML loader, and small documents written here."""

from __future__ import annotations

import yaml

from advisor.catalog.files import load_data_yaml
from advisor.perf.model import profiles


def test_the_shipped_file_reads_as_before_but_for_the_residuals():
    whole = load_data_yaml(profiles.CALIBRATION_PATH.read_text(encoding="utf-8"))
    assert len(whole["residuals"]) > 100  # what is skipped is the bulk of the file
    whole.pop("residuals")
    assert profiles._calibration() == whole
    assert {"global", "families", "engines", "fit_summary", "rows_skipped"} <= set(whole)


def test_a_block_between_others_is_cut_alone(tmp_path):
    doc = {"global": {"attention_efficiency": 0.7}, "residuals": {"m1": 1.5, "m2": -3.0},
           "families": {"hopper": {"eta_mem": 0.8}}, "notes": ["a", "b"], "rows_skipped": 4}  # fmt: skip
    path = tmp_path / "calibration.yaml"
    path.write_text("# header\n" + yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    got = profiles._calibration(path)
    assert got == {k: v for k, v in doc.items() if k != "residuals"}


def test_a_changed_file_gives_changed_constants(tmp_path):
    path = tmp_path / "calibration.yaml"
    for eta in (0.8, 0.6):  # the cache (functools.cache) is emptied by reload, as calibrate does
        path.write_text(yaml.safe_dump({"families": {"hopper": {"eta_mem": eta}},
                                        "residuals": {"m1": 1.0}}), encoding="utf-8")  # fmt: skip
        profiles.reload()
        assert profiles._calibration(path)["families"]["hopper"]["eta_mem"] == eta
    profiles.reload()


def test_the_held_out_table_reads_as_before_without_the_per_row_predictions():
    from advisor.catalog.loader import DATA_DIR
    from advisor.perf.validation.validate import out_of_sample

    whole = load_data_yaml((DATA_DIR / "crossval.yaml").read_text(encoding="utf-8"))
    assert len(whole["loso_rows"]) > 1000  # what is skipped is the bulk of the file
    got = out_of_sample()
    assert got["schemes"] == {g: f for g, f in whole["held_out"].items() if isinstance(f, dict)}
    assert (got["generated_on"], got["generated_by"]) == (
        str(whole["generated_on"]),
        whole["generated_by"],
    )
