"""Hostile-input cases of issue 16 (hardening round 2) for the command line.

Each case is one the independent attack found (issue 16, items 3-7): a flag silently taken for
another, output errors ending in a traceback, ``--out`` hanging on a FIFO or writing through a
symlink, the wrong flag named. Expected outcomes are the contract in docs/CONVENTIONS.md "Bad
input": exit 2 with one stderr line naming the flag; an output failure is one line, exit 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.catalog.files import FileWriteError, check_out_target, write_atomic
from advisor.cli import encodable, main

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
MEM = ["memory", "--model", "llama-2-7b", "--gpu", "h100-sxm"]
EST = ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "8", "--osl", "8"]


def _run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors end the parse with SystemExit(2)
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_exit_2(code, out, err, flag):
    assert code == 2, (code, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert flag in err, err


# -- item 4: no abbreviation, no silent repeat --------------------------------------------------
@pytest.mark.parametrize(
    "argv, flag",
    [
        (["recommend", "--tp", "8"], "--tp"),  # was taken as --tpot-p99-ms 8 (exit 0)
        (["report", "--tp", "8", "--out", "x.pdf"], "--tp"),  # wrote a PDF with TPOT <= 8 ms
        (["memory", "--mod", "llama-2-7b", "--gpu", "h100-sxm"], "--mod"),  # was --model
        (["recommend", "--tpot", "8"], "--tpot"),
        ([*MEM, "--gpu", "a100-sxm"], "--gpu"),  # was: last one kept
        (["recommend", "--gpu", "h100-sxm", "--gpu", "a100-sxm"], "--gpu"),
        ([*EST, "--tp", "1", "--tp", "2"], "--tp"),
    ],
)
def test_abbreviated_or_repeated_flag_is_refused_naming_it(
    argv, flag, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(argv, capsys)
    _one_line_exit_2(code, out, err, flag)
    assert not (tmp_path / "x.pdf").exists()


def test_every_parser_refuses_abbreviations():
    from advisor.cli import build_parser

    parser = build_parser()
    subs = parser._subparsers._group_actions[0].choices  # the argparse registry of subcommands
    assert parser.allow_abbrev is False
    assert all(p.allow_abbrev is False for p in subs.values()), sorted(subs)


# -- item 6: the flag at fault is the one named -------------------------------------------------
def test_unknown_draft_model_names_spec_draft(capsys):
    code, out, err = _run([*EST, "--spec-draft", "<script>"], capsys)
    _one_line_exit_2(code, out, err, "--spec-draft")
    assert "--model" not in err


# -- item 3: output errors ----------------------------------------------------------------------
def _sh(cmd: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", cmd], capture_output=True, text=True, timeout=120,
        env={**ENV, **env}, cwd=ROOT,
    )  # fmt: skip


PY = f"{sys.executable} -m advisor"


@pytest.mark.parametrize(
    "cmd",
    [
        f"{PY} catalog > /dev/full",  # was OSError traceback
        f"{PY} memory --json --model llama-2-7b --gpu h100-sxm > /dev/full",
        f"{PY} validate > /dev/full",
        f"{PY} catalog >&-",  # closed stdout: was AttributeError
    ],
)
def test_unwritable_stdout_is_one_line_exit_1(cmd):
    p = _sh(cmd)
    assert p.returncode == 1, p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert "output" in p.stderr


def test_latin1_terminal_gets_ascii_for_what_it_cannot_show():
    # "≤" is not in Latin-1 (ISO 8859-1 table): was UnicodeEncodeError in recommend's text form
    p = _sh(f"{PY} recommend --isl 256 --osl 32 --no-disaggregated", PYTHONIOENCODING="latin-1")
    assert p.returncode == 0, p.stderr
    assert "TPOT <= 50 ms" in p.stdout and "Traceback" not in p.stderr


def test_encodable_keeps_what_the_encoding_shows():
    assert encodable("≤ × µ 客", "utf-8") == "≤ × µ 客"
    assert encodable("≤ × µ 客", "latin-1") == "<= × µ ?"  # × and µ are Latin-1 (0xD7, 0xB5)
    assert encodable("≤ × µ", "ascii") == "<= x u"


# -- item 5: --out -------------------------------------------------------------------------------
def test_out_fifo_is_refused_without_hanging(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for argv in (["report", "--out", str(fifo)], ["calibrate", "--out", str(fifo)]):
        code, out, err = _run(argv, capsys)
        _one_line_exit_2(code, out, err, "--out")
        assert "FIFO" in err


@pytest.mark.parametrize(
    "value, why",
    [
        ("/dev/null", "character device"),
        ("/tmp", "directory"),
        ("/tmp/" + "x" * 300 + ".pdf", "File name too long"),  # NAME_MAX is 255 on ext4/tmpfs
        ("/etc/hostname/x.pdf", "Not a directory"),
    ],
)
def test_out_path_errors_exit_2(value, why, capsys):
    code, out, err = _run(["report", "--out", value], capsys)
    _one_line_exit_2(code, out, err, "--out")
    assert why in err


def test_write_atomic_replaces_a_symlink_never_its_target(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "out.pdf"
    link.symlink_to(target)
    write_atomic(link, b"%PDF-new")
    assert target.read_text() == "keep me"
    assert not link.is_symlink() and link.read_bytes() == b"%PDF-new"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_write_atomic_keeps_the_old_file_when_the_write_fails(tmp_path):
    old = tmp_path / "c.yaml"
    old.write_text("old")
    os.chmod(tmp_path, 0o500)  # no new file (the temporary one) can be made in the folder
    try:
        if os.access(tmp_path, os.W_OK):  # root ignores the mode: nothing to test then
            pytest.skip("running as a user that bypasses file permissions")
        with pytest.raises(FileWriteError):
            write_atomic(old, b"new")
    finally:
        os.chmod(tmp_path, 0o700)
    assert old.read_text() == "old"


def test_check_out_target_accepts_a_new_file_and_a_link(tmp_path):
    check_out_target(tmp_path / "new.pdf")
    (tmp_path / "l").symlink_to(tmp_path / "missing")
    check_out_target(tmp_path / "l")


def test_report_through_a_symlink_leaves_the_target(tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep me")
    (tmp_path / "r.pdf").symlink_to(target)
    p = _sh(f"{PY} report --out {tmp_path / 'r.pdf'} --isl 256 --osl 32 --no-sensitivities "
            "--no-disaggregated")  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert target.read_text() == "keep me"
    assert (tmp_path / "r.pdf").read_bytes().startswith(b"%PDF")


# -- item 7: --input ----------------------------------------------------------------------------
GOOD = '{"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 128, "osl": 16'


def _estimate_input(tmp_path, capsys, text: str) -> list[dict]:
    import json

    f = tmp_path / "in.jsonl"
    f.write_bytes(text.encode("utf-8"))
    code, out, err = _run(["estimate", "--input", str(f), "--json"], capsys)
    assert code == 0 and err == "", err
    assert out.count("\n") == 1  # one strict-JSON object, streamed
    return json.loads(out)["results"]


def test_input_splits_lines_on_newline_only(tmp_path, capsys):
    # U+2028/U+2029 are legal raw inside a JSON string (RFC 8259 section 7); str.splitlines()
    # broke the line there and shifted every later line number
    text = f'{GOOD}, "link": "x\u2028y\u2029z"}}\n{GOOD}, "tp": 0}}\n'
    res = _estimate_input(tmp_path, capsys, text)
    assert len(res) == 2
    assert res[0]["line"] == 1 and "--link" in res[0]["error"]
    assert res[1]["line"] == 2 and "tp" in res[1]["error"]


@pytest.mark.parametrize(
    "line, words",
    [
        (f'{GOOD}, "tp": 2, "tp": 1}}', ["'tp'", "twice"]),  # was: the last value, silently
        (f'{GOOD}, "tp": true}}', ["tp", "boolean", "number"]),  # was: read as TP=1
        (f'{GOOD}, "isl": false}}'.replace('"isl": 128, ', ""), ["isl", "boolean"]),
        (f'{GOOD}, "qps": NaN}}', ["NaN"]),
        # were: read as true by pydantic's lax mode, switching the layout on
        (f'{GOOD}, "ep": "yes"}}', ["ep", "not a boolean", "true or false"]),
        (f'{GOOD}, "dp_attention": 1}}', ["dp_attention", "not a boolean", "true or false"]),
        ('{"a": ' + "[" * 21 + "]" * 21 + "}", ["nested deeper than 20"]),
        ('{"a": ' + "[" * 100_000, ["nested deeper than 20"]),
        ("[1, 2]", ["expected a JSON object"]),
    ],
)
def test_input_line_errors_name_the_line_and_key(line, words, tmp_path, capsys):
    res = _estimate_input(tmp_path, capsys, f"{GOOD}}}\n\n{line}\n")
    assert "ttft_ms" in res[0]
    assert res[1]["line"] == 3, res[1]  # the blank line 2 still counts
    assert all(w in res[1]["error"] for w in words), res[1]["error"]


def test_input_ep_stays_a_boolean(tmp_path, capsys):
    res = _estimate_input(tmp_path, capsys, f'{GOOD}, "ep": false, "dp_attention": true}}\n')
    assert "ttft_ms" in res[0], res[0]


def test_input_repeated_lines_give_the_same_result(tmp_path, capsys):
    a, b = f"{GOOD}}}", '{"osl": 16, "isl": 128, "gpu": "h100-sxm", "model": "llama-3.1-8b"}'
    res = _estimate_input(tmp_path, capsys, "\n".join([a, b, a, "bad", a]) + "\n")
    assert res[0] == res[1] == res[2] == res[4] and "error" in res[3]


def test_input_text_form_is_one_json_per_line(tmp_path, capsys):
    f = tmp_path / "in.jsonl"
    f.write_text(f"{GOOD}}}\nnot json\n")
    code, out, _ = _run(["estimate", "--input", str(f)], capsys)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2 and '"error"' in lines[1] and '"line": 2' in lines[1]


def test_input_internal_error_while_streaming_is_one_line_exit_1(tmp_path, capsys, monkeypatch):
    import advisor.cli.estimate_cmd as estimate_cmd

    def boom(*_args, **_kwargs):
        raise ZeroDivisionError("x")

    monkeypatch.setattr(estimate_cmd, "_run_one", boom)
    f = tmp_path / "in.jsonl"
    f.write_text(f"{GOOD}}}\n")
    code, _, err = _run(["estimate", "--input", str(f), "--json"], capsys)
    assert code == 1 and err == "advisor estimate: internal error: ZeroDivisionError: x\n"
