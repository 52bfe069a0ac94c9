"""App fuzzing: drive every page of the Streamlit app through random widget combinations.

Each *combination* opens a page (round robin over app.py's PAGES), sets one to four widgets
found on it (sidebar and page) to random values, sometimes clicks a button or uploads a file,
runs the script once, and checks what was rendered:

- no exception element (``at.exception``) and no "Traceback" in any text on the page;
- no "unexpected error" message (``ui.state.guarded`` catches anything and shows it as
  ``unexpected error (TypeName)``: a hidden exception, counted as a finding as well);
- the run finishes within the AppTest timeout.

Values: every option of every select-like widget is preferred until it has been picked once
(coverage is reported), number inputs and sliders get their ends (min, max) half the time, a
random in-range value otherwise (log-uniform on wide ranges), ``None`` where the widget allows
it; text inputs get hostile strings (HTML, markdown, 200 characters, control characters).

Also ``fuzz_url``: random malformed query parameters (ui.url.URL_KEYS, unknown keys, garbage)
must give a warning, never an exception.

Library use (tests/test_fuzz_app.py) and a longer run here:
    .venv/bin/python bench/fuzz_app.py --combos 2000 --seed 1 [--url 500]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HOSTILE_TEXT = [
    "",
    "   ",
    "baseline",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "**bold** _it_ :red[red] $x^2$ [link](javascript:alert(1))",
    "A" * 200,
    "名前 – Ünïcødé ✓ 🚀",
    "tab\there",
    "'; DROP TABLE scenario; --",
    "../../etc/passwd",
]
#: Widgets the fuzzer leaves alone (none so far; keys of download buttons are skipped by type).
SKIP_KEYS: set[str] = set()


def pages() -> list[str]:
    """The page files listed in ui.nav.PAGES."""
    from ui.nav import PAGES

    return [path for path, *_ in PAGES]


def _raw_candidates() -> list[Any]:
    """Raw option values the app's select widgets may use (their labels come from format_func)."""
    from advisor.catalog import KV_DTYPES, WEIGHT_DTYPES, accelerators, interconnects, models

    out: list[Any] = [*models(), *accelerators(), *interconnects(), *WEIGHT_DTYPES, *KV_DTYPES]
    out += ["own", "generic", "trtllm", "vllm", "sglang", "purchase", "hourly"]
    out += list(range(0, 257))
    return out


@dataclass
class Finding:
    page: str
    combo: int
    kind: str  # exception | traceback | unexpected-error | timeout | harness
    message: str
    actions: list[str]


@dataclass
class Report:
    seed: int
    combos: int = 0
    runs: int = 0
    per_page: Counter = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    run_s: list[tuple[float, str, list[str]]] = field(default_factory=list)
    option_seen: dict[str, set] = field(default_factory=lambda: defaultdict(set))
    option_all: dict[str, set] = field(default_factory=lambda: defaultdict(set))
    extremes: Counter = field(default_factory=Counter)

    def uncovered(self) -> dict[str, set]:
        """Select-like widgets whose options were not all picked: widget -> missing labels."""
        return {
            k: self.option_all[k] - self.option_seen[k]
            for k in self.option_all
            if self.option_all[k] - self.option_seen[k]
        }

    def summary(self) -> str:
        times = sorted(t for t, _, _ in self.run_s) or [0.0]
        q = lambda p: times[min(len(times) - 1, int(p * len(times)))]  # noqa: E731
        kinds = Counter(f.kind for f in self.findings)
        n_opts = sum(len(v) for v in self.option_all.values())
        n_seen = sum(len(self.option_seen[k] & v) for k, v in self.option_all.items())
        return (
            f"seed {self.seed}: {self.combos} combinations, {self.runs} script runs, "
            f"pages {dict(self.per_page)}; findings {dict(kinds) or 0}; "
            f"select options covered {n_seen}/{n_opts} in {len(self.option_all)} widgets; "
            f"extreme values set {sum(self.extremes.values())}; run time p50 {q(0.5):.2f} s, "
            f"p95 {q(0.95):.2f} s, max {times[-1]:.2f} s"
        )


class Fuzzer:
    """One seeded fuzzing session over a fresh AppTest (replaced after a finding)."""

    def __init__(
        self,
        seed: int,
        *,
        max_total_gpus: int | None = 1024,
        max_gpu_types: int | None = None,
        timeout_s: float = 120.0,
        fresh_every: int = 40,
        per_visit: int = 3,
        verbose: bool = False,
    ) -> None:
        self.rng = random.Random(seed)
        self.report = Report(seed)
        self.max_total_gpus = max_total_gpus
        self.timeout_s = timeout_s
        self.fresh_every = fresh_every
        self.per_visit = per_visit
        self.max_gpu_types = max_gpu_types
        self.verbose = verbose
        self.pages = pages()
        self.cands = _raw_candidates()
        self.uploads = _upload_files()
        self.at: Any = None
        self._page = ""

    # -- AppTest plumbing -------------------------------------------------------------------
    def _fresh(self) -> None:
        from streamlit.testing.v1 import AppTest

        self.at = AppTest.from_file(APP, default_timeout=self.timeout_s)
        self._run(self.at, "open", [])

    def _run(self, node: Any, page: str, actions: list[str]) -> bool:
        t0 = time.perf_counter()
        try:
            node.run()
        except Exception as exc:  # noqa: BLE001 - a timeout or an AppTest failure is a finding
            kind = "timeout" if "timed out" in str(exc).lower() else "harness"
            self._finding(page, kind, f"{type(exc).__name__}: {exc}", actions)
            self.at = None
            return False
        dt = time.perf_counter() - t0
        self.report.runs += 1
        self.report.run_s.append((dt, page, list(actions)))
        return self._check(page, actions)

    def _finding(self, page: str, kind: str, message: str, actions: list[str]) -> None:
        f = Finding(page, self.report.combos, kind, message[:2000], list(actions))
        self.report.findings.append(f)
        if self.verbose:
            print(f"FINDING [{kind}] {page} after {actions}:\n  {message[:600]}", flush=True)

    def _check(self, page: str, actions: list[str]) -> bool:
        at = self.at
        ok = True
        for e in at.exception:
            self._finding(page, "exception", f"{e.message}\n{''.join(e.stack_trace)}", actions)
            ok = False
        texts = []
        for kind in ("markdown", "caption", "error", "warning", "info", "success", "text", "code"):
            texts += [str(getattr(x, "value", "")) for x in getattr(at, kind)]
        for t in texts:
            if "Traceback" in t:
                self._finding(page, "traceback", t, actions)
                ok = False
        for e in at.error:
            if "unexpected error" in str(e.value):
                self._finding(page, "unexpected-error", str(e.value), actions)
                ok = False
            if "errors.pydantic.dev" in str(e.value) or "validation error for" in str(e.value):
                self._finding(page, "pydantic-dump", str(e.value), actions)  # not a message
                ok = False
        if not ok:
            self.at = None
        return ok

    # -- value generation -------------------------------------------------------------------
    def _raw(self, w: Any, label: str) -> Any:
        """The raw option value whose format_func label is ``label`` (label itself if none)."""
        try:
            fmt = w.format_func
        except Exception:  # noqa: BLE001
            return label
        for c in self.cands:
            try:
                if str(fmt(c)) == label:
                    return c
            except Exception:  # noqa: BLE001 - format_func of another widget's domain
                continue
        return label

    def _pick_label(self, wid: str, options: list[str]) -> str:
        seen = self.report.option_seen[wid]
        self.report.option_all[wid].update(map(option_kind, options))
        fresh = [o for o in options if option_kind(o) not in seen]
        label = self.rng.choice(fresh) if fresh else self.rng.choice(options)
        seen.add(option_kind(label))
        return label

    def _number(self, w: Any) -> Any:
        p = w.proto
        is_int = p.data_type == type(p).INT
        lo = p.min if p.has_min else -1e6
        hi = p.max if p.has_max else 1e6
        allows_none = not p.HasField("default")
        r = self.rng.random()
        if allows_none and r < 0.15:
            return None
        if r < 0.55:
            self.report.extremes[w.key] += 1
            v = self.rng.choice([lo, hi])
        elif hi / max(lo, 1e-9) > 1000 and lo >= 0:
            v = math.exp(self.rng.uniform(math.log(max(lo, 1e-3)), math.log(hi)))
        else:
            v = self.rng.uniform(lo, hi)
        if is_int:
            return int(min(max(round(v), lo), hi))
        return float(min(max(v, lo), hi))

    def _slider(self, w: Any) -> Any:
        p = w.proto
        lo, hi, step = p.min, p.max, p.step or 1
        r = self.rng.random()
        if r < 0.5:
            self.report.extremes[w.key] += 1
            v = self.rng.choice([lo, hi])
        else:
            v = lo + step * self.rng.randint(0, int(round((hi - lo) / step)))
        v = min(max(v, lo), hi)
        return int(v) if p.data_type == type(p).INT else round(float(v), 10)

    # -- one combination --------------------------------------------------------------------
    def _widgets(self) -> list[Any]:
        at = self.at
        found = []
        for kind in (
            "selectbox", "multiselect", "number_input", "slider", "radio", "text_input",
            "checkbox", "toggle", "segmented_control", "pills", "button", "file_uploader",
        ):  # fmt: skip
            try:
                items = list(getattr(at, kind))
            except Exception:  # noqa: BLE001
                continue
            for w in items:
                if getattr(w, "disabled", False) or (w.key or "") in SKIP_KEYS:
                    continue
                found.append(w)
        return found

    def _act(self, w: Any) -> str:
        """Set one widget (or click it); returns a description of the action."""
        t, key = w.type, w.key or w.label
        rng = self.rng
        if t == "selectbox":
            label = self._pick_label(f"select:{key}", list(w.options))
            w.set_value(self._raw(w, label))
            return f"{key}={label!r}"
        if t == "radio":
            label = self._pick_label(f"radio:{key}", list(w.options))
            w.set_value(self._raw(w, label))
            return f"{key}={label!r}"
        if t == "button_group":
            opts = list(w.options)
            label = self._pick_label(f"group:{key}", opts)
            raw = self._raw(w, label)
            if w._is_single_select:
                w.set_value(raw)
            else:
                w.set_value([raw])
            return f"{key}={label!r}"
        if t == "multiselect":
            opts = list(w.options)
            wid = f"multi:{key}"
            first = self._pick_label(wid, opts)
            cap = w.max_selections or len(opts)
            n = rng.choice([0, 1, 1, 2, 3, len(opts)])
            chosen = [] if n == 0 else [first] + rng.sample(opts, min(n, len(opts)))
            if key == "w.g" and self.max_gpu_types:
                cap = min(cap, self.max_gpu_types)
            chosen = list(dict.fromkeys(chosen))[:cap]
            self.report.option_seen[wid].update(chosen)
            w.set_value([self._raw(w, c) for c in chosen])
            return f"{key}={chosen!r}"
        if t == "number_input":
            v = self._number(w)
            w.set_value(v)
            return f"{key}={v!r}"
        if t == "slider":
            v = self._slider(w)
            w.set_value(v)
            return f"{key}={v!r}"
        if t == "text_input":
            limit = w.proto.max_chars or 10_000
            v = rng.choice(HOSTILE_TEXT)[:limit]
            w.input(v)
            return f"{key}={v[:30]!r}"
        if t in ("checkbox", "toggle"):
            v = rng.random() < 0.5
            w.set_value(v)
            return f"{key}={v}"
        if t == "button":
            w.click()
            return f"click {key}"
        if t == "file_uploader":
            if rng.random() < 0.3:
                w.set_value(None)
                return f"{key}=<none>"
            # only names the widget's type filter lets through (".json" for the sidebar's
            # config/scenario upload); Streamlit refuses the others before the app sees them
            allowed = tuple(str(t).lower() for t in w.proto.type)
            pool = [u for u in self.uploads if not allowed or u[0].lower().endswith(allowed)]
            name, data = rng.choice(pool or self.uploads)
            w.set_value((name, data, "application/json"))
            return f"{key}=<{name}>"
        raise AssertionError(t)

    def _clamp_hardware(self, actions: list[str]) -> None:
        """Keep nodes × GPUs per node within max_total_gpus (the search's cost grows with it)."""
        if self.max_total_gpus is None:
            return
        try:
            gpn, nodes = self.at.number_input(key="w.gpn"), self.at.number_input(key="w.n")
        except (KeyError, IndexError):
            return
        if (gpn.value or 1) * (nodes.value or 1) > self.max_total_gpus:
            v = max(1, self.max_total_gpus // (gpn.value or 1))
            nodes.set_value(v)
            actions.append(f"w.n={v} (clamped)")

    def _uncovered(self, w: Any) -> bool:
        prefix = {"selectbox": "select", "radio": "radio", "button_group": "group",
                  "multiselect": "multi"}.get(w.type)  # fmt: skip
        if prefix is None:
            return False
        wid = f"{prefix}:{w.key or w.label}"
        return bool(set(map(option_kind, w.options)) - self.report.option_seen[wid])

    def combo(self, i: int) -> None:
        """Combination i: a page (``per_visit`` combinations in a row on each), 1-4 widgets set."""
        fresh = self.at is None or (self.fresh_every and i % self.fresh_every == 0)
        if fresh:
            self._fresh()
            if self.at is None:
                return
        page = self.pages[(i // self.per_visit) % len(self.pages)]
        self.report.combos += 1
        self.report.per_page[page] += 1
        actions = [f"page {page}"]
        if fresh or i % self.per_visit == 0 or self._page != page:
            self.at.switch_page(page)
            if not self._run(self.at, page, actions):
                return
            self._page = page
        widgets = self._widgets()
        if not widgets:
            return
        # Buttons and uploads are rarer than value changes (one per combination at most).
        values = [w for w in widgets if w.type not in ("button", "file_uploader")]
        others = [w for w in widgets if w.type in ("button", "file_uploader")]
        n = self.rng.choice([1, 1, 2, 3, 4])
        chosen = self.rng.sample(values, min(n, len(values)))
        todo = [w for w in values if self._uncovered(w) and w not in chosen]
        if todo and self.rng.random() < 0.5:  # steer towards options not picked yet
            chosen[0] = self.rng.choice(todo)
        if others and self.rng.random() < 0.25:
            chosen.append(self.rng.choice(others))
        for w in chosen:
            try:
                actions.append(self._act(w))
            except Exception as exc:  # noqa: BLE001 - setting a value the widget refuses
                self._finding(page, "harness", f"setting {w.key}: {exc!r}", actions)
                self.at = None
                return
        self._clamp_hardware(actions)
        self._run(self.at, page, actions)


def _upload_files() -> list[tuple[str, bytes]]:
    """config.json / scenario JSON uploads: valid fixtures, broken, hostile names."""
    from advisor.scenario import Scenario, dump_scenario

    files = [(p.name, p.read_bytes()) for p in sorted((ROOT / "tests/fixtures/hf").glob("*.json"))][
        :3
    ]
    files += [
        ("broken.json", b'{"hidden_size": 4096, '),
        ("not-json.json", b"\x89PNG\r\n\x1a\n\x00\x00"),
        ("empty.json", b""),
        ("list.json", b"[1, 2, 3]"),
        ("scenario.json", dump_scenario(Scenario()).encode()),
        (
            "hostile-scenario.json",
            dump_scenario(Scenario(name="<img src=x onerror=alert(1)>")).encode(),
        ),
    ]
    # issue 36: YAML aliases and nesting bombs, huge integers, escape sequences and newlines in
    # names, an edited profile, impossible benchmark files (shared with the CLI fuzzer)
    from tests.cli_fuzz import hostile_client_files, hostile_profiles, hostile_scenarios

    files += [(n, t.encode()) for n, t in {**hostile_profiles(), **hostile_scenarios()}.items()]
    files += list(hostile_client_files().items())
    return files


def option_kind(label: str) -> str:
    """An option for coverage: "GPU's own (NVLink 3 ...)" names the first GPU's link, so its text
    changes with another widget; it is one option ("each GPU's own link") whatever the GPU."""
    return label.split(" (", 1)[0] if label.startswith("GPU's own") else label


def fuzz(
    seed: int,
    combos: int,
    *,
    max_total_gpus: int | None = 1024,
    max_gpu_types: int | None = None,
    timeout_s: float = 120.0,
    verbose: bool = False,
    deadline_s: float | None = None,
) -> Report:
    """Run ``combos`` combinations (stops early at ``deadline_s`` seconds); the Report."""
    data = tempfile.mkdtemp(prefix="ia-fuzz-")
    old = os.environ.get("INFERENCE_ARCHITECT_DATA_DIR")
    os.environ["INFERENCE_ARCHITECT_DATA_DIR"] = data
    try:
        fz = Fuzzer(
            seed, max_total_gpus=max_total_gpus, max_gpu_types=max_gpu_types,
            timeout_s=timeout_s, verbose=verbose,
        )  # fmt: skip
        t0 = time.perf_counter()
        for i in range(combos):
            if deadline_s is not None and time.perf_counter() - t0 > deadline_s:
                break
            fz.combo(i)
        return fz.report
    finally:
        if old is None:
            os.environ.pop("INFERENCE_ARCHITECT_DATA_DIR", None)
        else:
            os.environ["INFERENCE_ARCHITECT_DATA_DIR"] = old


# -- URL fuzzing ----------------------------------------------------------------------------
GARBAGE = [
    "", " ", "-1", "0", "1e309", "-1e309", "nan", "NaN", "inf", "-inf", "1e30", "99999999999999999999",
    "3.5", "0x10", "none", "None", "null", "true", "[]", "{}", ",", ",,,", "a,b,c", "🚀",
    "<script>alert(1)</script>", "%00", "\x00", "\n", "1" * 400, "٣", "1_000", "+5", " 7 ",
    "h100-sxm,h100-sxm", "llama-3.1-70b", "fp8", "own",
]  # fmt: skip


#: Values each valid alone that cannot go together (issue 36): an NVLink on an AMD GPU, a link
#: of the wrong scope, a max_model_len below the sequence, a model whose weights exceed the
#: GPU in focus, more clients than any KV cache holds, a name of invisible characters.
CROSS_FIELD = [
    {"g": "mi300x", "il": "nvlink5"}, {"g": "h100-sxm", "il": "xgmi"}, {"il": "ib-ndr"},
    {"xl": "nvlink4"}, {"ml": "16", "in": "4096"}, {"ml": "1"},
    {"m": "llama-3.1-405b", "dep": "h100-sxm.tp1.pp1.dp1.fp16.fp16"},
    {"c": "100000", "dep": "h100-sxm.tp1.pp1.dp8.fp8.fp8"},
    {"c": "3", "dep": "h100-sxm.tp1.pp1.dp8.fp8.fp8"},
    {"users": "1000000", "g": "l40s"}, {"name": "\u200b"}, {"name": "\u202etxt.exe"},
]  # fmt: skip


def url_params(rng: random.Random) -> dict[str, str]:
    """A random malformed query string: known keys with garbage or edge values, unknown keys,
    and sometimes a cross-field impossibility (``CROSS_FIELD``)."""
    from ui.url import DEP_KEY, URL_KEYS

    keys = [*URL_KEYS.values(), DEP_KEY]  # dep: the deployment in focus
    out: dict[str, str] = {}
    if rng.random() < 0.3:
        out.update(rng.choice(CROSS_FIELD))
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        key = rng.choice(keys) if r < 0.85 else rng.choice(["x", "M", "g[]", "", "utm_source"])
        value = rng.choice(GARBAGE)
        if rng.random() < 0.2:
            value = "".join(chr(rng.randint(1, 0x2FFF)) for _ in range(rng.randint(1, 12)))
        out[key] = value
    return out


def fuzz_url(seed: int, n: int, *, timeout_s: float = 120.0) -> tuple[int, list[Finding]]:
    """``n`` fresh sessions with random malformed links; findings (exception, no warning)."""
    from streamlit.testing.v1 import AppTest

    from ui.url import dep_from_params, scenario_from_params

    rng = random.Random(seed)
    findings: list[Finding] = []
    all_pages = pages()
    data = tempfile.mkdtemp(prefix="ia-fuzz-url-")
    os.environ.setdefault("INFERENCE_ARCHITECT_DATA_DIR", data)
    for i in range(n):
        params = url_params(rng)
        at = AppTest.from_file(APP, default_timeout=timeout_s)
        for k, v in params.items():
            at.query_params[k] = v
        page = rng.choice(all_pages)
        actions = [f"url {params!r}", f"page {page}"]
        try:
            at.run()
            at.switch_page(page).run()
        except Exception as exc:  # noqa: BLE001
            findings.append(Finding(page, i, "harness", repr(exc), actions))
            continue
        for e in at.exception:
            findings.append(Finding(page, i, "exception", e.message, actions))
        for e in at.error:
            if "unexpected error" in str(e.value):
                findings.append(Finding(page, i, "unexpected-error", str(e.value), actions))
        _, _, expected = scenario_from_params(params)
        dep_warning = dep_from_params(params)[1]
        expected = [*expected, *([dep_warning] if dep_warning else [])]
        warned = any("link were ignored" in str(w.value) for w in at.warning)
        if expected and not warned:
            findings.append(Finding(page, i, "no-warning", "; ".join(expected), actions))
    return n, findings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--combos", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--url", type=int, default=200, help="malformed-link sessions")
    ap.add_argument(
        "--max-total-gpus", type=int, default=0,
        help="clamp nodes × GPUs per node (0 = no clamp: 72 × 1024 GPUs makes the search slow)",
    )  # fmt: skip
    args = ap.parse_args()
    t0 = time.perf_counter()
    rep = fuzz(args.seed, args.combos, max_total_gpus=args.max_total_gpus or None, verbose=True)
    print(rep.summary())
    print(f"widget fuzz: {time.perf_counter() - t0:.0f} s")
    for wid, missing in sorted(rep.uncovered().items()):
        print(f"  not all options picked: {wid}: {sorted(missing)[:8]}")
    slow = sorted(rep.run_s, key=lambda r: -r[0])[:5]
    for dt, page, actions in slow:
        print(f"  slow run {dt:.1f} s on {page}: {actions}")
    t1 = time.perf_counter()
    n, url_findings = fuzz_url(args.seed, args.url)
    print(f"url fuzz: {n} sessions, {len(url_findings)} findings, {time.perf_counter() - t1:.0f} s")
    for f in rep.findings + url_findings:
        print(f"  [{f.kind}] {f.page}: {f.message[:300]}\n    after {f.actions}")
    return 1 if rep.findings or url_findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
