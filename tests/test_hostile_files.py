"""Malformed and hostile input files: config.json (--model PATH, the app upload) and scenario JSON
(--scenario, the app upload, saved scenarios). Each is refused with a message naming the field
or the limit; nothing in user data is executed or unpickled.

Expected messages are the validators' own (advisor/catalog/hf/, advisor/scenario.py);
the base config is tests/fixtures/hf/llama-3.1-8b.json (the Hugging Face file).
"""

from __future__ import annotations

import ast
import copy
import json
import sqlite3
import tomllib
from pathlib import Path

import pytest

from advisor.catalog import hf
from advisor.catalog.hf import HFConfigError, load_hf_config_bytes, model_from_hf_config
from advisor.cli import main
from advisor.scenario import MAX_SCENARIO_BYTES, Scenario, ScenarioError, load_scenario
from advisor.store import Store

ROOT = Path(__file__).resolve().parents[1]
BASE = json.loads((ROOT / "tests/fixtures/hf/llama-3.1-8b.json").read_text())
BASE_BYTES = json.dumps(BASE).encode()


def cfg(**changes) -> bytes:
    d = copy.deepcopy(BASE)
    d.update(changes)
    return json.dumps(d).encode()


def with_raw(extra: bytes) -> bytes:
    """BASE with one more member written verbatim (for non-JSON literals)."""
    return BASE_BYTES[:-1] + b", " + extra + b"}"


CONFIG_CASES = [
    ("truncated", BASE_BYTES[:100], "truncated JSON"),
    ("empty", b"", "empty file"),
    ("layers as string", cfg(num_hidden_layers="32"), "'num_hidden_layers' must be an integer"),
    ("layers as float", cfg(num_hidden_layers=32.5), "'num_hidden_layers' must be an integer"),
    ("layers as bool", cfg(num_hidden_layers=True), "'num_hidden_layers' must be an integer"),
    ("zero heads", cfg(num_attention_heads=0), "'num_attention_heads'=0 is out of range"),
    ("negative heads", cfg(num_attention_heads=-32), "'num_attention_heads'=-32 is out of range"),
    ("zero KV heads", cfg(num_key_value_heads=0), "'num_key_value_heads'=0 is out of range"),
    ("heads % kv", cfg(num_key_value_heads=7), "not divisible by num_key_value_heads=7"),
    ("unknown arch", cfg(model_type="bert", architectures=["BertModel"]), "unknown architecture"),
    ("arch as object", cfg(architectures={"a": 1}), "'architectures' must be a list"),
    ("NaN literal", with_raw(b'"rope_theta": NaN'), "NaN/Infinity refused"),
    ("Infinity literal", with_raw(b'"rope_theta": Infinity'), "NaN/Infinity refused"),
    (
        "10**400 layers",
        cfg(num_hidden_layers=10**400),
        "field 'num_hidden_layers': an integer of 401 digits",
    ),
    ("5001-digit int", with_raw(b'"x": 1' + b"0" * 5000), "unreadable JSON"),
    ("array at top", b"[" + BASE_BYTES + b"]", "top level must be a JSON object"),
    ("duplicate key", b'{"model_type": "llama", "model_type": "qwen2"}', "duplicate key"),
    ("100,000 levels", b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nesting deeper"),
    ("not UTF-8", b'{"model_type": "ll\xffama"}', "not UTF-8 text (byte 0xff at offset 18)"),
    ("UTF-16", BASE_BYTES.decode().encode("utf-16"), "not UTF-8"),
    ("50 MB", b'{"a": "' + b"x" * 50_000_000 + b'"}', "larger than the 1,000,000-byte limit"),
    ("vocab 1e12", cfg(vocab_size=10**12), "'vocab_size'=1000000000000 is out of range"),
    ("negative hidden", cfg(hidden_size=-4096), "'hidden_size'=-4096 is out of range"),
    ("context 0", cfg(max_position_embeddings=0), "'max_position_embeddings'=0 is out of range"),
]


@pytest.mark.parametrize(
    "data, expected", [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES]
)
def test_hostile_config_json_is_refused_naming_the_key(data, expected):
    with pytest.raises(HFConfigError) as info:
        model_from_hf_config(load_hf_config_bytes(data))
    assert expected in str(info.value)
    assert "\n" not in str(info.value) and len(str(info.value)) < 600


def test_bom_config_is_accepted():
    """A UTF-8 byte-order mark is still UTF-8 (Windows editors write one)."""
    spec = model_from_hf_config(load_hf_config_bytes(b"\xef\xbb\xbf" + BASE_BYTES))
    assert spec.num_attention_heads == 32 and spec.num_key_value_heads == 8  # the HF file


def run_cli(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    "name, data, expected",
    [
        ("trunc.json", BASE_BYTES[:100], "truncated JSON"),
        ("heads.json", cfg(num_key_value_heads=7), "not divisible"),
        ("deep.json", b"[" * 100_000, "nesting deeper"),
        ("bin.json", b"\x80\x81\x82", "not UTF-8"),
        ("nan.json", with_raw(b'"x": NaN'), "NaN/Infinity refused"),
    ],
)
def test_cli_model_path_exit_2_one_line(tmp_path, capsys, name, data, expected):
    path = tmp_path / name
    path.write_bytes(data)
    code, out, err = run_cli(capsys, "memory", "--model", str(path), "--gpu", "h100-sxm")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--model" in err and expected in err


def test_cli_50mb_files_are_refused_before_reading(tmp_path, capsys):
    big = tmp_path / "big.json"
    with big.open("wb") as f:  # sparse: the size check must come from stat, not a read
        f.truncate(50_000_000)
    code, _, err = run_cli(capsys, "memory", "--model", str(big), "--gpu", "h100-sxm")
    assert code == 2 and "--model" in err and "50,000,000 bytes" in err
    code, _, err = run_cli(capsys, "recommend", "--scenario", str(big))
    assert code == 2 and "--scenario" in err and f"limit is {MAX_SCENARIO_BYTES:,}" in err
    code, _, err = run_cli(capsys, "estimate", "--input", str(big))
    assert code == 2 and "--input" in err and "limit is 10,000,000" in err


GOOD = {"schema_version": 1, "model": "llama-3.1-8b"}


def _nested(levels: int) -> list:
    """A JSON value ``levels`` deep: [[...[]...]]."""
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def sc(**changes) -> bytes:
    return json.dumps({**GOOD, **changes}).encode()


SCENARIO_CASES = [
    ("truncated", sc()[:20], "not valid JSON"),
    ("empty", b"", "not valid JSON"),
    ("not UTF-8", b'{"schema_version": 1, "name": "\xff"}', "not UTF-8"),
    ("array at top", b"[1]", "must be a JSON object, got list"),
    ("null", b"null", "must be a JSON object"),
    ("no version", b'{"model": "llama-3.1-8b"}', "no schema_version"),
    ("version 2", sc(schema_version=2), "newer than this app supports"),
    ("version '1'", sc(schema_version="1"), "schema_version '1' is not supported"),
    ("version 1.0", sc(schema_version=1.0), "schema_version 1.0 is not supported"),
    ("version true", sc(schema_version=True), "schema_version True is not supported"),
    ("duplicate key", b'{"schema_version": 1, "schema_version": 1}', "key 'schema_version' twice"),
    ("100,000 levels", b'{"schema_version": 1, "name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
     "nested deeper than 21 levels"),  # fmt: skip
    # issue 16: an embedded config 27 levels deep was accepted where a config.json stops at 20
    ("config 27 levels", sc(model="x", model_config_json={**BASE, "x": _nested(26)}),
     "nested deeper than 21 levels"),  # fmt: skip
    ("config 27 levels, dict", {**GOOD, "model": "x", "model_config_json": {**BASE, "x": _nested(26)}},
     "nesting of 27 levels is deeper than the 20 allowed"),  # fmt: skip
    ("scenario 22 levels", sc(name=_nested(21)), "nested deeper than 21 levels"),
    ("50 MB", sc(name="x" * 50_000_000), "the limit is 1,000,000"),
    ("unknown model", sc(model="gpt-5"), "unknown model 'gpt-5'"),
    ("unknown key", sc(colour="red"), "colour: Extra inputs are not permitted"),
    ("isl as string", sc(workload={"isl_tokens": "1024"}), "workload.isl_tokens: Input should be a valid integer"),
    ("isl as bool", sc(workload={"isl_tokens": True}), "workload.isl_tokens: Input should be a valid integer"),
    ("isl 10**400", sc(workload={"isl_tokens": 10**400}), "field 'workload.isl_tokens': an integer of 401 digits"),
    ("isl 5001 digits", b'{"schema_version": 1, "workload": {"isl_tokens": 1' + b"0" * 5000 + b"}}",
     "unreadable number"),  # fmt: skip
    ("negative osl", sc(workload={"osl_tokens": -1}), "workload.osl_tokens: Input should be greater"),
    ("NaN rate", b'{"schema_version": 1, "workload": {"arrival_rate_per_s": NaN}}',
     "workload.arrival_rate_per_s: Input should be a finite number"),  # fmt: skip
    ("Infinity TPOT", b'{"schema_version": 1, "sla": {"tpot_ms": Infinity}}',
     "sla.tpot_ms: Input should be a finite number"),  # fmt: skip
    ("array for object", sc(workload=[1, 2]), "workload: Input should be a valid dictionary"),
    ("object for array", sc(hardware={"gpus": {"h100-sxm": 1}}), "hardware.gpus: Input should be a valid list"),
    ("gpu twice", sc(hardware={"gpus": ["h100-sxm", "h100-sxm"]}), "lists an accelerator twice"),
    ("zero GPUs/node", sc(hardware={"gpus_per_node": 0}), "hardware.gpus_per_node"),
    ("long name", sc(name="x" * 201), "name: String should have at most 200 characters"),
    ("config: unknown arch", sc(model="x", model_config_json={"model_type": "bert"}),
     "model_config_json: unknown architecture"),  # fmt: skip
    ("config: zero heads", sc(model="x", model_config_json={**BASE, "num_attention_heads": 0}),
     "model_config_json: config.json: 'num_attention_heads'=0 is out of range"),  # fmt: skip
    ("config: heads % kv", sc(model="x", model_config_json={**BASE, "num_key_value_heads": 5}),
     "not divisible by num_key_value_heads=5"),  # fmt: skip
    ("config as string", sc(model="x", model_config_json="llama"), "model_config_json: Input should be a valid dictionary"),
]  # fmt: skip


@pytest.mark.parametrize(
    "data, expected", [c[1:] for c in SCENARIO_CASES], ids=[c[0] for c in SCENARIO_CASES]
)
def test_hostile_scenario_json_is_refused_naming_the_field(data, expected):
    with pytest.raises(ScenarioError) as info:
        load_scenario(data)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_scenario_with_bom_and_with_an_imported_config_loads():
    assert load_scenario(b"\xef\xbb\xbf" + sc()).model == "llama-3.1-8b"
    s = load_scenario(sc(model="my-llama", model_config_json=BASE))
    assert s.model_spec().num_hidden_layers == 32  # the HF file


def test_cli_scenario_file_exit_2_names_flag_and_field(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_bytes(sc(workload={"isl_tokens": "1024"}))
    code, out, err = run_cli(capsys, "recommend", "--scenario", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--scenario" in err and "workload.isl_tokens" in err


def test_tampered_saved_scenario_is_refused_with_a_message(tmp_path):
    """A database edited by hand: the scenario JSON is re-validated, the view falls back."""
    store = Store(tmp_path / "s.sqlite3")
    store.save("acme", "ok", Scenario(model="llama-3.1-8b"), view={"tp": 2})
    store.save("acme", "bad", Scenario(model="llama-3.1-8b"))
    con = sqlite3.connect(tmp_path / "s.sqlite3")
    with con:
        con.execute(
            "UPDATE scenario SET json = ? WHERE name = 'bad'",
            ('{"schema_version": 1, "workload": {"isl_tokens": NaN}}',),
        )
        con.execute("UPDATE scenario SET view_json = ? WHERE name = 'ok'", ("[" * 100_000,))
    con.close()
    with pytest.raises(ScenarioError, match="workload.isl_tokens"):
        store.load("acme", "bad")
    assert store.load("acme", "ok").view == {}  # unreadable view: display defaults


def test_upload_size_caps():
    """Streamlit refuses uploads over maxUploadSize (MB); the parsers cap again in bytes."""
    server = tomllib.loads((ROOT / ".streamlit/config.toml").read_text())["server"]
    assert server["maxUploadSize"] <= 2
    assert hf.DEFAULT_MAX_BYTES <= 2_000_000 and MAX_SCENARIO_BYTES <= 2_000_000
    assert "max_upload_size=MAX_UPLOAD_MB" in (ROOT / "ui/pages/scenarios.py").read_text()


#: Calls that execute or unpickle data, by (module or object, attribute) or bare name.
_DANGEROUS_NAMES = {"eval", "exec", "compile", "__import__"}
_DANGEROUS_ATTRS = {
    ("pickle", "load"), ("pickle", "loads"), ("marshal", "loads"), ("shelve", "open"),
    ("yaml", "load"), ("yaml", "unsafe_load"), ("yaml", "full_load"), ("dill", "loads"),
    ("os", "system"), ("subprocess", "getoutput"),
}  # fmt: skip


def test_no_eval_exec_or_unpickling_in_the_code_base():
    """AST scan of advisor/ and the app: no eval/exec/pickle/unsafe yaml.load anywhere."""
    files = [*ROOT.glob("advisor/**/*.py"), *ROOT.glob("app*.py"), *ROOT.glob("ui/pages/*.py")]
    assert len(files) > 30
    found = []
    for f in files:
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                if {"pickle", "marshal", "shelve", "dill", "cloudpickle"} & set(names):
                    found.append(f"{f.name}:{node.lineno} imports {names}")
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            if isinstance(fn, ast.Name) and fn.id in _DANGEROUS_NAMES:
                found.append(f"{f.name}:{node.lineno} {fn.id}()")
            if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name):
                if (fn.value.id, fn.attr) in _DANGEROUS_ATTRS:
                    found.append(f"{f.name}:{node.lineno} {fn.value.id}.{fn.attr}()")
                if fn.attr in ("run", "Popen", "call") and any(
                    k.arg == "shell" and getattr(k.value, "value", False) for k in node.keywords
                ):
                    found.append(f"{f.name}:{node.lineno} shell=True")
    assert found == []
