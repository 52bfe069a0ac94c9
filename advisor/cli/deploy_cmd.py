"""``advisor deploy``: launch commands, Compose and Kubernetes files (advisor.deploy.bundle).

Takes ``--scenario FILE.json`` or the same flags as ``recommend`` (its parser is reused), and
deploys ``--deployment SPEC`` or else the recommendation. ``--engine`` picks the engine the files
are for (vllm, sglang, trtllm); with the recommend flags it is also the engine profile the search
uses, so the memory budget and the flags describe the same engine. ``--out DIR`` makes an
existing folder (empty, or holding an earlier bundle) hold exactly the bundle, swapped in as a
whole; the chosen ``--format`` is printed either way.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from advisor.catalog.files import FileWriteError, replace_folder, replaceable_entries
from advisor.catalog.quoting import inert
from advisor.cli import CliInputError, choice_of, int_in, recommend_cmd, shown
from advisor.scenario import DEFAULT_ENGINE

TARGETS = ("vllm", "sglang", "trtllm")


class _Renamed:
    """Lets recommend_cmd.add_parser build its flags on a parser named 'deploy'."""

    def __init__(self, sub: argparse._SubParsersAction) -> None:
        self._sub = sub

    def add_parser(self, _name: str, **kwargs) -> argparse.ArgumentParser:
        kwargs["help"] = "launch commands, Compose and Kubernetes files for a deployment"
        return self._sub.add_parser("deploy", **kwargs)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from advisor.deploy.bundle import FORMATS

    p = recommend_cmd.add_parser(_Renamed(sub))
    for action in p._actions:  # --engine: the target engine here (no "generic" server exists)
        if action.dest == "engine":
            action.type = choice_of(list(TARGETS), "engine")
            action.default = None
            action.help = "engine to deploy on: vllm, sglang or trtllm (default: the scenario's "
            action.help += "engine if it is one of them, else vllm)"
    p.add_argument("--format", type=choice_of(list(FORMATS), "format"), default="command",
                   help="what to print: command (launch.sh), compose or k8s")  # fmt: skip
    p.add_argument("--engine-version", default=None,
                   help="engine release the flags and image are for (default: the newest listed "
                        "with an image for the GPU; vllm 0.34.0/0.11.0, sglang 0.5.23/0.5.18/"
                        "0.5.5, trtllm 1.1.0)")  # fmt: skip
    p.add_argument("--max-context", type=int_in(1, 16_777_216), default=None,
                   help="longest request (prompt + output tokens) the servers accept (default: "
                        "the workload's lengths at their 99.9th percentile, ISL + OSL when fixed)")  # fmt: skip
    p.add_argument(
        "--out",
        default=None,
        help="existing folder, empty or holding an earlier bundle, "
        "that the bundle replaces as a whole",
    )
    return p


def _version(engine: str, value: str | None) -> str | None:
    from advisor.deploy.tables import releases

    if value is None:
        return None
    allowed = list(releases()[engine].releases)
    if value.strip() not in allowed:
        raise CliInputError(f"--engine-version {shown(value)}: {engine} releases listed are "
                            f"{', '.join(allowed)}")  # fmt: skip
    return value.strip()


def _out_dir(value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value)
    try:
        ok = path.is_dir()
    except OSError:
        ok = False
    if not value.strip() or not ok:
        raise CliInputError(f"--out {shown(value)}: not an existing folder (e.g. --out deploy/)")
    try:  # before the search: a folder the bundle cannot replace is refused first
        replaceable_entries(path, _earlier_bundle_file)
    except FileWriteError as exc:
        raise CliInputError(f"--out {shown(value)}: {exc}") from None
    return path


def _earlier_bundle_file(name: str) -> bool:
    """A name a deploy bundle writes (any engine), so an earlier bundle may be replaced."""
    return name in ("launch.sh", "README.md", "docker-compose.yaml", "kubernetes.yaml",
                    "disagg-config.yaml", "vllm-pd-proxy.py", "quantize.py") or name.endswith("-options.yaml")  # fmt: skip


def _write_bundle(out: Path, files: dict[str, str]) -> list[str]:
    """The bundle replaces the folder's content as a whole (catalog.files.replace_folder): a
    failed write (a full disk) keeps the earlier bundle, never a mix of old and new files."""
    data = {name: text.encode("utf-8") for name, text in files.items()}
    try:
        replace_folder(out, data, lambda name: name in data or _earlier_bundle_file(name))
    except FileWriteError as exc:
        raise CliInputError(f"--out {shown(str(out))}: {exc}") from None
    return [str(out / name) for name in files]


def run(args: argparse.Namespace) -> dict:
    from advisor.deploy.bundle import deploy_bundle

    out = _out_dir(args.out)
    target = args.engine
    # without --engine, the search `recommend` runs on the same flags (its default engine): a
    # "generic" profile here found 2 x (TP=2, EP=2, attention DP=2) for Qwen3-235B at 400 users
    # on B200 where `recommend` and the app's Deploy page find 3, and wrote vLLM files for it
    args.engine = target or DEFAULT_ENGINE
    scenario = recommend_cmd.scenario_from_args(args)
    if target is None:
        engine = scenario.options.engine
        target = engine if engine in TARGETS else "vllm"
    version = _version(target, args.engine_version)
    spec = args.deployment
    if spec is None:
        from advisor.search.recommend import recommend

        best = recommend(scenario).best
        if best is None or best.spec is None:
            return {"engine": target, "deployment": None, "format": args.format, "files": [],
                    "reasons": ["no deployment meets the SLA: nothing to deploy (give "
                                "--deployment SPEC to deploy one anyway)"], "text": ""}  # fmt: skip
        spec = best.spec
    b = deploy_bundle(scenario, spec, target, version, args.max_context)
    if b.problems:  # a flag outside the engine's list is a bug here, never written
        raise RuntimeError("; ".join(b.problems))
    name = {"compose": "docker-compose.yaml", "k8s": "kubernetes.yaml"}.get(args.format)
    if name in b.refused:  # past the size bound, or a launch the format cannot start
        raise CliInputError(f"--format {args.format}: no {name}: {b.refused[name]}")
    written = []
    if out is not None and b.files:
        written = _write_bundle(out, b.files)
    return {"engine": target, "version": b.launch.version if b.launch else version,
            "deployment": str(spec), "format": args.format,
            "files": written, "reasons": b.reasons, "text": b.text(args.format)}  # fmt: skip


def render(r: dict) -> str:
    lines = [r["text"]] if r["text"] else []
    if not r["text"]:
        lines += [f"cannot generate: {why}" for why in r["reasons"]]
    if r["files"]:
        lines.append(f"wrote {len(r['files'])} files: {', '.join(map(inert, r['files']))}")
    return "\n".join(lines)
