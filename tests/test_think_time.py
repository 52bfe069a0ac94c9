"""Users with a think time: the closed-loop load (interactive response-time law X = N / (Z + R),
Lazowska et al., "Quantitative System Performance", 1984, ch. 3) on the single-deployment pages,
the scenario field's bounds, the URL and the CLI."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from advisor.catalog import get_accelerator
from advisor.perf.model.closed_loop import closed_loop_rate
from advisor.perf.model.estimate import estimate
from advisor.perf.model.sweeps import scenario_input
from advisor.physics.queueing.closed_loop import interactive_throughput_per_s
from advisor.scenario import THINK_TIME_DEFAULT_S, Hardware, Scenario, Workload


def _users(n: int, think_s: float) -> Scenario:
    return Scenario(
        hardware=Hardware(nodes=1),
        workload=Workload(concurrent_users=n, arrival_rate_per_s=None, think_time_s=think_s),
    )


def test_law_by_hand():
    # 200 users, 15 s thinking, 5 s response: each user cycles every 20 s -> 10 requests/s.
    assert float(interactive_throughput_per_s(200, 15.0, 5.0)) == pytest.approx(10.0)
    # No think time: Little's law on the requests in flight, 64 users / 8 s = 8 requests/s.
    assert float(interactive_throughput_per_s(64, 0.0, 8.0)) == pytest.approx(8.0)


def test_solver_on_a_hand_solvable_system():
    # An M/M/1-like response time R(X) = S / (1 - X S), S = 1 s, N = 3 users, Z = 2 s:
    # X (2 + 1 / (1 - X)) = 3  ->  2X^2 - 6X + 3 = 0  ->  X = (3 - sqrt 3) / 2 = 0.6340 req/s.
    class Res:
        def __init__(self, x):
            self.stable = x < 1.0
            self.e2e = type("E", (), {"mean_s": np.where(self.stable, 1.0 / (1.0 - x), np.inf)})

    x = closed_loop_rate(lambda x, rows: Res(x), 3.0, np.array([0.999]), np.array([1.0]), 2.0)
    assert float(x[0]) == pytest.approx((3 - np.sqrt(3)) / 2, rel=1e-3)


@pytest.mark.parametrize("think_s", [0.0, 15.0])
def test_latency_page_load_satisfies_the_law_and_has_percentiles(think_s):
    s = _users(200, think_s)
    inp = scenario_input(s, 4, 1)
    assert inp.qps is not None and inp.dp == 2  # 8 GPUs / TP 4
    e = estimate(s.model_spec(), get_accelerator("h100-sxm"), inp)
    # the exact estimate at the rate found on the interpolated step table: X (Z + R) = N
    assert inp.qps * (think_s + e["e2e_ms"] / 1e3) == pytest.approx(200, rel=0.01)
    assert set(e["percentiles"]["ttft_ms"]) == {"p50", "p90", "p95", "p99"}


def test_thinking_users_send_fewer_requests():
    busy, thinking = scenario_input(_users(200, 0.0), 4, 1), scenario_input(_users(200, 15.0), 4, 1)
    assert thinking.qps < busy.qps


def test_think_time_bounds_and_default():
    assert Workload().think_time_s == THINK_TIME_DEFAULT_S == 15.0  # AIPerf docs: ~15 s reading
    for bad in (-1.0, 3601.0):
        with pytest.raises(ValidationError, match="think_time_s"):
            Workload(concurrent_users=10, arrival_rate_per_s=None, think_time_s=bad)


def test_think_time_travels_in_the_url():
    from ui.url import View, scenario_from_params, scenario_to_params

    s = _users(50, 30.0)
    params = scenario_to_params(s, View())
    assert params["think"] == "30"
    back, _, warnings = scenario_from_params(params)
    assert back.workload.think_time_s == 30.0 and not warnings
    _, _, warnings = scenario_from_params({**params, "think": "-5"})
    assert any("think" in w for w in warnings)


def test_cli_users_with_think_time(capsys):
    from advisor.cli import main

    code = main(["recommend", "--users", "200", "--think-time-s", "15", "--no-disaggregated",
                 "--weights", "fp8", "--kv", "fp8", "--json"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    import json

    r = json.loads(out)
    b = r["best"]
    x = b["throughput_tok_s"] / 256  # requests/s at 256 output tokens
    # interactive response-time law on the winner's mean E2E (between its P50 and P99)
    assert (
        200 / (15 + b["e2e_ms"]["p99"] / 1e3) <= x <= 200 / (15 + b["e2e_ms"]["p50"] / 1e3) * 1.01
    )
    assert any("think" in a for a in r["assumptions"])
    with pytest.raises(SystemExit) as exc:  # argparse: exit 2, one line on stderr
        main(["recommend", "--users", "200", "--think-time-s", "-1"])
    assert exc.value.code == 2
    assert "--think-time-s" in capsys.readouterr().err


def test_latency_page_shows_percentiles_for_users_with_think_time():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    app = str(Path(__file__).resolve().parent.parent / "app.py")
    at = AppTest.from_file(app, default_timeout=120)
    for k, v in {"users": "200", "rate": "none", "think": "15"}.items():
        at.query_params[k] = v
    at = at.run().switch_page("ui/pages/latency.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert list(table.columns) == ["metric", "P50", "P90", "P95", "P99"]
    assert list(table["metric"]) == ["TTFT", "TPOT", "E2E"]
    assert next(w for w in at.number_input if w.key == "w.think").value == 15.0


def test_pdf_sensitivity_halves_the_think_time():
    from advisor.report.sections.assumptions import perturbations

    got = dict(perturbations(_users(200, 15.0)))
    assert got["think time ×0.5 (7.5 s)"].workload.think_time_s == 7.5  # TPC-W's ~7 s
    assert not any("think" in k for k, _ in perturbations(_users(200, 0.0)))
