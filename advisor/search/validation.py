"""Queueing model against the TTFT/ITL-versus-request-rate measurements (for ``validate``)."""

from __future__ import annotations


def queueing_validation() -> list[dict]:
    """Rows (id, kind, gpu, model, qps, load level, measured ms, predicted ms, error) for the
    load_ttft / load_itl cases of data/measurements.csv, predicted by the performance model's
    step times through ``physics.queueing.model.latency_under_load``
    (perf.validation.validate.predict_cases).
    ``error`` = predicted / measured - 1. The load level is qps relative to the predicted
    capacity of the measured deployment (low < 0.3, medium < 0.7, high otherwise).
    """
    import numpy as np

    from advisor.perf.model.replica import build_replicas
    from advisor.perf.model.service import service_for
    from advisor.perf.validation.measurements import cases
    from advisor.perf.validation.validate import predict_cases
    from advisor.physics.queueing.model import latency_under_load

    items = [c for c in cases()[0] if c.kind in ("load_ttft", "load_itl")]
    if not items:
        return []
    pred = predict_cases(items)
    r = build_replicas([c.config for c in items])
    isl = np.array([c.isl for c in items], dtype=float)
    osl = np.array([c.osl for c in items], dtype=float)
    qps = np.array([c.qps for c in items], dtype=float)
    res = latency_under_load(service_for(r, isl, osl), qps, osl, isl_tokens=isl)
    rho = res.utilisation
    rows = []
    for i, c in enumerate(items):
        level = "low" if rho[i] < 0.3 else "medium" if rho[i] < 0.7 else "high"
        rows.append(
            {
                "id": c.id, "kind": c.kind, "gpu": c.config.gpu.id, "model": c.config.model.id,
                "engine": c.config.engine, "qps": float(c.qps), "load_level": level,
                "utilisation": float(rho[i]), "measured_ms": c.measured * 1e3,
                "predicted_ms": float(pred[i]) * 1e3,
                "error": float(pred[i] / c.measured - 1.0) if c.measured else float("nan"),
            }
        )  # fmt: skip
    return rows
