"""The engines' own argument parsers read every server command `deploy` writes (issue 34).

vLLM and SGLang are installed, pinned, in venvs of their own (``make setup-engines``:
.venv-engines/<engine>-<version>, from requirements-engines/<engine>-<version>.txt): the
engine without its dependencies, torch 2.13.0 (the CPU build), and only the packages the
import of its argument parser needs. tests/engine_parse.py runs in that venv and parses each
command with the parser the server itself builds (vLLM ``make_arg_parser`` as ``vllm serve``
does, then ``validate_parsed_serve_args`` and ``AsyncEngineArgs.from_cli_args``; SGLang
``ServerArgs.add_cli_args`` as ``prepare_server_args`` does; its PD router, sglang-router
0.3.2, installed beside it: ``RouterArgs``). Nothing is stubbed. What is not
run: the steps after parsing that read the GPU or the model's config.json from the Hub
(vLLM ``create_engine_config``, SGLang ``ServerArgs.__post_init__``).

The commands are read from the files handed over, as the container would run them: every
Compose service's entrypoint + command and every Kubernetes container's command + args
(``bash -c`` scripts, the Ray head's included, are split as the shell would), plus launch.sh's
per-server lines (wiring.node_argv, bare). An unknown flag, a value outside a flag's choices or
of the wrong type, a check after parsing that refuses it, or a deprecation warning fails.
Under CI=true a missing engine venv fails; elsewhere the tests skip, saying how to install it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from functools import cache
from pathlib import Path

import pytest
import yaml

from advisor.deploy.bundle import deploy_bundle
from advisor.deploy.layout import place
from advisor.deploy.wiring import node_argv
from advisor.scenario import Hardware, Options, Scenario
from advisor.search.deployment_spec import parse_spec

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "engine_parse.py"
#: The engine releases whose real parsers CI runs: the defaults (data/engine-images.yaml). Not
#: yet the older releases (vLLM 0.11.0, SGLang 0.5.18/0.5.5): each needs its own venv, and
#: SGLang's AMD cases (0.5.18, the newest with a ROCm image) are checked against the flag list
#: only (tests/test_deploy.py).
PARSERS = [("vllm", "0.34.0"), ("sglang", "0.5.23")]


def _hw(gpu: str, nodes: int = 1) -> Hardware:
    return Hardware(gpus=[gpu], nodes=nodes)


_MTP = Options(speculative=True, draft_model="mtp", spec_tokens=1)
#: Every case of issue 34 (multi-node, disaggregated, quantize-first, MoE layouts, speculative
#: drafts, AMD), plus the plain forms.
TABLE = [
    ("405b-tp8pp2-2nodes", Scenario(model="llama-3.1-405b", hardware=_hw("h100-sxm", 2)),
     "h100-sxm.tp8.pp2.dp1.fp8.fp8"),
    ("r1-tp8pp2-2nodes", Scenario(model="deepseek-r1", hardware=_hw("h100-sxm", 2)),
     "h100-sxm.tp8.pp2.dp1.fp8.fp8"),
    ("70b-tp16-2nodes", Scenario(hardware=_hw("h100-sxm", 2)), "h100-sxm.tp16.pp1.dp1.fp8.fp8"),
    ("disaggregated", Scenario(), "h100-sxm.tp4.pp1.dp1.ptp2.pdp2.fp8.fp8"),
    ("int4-70b", Scenario(), "h100-sxm.tp2.pp1.dp1.int4.fp8"),
    ("int4-quantize-first", Scenario(model="gemma-2-27b", hardware=_hw("l40s")),
     "l40s.tp1.pp1.dp1.int4.fp8"),
    ("fp8-dp2", Scenario(), "h100-sxm.tp4.pp1.dp2.fp8.fp8"),
    ("fp16-pp2", Scenario(), "h100-sxm.tp2.pp2.dp1.fp16.fp16"),
    ("moe-ep", Scenario(model="deepseek-r1", hardware=_hw("h200-sxm")),
     "h200-sxm.tp8.pp1.dp1.ep8.fp8.fp8"),
    ("moe-attention-dp", Scenario(model="deepseek-r1", hardware=_hw("h200-sxm")),
     "h200-sxm.tp8.pp1.dp1.dpa8.fp8.fp8"),
    ("moe-ep-attention-dp", Scenario(model="deepseek-r1", hardware=_hw("h200-sxm")),
     "h200-sxm.tp8.pp1.dp1.ep8.dpa8.fp8.fp8"),
    ("mtp", Scenario(model="deepseek-r1", hardware=_hw("h200-sxm"), options=_MTP),
     "h200-sxm.tp8.pp1.dp1.fp8.fp8.spec"),
    ("draft-model", Scenario(options=Options(speculative=True)),
     "h100-sxm.tp4.pp1.dp1.fp8.fp8.spec"),
    ("mi300x-dp3", Scenario(hardware=_hw("mi300x")), "mi300x.tp2.pp1.dp3.fp8.fp8"),
    ("mi300x-disaggregated", Scenario(hardware=_hw("mi300x")),
     "mi300x.tp2.pp1.dp1.ptp2.pdp1.fp8.fp8"),
]  # fmt: skip


def _venv(engine: str, version: str) -> Path:
    return ROOT / ".venv-engines" / f"{engine}-{version}" / "bin" / "python"


def _require(engine: str, version: str) -> Path:
    py = _venv(engine, version)
    if not py.exists():
        why = (
            f"{py} missing: run `make setup-engines` (requirements-engines/{engine}-{version}.txt)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why)
        pytest.skip(why)
    return py


def parse(
    engine: str, version: str, commands: dict[str, list[str]], venv: tuple[str, str] | None = None
) -> dict[str, dict]:
    """Each command parsed by the engine release's own parser (in the venv of ``venv``, default
    the engine's own): id -> {errors, warnings}."""
    py = _require(*(venv or (engine, version)))
    req = {"engine": engine, "commands": [{"id": k, "argv": v} for k, v in commands.items()]}
    r = subprocess.run([str(py), str(DRIVER)], input=json.dumps(req), capture_output=True,
                       text=True, timeout=600, env={**os.environ, "PYTHONWARNINGS": "ignore"})  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert out["version"] == version  # the venv holds the release it is named for
    return {x["id"]: x for x in out["results"]}


def _engine_args(engine: str, argv: list[str]) -> list[str] | None:
    """What the engine's parser reads from a command line: after ``vllm serve`` (the model
    first) or ``-m sglang.launch_server``; None for other programs (ray, the routers)."""
    for i, word in enumerate(argv):
        if word == "-c" and i + 1 < len(argv) and i and argv[i - 1] == "bash":
            return _engine_args(engine, _shell_words(argv[i + 1]))
        if engine == "vllm" and word == "vllm" and argv[i + 1 : i + 2] == ["serve"]:
            return _until_shell_operator(argv[i + 2 :])
        if engine == "sglang" and word == "sglang.launch_server" and argv[i - 1] == "-m":
            return _until_shell_operator(argv[i + 1 :])
        if engine == "sglang-router" and word == "sglang_router.launch_router":
            return _until_shell_operator(argv[i + 1 :])
    return None


def _shell_words(script: str) -> list[str]:
    lex = shlex.shlex(script, posix=True, punctuation_chars=";&|")
    lex.whitespace_split = True
    return list(lex)


def _until_shell_operator(words: list[str]) -> list[str]:
    stop = next((i for i, w in enumerate(words) if w in ("&&", ";", "|", "||")), len(words))
    return words[:stop]


def commands(bundle, engine: str | None = None) -> dict[str, list[str]]:
    """Every command of ``engine`` (default the bundle's) in a bundle's files: name -> the
    words its parser reads."""
    engine, out = engine or bundle.engine, {}
    if "docker-compose.yaml" in bundle.files:
        for name, svc in yaml.safe_load(bundle.files["docker-compose.yaml"])["services"].items():
            argv = [*svc.get("entrypoint", []), *svc.get("command", [])]
            if svc.get("entrypoint") is None and bundle.engine == "vllm":  # the image's: vllm serve
                argv = ["vllm", "serve", *argv]
            if (words := _engine_args(engine, argv)) is not None:
                out[f"compose:{name}"] = words
    if "kubernetes.yaml" in bundle.files:
        for doc in yaml.safe_load_all(bundle.files["kubernetes.yaml"]):
            for i, (c, env) in enumerate(_containers(doc)):
                argv = [
                    _kubelet_expand(a, env) for a in [*c.get("command", []), *c.get("args", [])]
                ]
                if (words := _engine_args(engine, argv)) is not None:
                    out[f"k8s:{doc['kind']}/{doc['metadata']['name']}/{i}"] = words
    lay = place(bundle.launch, bundle.plan.gpus_per_node)
    for inst in lay.instances:
        for rank in range(len(inst.nodes)):
            argv = node_argv(bundle.launch, lay, inst, rank, bare=True)
            if (words := _engine_args(engine, argv)) is not None:
                out[f"launch.sh:{inst.name}:{rank}"] = words
    return out


def _kubelet_expand(arg: str, env: dict[str, str]) -> str:
    """``$(VAR)`` replaced as the kubelet does for a variable the container has (Kubernetes API,
    Container.args: "Variable references $(VAR_NAME) are expanded using the container's
    environment"); an unknown one stays as written, and the parser then sees it."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m[1], m[0]), arg)


def _containers(doc: dict | None):
    """(container, its environment) of every pod template of a document: the literal ``env``
    values, and in a LeaderWorkerSet the variables its controller sets in every pod (lws docs,
    "Environment variables"), here for the leader (index 0) and the first worker (index 1)."""
    if not doc:
        return
    spec = doc.get("spec", {})
    templates = [(spec.get("template"), {})]
    lwt = spec.get("leaderWorkerTemplate", {})
    lws = {"LWS_LEADER_ADDRESS": "leader.example", "LWS_GROUP_SIZE": str(lwt.get("size", 1))}
    templates += [(lwt.get("leaderTemplate"), {**lws, "LWS_WORKER_INDEX": "0"}),
                  (lwt.get("workerTemplate"), {**lws, "LWS_WORKER_INDEX": "1"})]  # fmt: skip
    for t, injected in templates:
        for c in (t or {}).get("spec", {}).get("containers", []):
            own = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
            yield c, {**injected, **own}


@cache
def _bundles(engine: str, version: str) -> dict[str, object]:
    out = {}
    for name, sc, text in TABLE:
        b = deploy_bundle(sc, parse_spec(text), engine, version)
        out[name] = b
    return out


def _applicable(engine: str, version: str) -> list[str]:
    """The table's cases this release writes files for (SGLang 0.5.23 has no ROCm image
    listed, so its AMD cases go to 0.5.18: test_every_case_has_files_on_the_default_releases)."""
    return [n for n, b in _bundles(engine, version).items() if not b.reasons]


@pytest.mark.parametrize(("engine", "version"), PARSERS, ids=[f"{e}-{v}" for e, v in PARSERS])
def test_the_real_parser_accepts_every_generated_command(engine, version):
    _require(engine, version)
    cmds = {}
    for name in _applicable(engine, version):
        for where, words in commands(_bundles(engine, version)[name]).items():
            cmds[f"{name} {where}"] = words
    assert len(cmds) >= 20, sorted(cmds)
    got = parse(engine, version, cmds)
    bad = {k: v for k, v in got.items() if v["errors"] or v["warnings"]}
    assert bad == {}, json.dumps(bad, indent=1)[:6000]
    assert set(got) == set(cmds)


@pytest.mark.parametrize(("engine", "version"), PARSERS, ids=[f"{e}-{v}" for e, v in PARSERS])
def test_the_real_parser_catches_a_wrong_flag_and_a_wrong_value(engine, version):
    """The check can fail: a misspelt flag, a value outside a flag's choices and a value of
    the wrong type are each refused by the engine's parser."""
    base = {"vllm": ["meta-llama/Llama-3.1-8B-Instruct", "--tensor-parallel-size", "2"],
            "sglang": ["--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--tp-size", "2"]}[engine]  # fmt: skip
    bad = {
        "ok": base,
        "flag": [*base, "--tensor-paralel-size" if engine == "vllm" else "--tp-sise", "2"],
        "choice": [*base, "--kv-cache-dtype", "int3"],
        "type": [*base, "--max-num-seqs" if engine == "vllm" else "--max-running-requests",
                 "many"],
    }  # fmt: skip
    got = parse(engine, version, bad)
    assert got["ok"]["errors"] == []
    for k in ("flag", "choice", "type"):
        assert got[k]["errors"], (k, got[k])
    assert "unrecognized arguments" in got["flag"]["errors"][0]
    # SGLang's parser lists the choices; vLLM 0.34's takes any string and its CacheConfig refuses
    assert "invalid choice" in got["choice"]["errors"][0] or (
        "Invalid kv_cache_dtype: 'int3'" in got["choice"]["errors"][0]
    )


def test_every_case_has_files_on_the_default_releases():
    """The table's cases all produce files on vLLM and SGLang (their default release for the
    GPU), so the parser tests above cannot pass by dropping a case."""
    for engine in ("vllm", "sglang"):
        for name, sc, text in TABLE:
            b = deploy_bundle(sc, parse_spec(text), engine)
            assert not b.reasons, (engine, name, b.reasons)
            assert commands(b), (engine, name)


#: The SGLang PD router (pip sglang-router, installed in SGLang's venv) and its release.
ROUTER = ("sglang-router", "0.3.2")


def test_the_sglang_routers_parser_accepts_its_generated_commands():
    """The router lines of the disaggregated case (Compose, Kubernetes, launch.sh): each
    prefill URL with its bootstrap port, each decode URL, as sglang-router 0.3.2 reads them."""
    b = _bundles("sglang", "0.5.23")["disaggregated"]
    cmds = commands(b, "sglang-router")
    router = next(s for s in b.launch.servers if s.role == "router")  # as launch.sh runs it
    cmds["launch.sh:router"] = _engine_args("sglang-router", router.commands[0].argv())
    assert len(cmds) == 3, sorted(cmds)  # Compose, Kubernetes, launch.sh
    cmds["misspelt"] = [*cmds["launch.sh:router"], "--prefil", "http://x:8000"]
    got = parse(*ROUTER, cmds, venv=("sglang", "0.5.23"))
    assert got.pop("misspelt")["errors"], "the router's parser must refuse --prefil"
    bad = {k: v for k, v in got.items() if v["errors"] or v["warnings"]}
    assert bad == {}, json.dumps(bad, indent=1)[:4000]
