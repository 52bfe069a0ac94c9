"""Validate generated Compose and Kubernetes files against the vendored official schemas
(tests/fixtures/schemas, made by scripts/vendor_schemas.py): the compose-spec JSON schema and
the Kubernetes 1.34.0 strict schemas (+ LeaderWorkerSet from its CRD)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jsonschema
import yaml

SCHEMAS = Path(__file__).resolve().parent / "fixtures" / "schemas"


@cache
def _compose() -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / "compose-spec.json").read_text())
    return jsonschema.Draft201909Validator(schema)  # its $schema: draft 2019-09


@cache
def _k8s() -> dict:
    return json.loads((SCHEMAS / "kubernetes-v1.34.0.json").read_text())


def compose_errors(text: str) -> list[str]:
    """Every compose-spec violation of a Compose file (YAML text)."""
    doc = yaml.safe_load(text)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
            for e in _compose().iter_errors(doc)]  # fmt: skip


def kubernetes_errors(text: str) -> list[str]:
    """Every schema violation of each document of a Kubernetes file (YAML text); a kind
    without a vendored schema is itself an error."""
    k8s = _k8s()
    out = []
    for i, doc in enumerate(yaml.safe_load_all(text)):
        if doc is None:
            continue
        key = f"kind:{doc.get('apiVersion')}/{doc.get('kind')}".replace("/", ".")
        if key not in k8s["$defs"]:
            out.append(f"document {i}: no schema for {key}")
            continue
        v = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{key}", "$defs": k8s["$defs"]})
        out += [f"document {i} ({doc['kind']} {doc.get('metadata', {}).get('name')}) "
                f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
                for e in v.iter_errors(doc)]  # fmt: skip
    return out
