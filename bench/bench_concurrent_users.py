"""Concurrent users: N browser sessions on one server, each changing inputs for a while.

Starts the app (`streamlit run app.py` on a free port, own data folder), waits for
/_stcore/health, opens N pages (Debian's chromium, headless, one browser process per
``--per-browser`` pages, each page in its own browser context = its own Streamlit session) and
lets each session, for ``--seconds``:

1. type its own unique input length into the sidebar (Input tokens = 3000 + 7 × session), then
2. repeatedly, after a short think time (0.3-1.5 s): change the output tokens, the arrival
   rate, the SLA percentile, the TTFT or TPOT target or the model (sidebar widgets ``w.out``,
   ``w.rate``, ``w.p``, ``w.ttft``, ``w.tpot``, ``w.m``), or switch page (Memory / Latency /
   Scenario), and time how long until the rerun has finished: the URL carries the new value
   (``sync_url`` writes it after the page ran) and the main area shows it where the page names it
   (input and output tokens, model; on Scenario also the load and the latency target).

Isolation: after every update the session checks that the page, its sidebar input and its URL
(``in``, ``out``, ``m``, ``rate``, ``p``, ``ttft``, ``tpot``) still show *its own* values;
anything else is a violation.
Errors: exception elements, "unexpected error" messages, page JavaScript errors, updates that do
not arrive within ``--timeout`` seconds, Streamlit's connection-error dialog.

Prints p50/p95/max update time (all actions and per kind), errors and isolation violations.
Not part of the test suite (the machine is shared and noisy): run it by hand.

    .venv/bin/python bench/bench_concurrent_users.py --users 20 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.app_server import running_app  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
#: Page title in the sidebar navigation -> (url path, marker of the inputs it shows).
PAGES = {
    "Memory and KV budget": ("memory", "{isl:,} in + {osl:,} out"),
    "Latency": ("latency", "{isl:,} input + {osl:,} output tokens"),
    "Scenario": ("scenario", "{isl:,} input + {osl:,} output tokens per request"),
}
SHOWN_ISL = re.compile(r"(\d[\d,]*) in(?:put)? \+ ")
SCENARIO = "Scenario"  # the one page that names the load and the latency target
#: Catalog model id -> how the pages name it (small and large, dense and MoE).
MODELS = {
    "llama-3.1-70b": "Llama 3.1 70B",
    "llama-3.1-8b": "Llama 3.1 8B",
    "qwen3-32b": "Qwen3 32B",
    "mistral-7b": "Mistral 7B v0.1",
}
SIDEBAR = '[data-testid="stSidebar"]'
STATE = ("osl", "rate", "pct", "ttft", "tpot", "model", "current")  # what an action changes

#: True once the rerun for a change is done: the URL has the value and the main area the text.
DONE_JS = """([text, key, val]) => {
  const main = document.querySelector('[data-testid="stMain"]')?.innerText ?? '';
  const got = new URL(location.href).searchParams.get(key);
  return (!text || main.includes(text)) && got === val;
}"""

BODY_HAS = "(s) => document.body?.innerText?.includes(s) ?? false"
PROBLEMS_JS = """() => {
  const ex = document.querySelectorAll('[data-testid="stException"]').length;
  const txt = document.body?.innerText ?? '';
  const i = txt.indexOf('unexpected error');
  return {exceptions: ex, unexpected: i >= 0 ? txt.slice(Math.max(0, i - 60), i + 240) : '',
          traceback: txt.includes('Traceback'), connection: txt.includes('Connection error')};
}"""


@dataclass
class Stats:
    updates: list[tuple[str, float]] = field(default_factory=list)  # (kind, seconds)
    errors: Counter = field(default_factory=Counter)
    error_examples: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    actions: int = 0
    open_s: list[float] = field(default_factory=list)
    server: list[float] = field(default_factory=list)
    sessions_ok: int = 0

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        if len(self.error_examples) < 15:
            self.error_examples.append(f"{kind}: {detail[:300]}")


class Session:
    def __init__(self, idx: int, page, base: str, stats: Stats, seed: int, timeout_s: float):
        self.idx, self.page, self.base, self.stats = idx, page, base, stats
        self.rng = random.Random(seed * 1000 + idx)
        self.isl = 3000 + 7 * idx  # unique per session
        self.osl = 256
        # The Scenario defaults (advisor/scenario.py); every session starts from them.
        self.model, self.rate, self.pct, self.ttft, self.tpot = (
            "llama-3.1-70b",
            2.0,
            99,
            2000.0,
            50.0,
        )
        self.current = "Memory and KV budget"
        self.pretend_isl: int | None = None
        self._before: dict = {}
        self.timeout_ms = timeout_s * 1000
        page.on("pageerror", lambda exc: stats.error("pageerror", f"session {idx}: {exc}"))
        self.finished: list[float] = []  # when the server's "script finished" messages arrived
        page.on("websocket", self._on_websocket)

    def _on_websocket(self, ws) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        def frame(payload) -> None:
            if isinstance(payload, str):
                return
            msg = ForwardMsg()
            try:
                msg.ParseFromString(payload)
            except Exception:  # noqa: BLE001 - not a ForwardMsg
                return
            if msg.WhichOneof("type") == "script_finished":
                self.finished.append(time.perf_counter())

        ws.on("framereceived", frame)

    def marker(self) -> str:
        return PAGES[self.current][1].format(isl=self.isl, osl=self.osl)

    def sla_text(self) -> str:
        """The start of ``SLA.describe()`` for this session's targets (shown on Scenario)."""
        return f"P{self.pct} TTFT ≤ {self.ttft:,g} ms, TPOT ≤ {self.tpot:,g} ms"

    def _restore(self) -> None:
        for k, v in self._before.items():
            setattr(self, k, v)

    def params(self) -> dict[str, str]:
        """This session's values as ``sync_url`` writes them (``ui.url.URL_KEYS``)."""
        return {"in": str(self.isl), "out": str(self.osl), "m": self.model,
                "rate": f"{self.rate:g}", "p": str(self.pct), "ttft": f"{self.ttft:g}",
                "tpot": f"{self.tpot:g}"}  # fmt: skip

    async def _wait_done(self, text: str | None, key: str, val: str) -> None:
        await self.page.wait_for_function(
            DONE_JS, arg=[text, key, val], timeout=self.timeout_ms, polling=50
        )

    async def _set_number(self, label: str, value: float) -> None:
        box = self.page.locator(SIDEBAR).get_by_label(label, exact=True)
        await box.fill(f"{value:g}")
        await box.press("Enter")

    async def _select(self, label: str, option: str) -> None:
        # Streamlit's selectbox is a react-aria combobox: typing filters its (virtualised) list,
        # so the option is rendered before it is clicked.
        box = self.page.locator(SIDEBAR).get_by_role("combobox", name=label, exact=True)
        await box.click()
        await box.fill(option)
        await self.page.get_by_role("option", name=option, exact=True).click()

    async def open(self, timeout_s: float) -> None:
        """First page load, then this session's own input length (timed: ``open_s``)."""
        t0 = time.perf_counter()
        ms = timeout_s * 1000
        await self.page.goto(f"{self.base}/memory", timeout=ms)
        await self.page.wait_for_function(
            BODY_HAS, arg=f" in + {self.osl:,} out", timeout=ms, polling=100
        )  # the default input length
        box = self.page.locator('[data-testid="stSidebar"]').get_by_label(
            "Input tokens", exact=True
        )
        await box.fill(str(self.isl), timeout=ms)
        await box.press("Enter")
        await self.page.wait_for_function(BODY_HAS, arg=self.marker(), timeout=ms, polling=100)
        self.stats.open_s.append(time.perf_counter() - t0)

    async def _timed(self, kind: str, act, expect: str | None, key: str = "in") -> None:
        """Do ``act``; time until the URL's ``key`` is this session's value and ``expect`` shows."""
        t0 = time.perf_counter()
        try:
            await act()
        except Exception:
            self._restore()  # the widget was never changed: keep expecting the old values
            raise
        try:
            await self._wait_done(expect, key, self.params()[key])
        except Exception as exc:  # noqa: BLE001 - playwright TimeoutError
            await self._diagnose(kind, f"{expect!r}, {key}={self.params()[key]}", exc)
            return
        self.stats.updates.append((kind, time.perf_counter() - t0))
        for _ in range(100):  # "script finished" follows the deltas the page already shows
            done = [t for t in self.finished if t > t0]
            if done:  # the rerun as the server sent it (drawing in the browser not included)
                self.stats.server.append(done[0] - t0)
                break
            await asyncio.sleep(0.02)
        await self._check_isolation()

    async def _diagnose(self, kind: str, expect: str, exc: Exception) -> None:
        """No update in time: a violation if the page shows another input length, else an error."""
        text = await self.page.evaluate("() => document.body?.innerText ?? ''")
        shown = {int(m.replace(",", "")) for m in SHOWN_ISL.findall(text)}
        if shown and shown != {self.isl}:
            self.stats.violations.append(
                f"session {self.idx} (input {self.isl:,}) shows input length(s) {sorted(shown)}"
            )
        else:
            self.stats.error("timeout", f"session {self.idx} {kind}: {expect} ({exc!s:.80})")

    async def _check_isolation(self) -> None:
        page = self.page
        url = await page.evaluate("() => Object.fromEntries(new URL(location.href).searchParams)")
        box = page.locator(SIDEBAR).get_by_label("Input tokens", exact=True)
        box_val = (await box.input_value()).replace(",", "")
        text_ok = await page.evaluate(BODY_HAS, self.marker())
        for _ in range(25):  # a rerun may still be replacing the elements: give it 5 s
            if text_ok:
                break
            await asyncio.sleep(0.2)
            text_ok = await page.evaluate(BODY_HAS, self.marker())
        if not url:  # a page switch clears the query until sync_url writes it: not a leak
            self.stats.error("stale", f"session {self.idx}: URL without the scenario yet")
        bad = [f"url {k}={url[k]} (own {v})" for k, v in self.params().items()
               if k in url and url[k] != v]  # fmt: skip
        if box_val != str(self.isl):
            bad.append(f"sidebar input tokens {box_val}")
        if not text_ok:
            # Only another session's value on this page is a leak; a page that has not caught up
            # with its own value yet is a slow update.
            body = await page.evaluate("() => document.body?.innerText ?? ''")
            shown = {int(m.replace(",", "")) for m in SHOWN_ISL.findall(body)}
            if shown - {self.isl}:
                bad.append(f"page shows input length(s) {sorted(shown - {self.isl})}")
            else:
                self.stats.error("stale", f"session {self.idx}: page text not yet updated")
        if bad:
            self.stats.violations.append(
                f"session {self.idx} (input {self.isl}, model {self.model}): {', '.join(bad)}"
            )
        p = await page.evaluate(PROBLEMS_JS)
        for k in ("exceptions", "unexpected", "traceback", "connection"):
            if p[k]:
                detail = p[k] if isinstance(p[k], str) else ""
                self.stats.error(k, f"session {self.idx} on {self.current}: {detail}")

    async def step(self) -> None:
        r, rng = self.rng.random(), self.rng
        self._before = {k: getattr(self, k) for k in STATE}
        on_scenario = self.current == SCENARIO
        if r < 0.25:
            self.osl = rng.choice([n for n in (16, 64, 128, 256, 512, 1000, 2048, 4096)
                                   if n != self.osl])  # fmt: skip
            await self._timed("output tokens", lambda: self._set_number("Output tokens", self.osl),
                              self.marker(), "out")  # fmt: skip
        elif r < 0.37:
            self.rate = rng.choice([x for x in (0.5, 1.0, 2.0, 4.0, 8.0) if x != self.rate])
            shown = f"{self.rate:g} requests/s (Poisson)" if on_scenario else None
            await self._timed("arrival rate", lambda: self._set_number(
                "Arrival rate (requests/s)", self.rate), shown, "rate")  # fmt: skip
        elif r < 0.46:
            self.pct = rng.choice([p for p in (50, 90, 95, 99) if p != self.pct])
            await self._timed("percentile", lambda: self._select("Percentile", f"P{self.pct}"),
                              self.sla_text() if on_scenario else None, "p")  # fmt: skip
        elif r < 0.55:
            self.ttft = rng.choice([x for x in (500.0, 1000.0, 2000.0, 5000.0) if x != self.ttft])
            await self._timed("TTFT target", lambda: self._set_number(
                "TTFT: time to first token (ms)", self.ttft),
                self.sla_text() if on_scenario else None, "ttft")  # fmt: skip
        elif r < 0.64:
            self.tpot = rng.choice([x for x in (20.0, 50.0, 100.0, 200.0) if x != self.tpot])
            await self._timed("TPOT target", lambda: self._set_number(
                "TPOT: time per output token (ms)", self.tpot),
                self.sla_text() if on_scenario else None, "tpot")  # fmt: skip
        elif r < 0.73:
            self.model = rng.choice([m for m in MODELS if m != self.model])
            name = MODELS[self.model]
            await self._timed("model", lambda: self._select("Model", name),
                              f"Model: {name} (" if on_scenario else f"{name} on", "m")  # fmt: skip
        else:
            target = self.rng.choice([p for p in PAGES if p != self.current])
            self.current = target
            nav = self.page.locator('[data-testid="stSidebarNav"]')
            link = nav.get_by_role("link", name=target, exact=True)
            await self._timed("page switch", lambda: link.click(), self.marker())
        self.stats.actions += 1

    async def run(self, seconds: float, open_timeout_s: float) -> None:
        try:
            await self.open(open_timeout_s)
        except Exception as exc:  # noqa: BLE001
            self.stats.error("open", f"session {self.idx}: {exc!s:.200}")
            return
        if self.pretend_isl is not None:  # --self-check: this session expects another's value
            self.isl = self.pretend_isl
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await asyncio.sleep(self.rng.uniform(0.3, 1.5))  # think time
            try:
                await self.step()
            except Exception as exc:  # noqa: BLE001
                self.stats.error("action", f"session {self.idx}: {exc!s:.200}")
        self.stats.sessions_ok += 1


async def run(args: argparse.Namespace, base: str) -> Stats:
    from playwright.async_api import async_playwright

    stats = Stats()
    async with async_playwright() as p:
        exe = shutil.which("chromium")
        n_browsers = -(-args.users // args.per_browser)
        browsers = [
            await p.chromium.launch(executable_path=exe, headless=True, args=ARGS)
            for _ in range(n_browsers)
        ]
        sessions = []
        for i in range(args.users):
            ctx = await browsers[i // args.per_browser].new_context(
                viewport={"width": 1280, "height": 900}
            )
            sessions.append(Session(i, await ctx.new_page(), base, stats, args.seed, args.timeout))
        if args.self_check and len(sessions) > 1:
            sessions[0].pretend_isl = sessions[1].isl  # must be reported as violations
        t0 = time.perf_counter()
        # Staggered arrival (people open the link at slightly different times).
        await asyncio.gather(
            *(
                _later(args.stagger * s.idx, s.run(args.seconds, args.open_timeout))
                for s in sessions
            )
        )
        print(f"sessions ran for {time.perf_counter() - t0:.0f} s (incl. opening)")
        for b in browsers:
            await b.close()
    return stats


async def _later(delay: float, coro) -> None:
    await asyncio.sleep(delay)
    await coro


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--per-browser", type=int, default=10, help="pages per chromium process")
    ap.add_argument("--timeout", type=float, default=30, help="seconds to wait for an update")
    ap.add_argument("--open-timeout", type=float, default=120, help="seconds for the first load")
    ap.add_argument("--stagger", type=float, default=0.5, help="seconds between arrivals")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--self-check", action="store_true",
        help="session 0 expects session 1's input length: the isolation check must flag it",
    )  # fmt: skip
    args = ap.parse_args()
    if shutil.which("chromium") is None:
        print("no chromium on PATH (apt-get install chromium)")
        return 2
    data = tempfile.mkdtemp(prefix="ia-bench-users-")
    with running_app(data) as url:
        print(f"server on {url}; {args.users} sessions × {args.seconds:g} s")
        stats = asyncio.run(run(args, url))
    times = [t for _, t in stats.updates]
    by_kind: dict[str, list[float]] = defaultdict(list)
    for k, t in stats.updates:
        by_kind[k].append(t)
    print(
        f"updates {len(times)} ({stats.actions} actions, {stats.sessions_ok}/{args.users} sessions "
        f"ran to the end): p50 {pct(times, 0.5) * 1e3:,.0f} ms, p95 {pct(times, 0.95) * 1e3:,.0f} "
        f"ms, max {max(times, default=float('nan')) * 1e3:,.0f} ms, mean "
        f"{(statistics.fmean(times) if times else float('nan')) * 1e3:,.0f} ms"
    )
    for k, ts in sorted(by_kind.items()):
        print(f"  {k:14s} n={len(ts):4d} p50 {pct(ts, 0.5) * 1e3:,.0f} ms, p95 "
              f"{pct(ts, 0.95) * 1e3:,.0f} ms")  # fmt: skip
    sv = stats.server
    print(f"  server side (change -> 'script finished' message received): n={len(sv)}, p50 "
          f"{pct(sv, 0.5) * 1e3:,.0f} ms, p95 {pct(sv, 0.95) * 1e3:,.0f} ms")  # fmt: skip
    o = stats.open_s
    print(f"first load + own input length: n={len(o)}, p50 {pct(o, 0.5):.1f} s, "
          f"max {max(o, default=float('nan')):.1f} s")  # fmt: skip
    print(f"errors: {sum(stats.errors.values())} {dict(stats.errors)}")
    for e in stats.error_examples:
        print(f"  {e}")
    print(f"isolation violations: {len(stats.violations)}")
    for v in stats.violations[:15]:
        print(f"  {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
