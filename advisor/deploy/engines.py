"""Launch commands of vLLM, SGLang and TensorRT-LLM for a Plan (advisor/deploy/settings.py).

Each engine gets the same numbers: parallel degrees, KV dtype, the memory fraction that leaves
the budgeted KV cache, max sequences = the running-batch cap the search assumed, max model
length = the workload's longest request (settings.context_tokens), chunked prefill at the 8,192
batched tokens the activation reserve was sized for. Where an engine cannot do what the
deployment needs, the result says so with the nearest alternative instead of a command.

Sources of the launch forms (the engines' docs for the pinned versions):
- vLLM: ``vllm serve``; disaggregated prefill/decode with ``--kv-transfer-config`` and the
  NixlConnector (docs/features/nixl_connector_usage.md) behind a proxy that sends the prompt to a
  prefill server, then the request to a decode server; multi-node: a Ray cluster (``ray start``),
  ``--distributed-executor-backend ray`` (docs/serving/distributed_serving.md). vLLM 0.11.0's V1
  engine refuses a separate draft model ("Draft model speculative decoding is not supported yet",
  vllm/engine/arg_utils.py); 0.34.0 runs one (SpeculativeConfig method "draft_model",
  vllm/config/speculative.py).
- SGLang: ``python -m sglang.launch_server``; ``--disaggregation-mode prefill|decode`` with a
  transfer backend and the sglang-router in PD mode (docs/advanced_features/pd_disaggregation.md);
  multi-node: ``--dist-init-addr --nnodes --node-rank`` on every node; a draft model with
  ``--speculative-algorithm STANDALONE``.
- TensorRT-LLM: ``trtllm-serve`` with ``--extra_llm_api_options`` YAML; disaggregated: context
  and generation servers with ``cache_transceiver_config`` and ``trtllm-serve disaggregated -c``
  (docs/source/features/disagg-serving.md); multi-node: ``srun ... trtllm-llmapi-launch
  trtllm-serve`` (docs, trtllm-serve multi-node). NVIDIA GPUs only.

MoE layouts (a pool's ``ep`` / ``dp_attention``, both over the replica's TP GPUs; ``_layout_*``):
- Expert parallel (EP = TP): vLLM ``--enable-expert-parallel`` (docs/serving/
  expert_parallel_deployment.md); SGLang 0.5 ``--ep-size N`` (server_args.py; releases before
  0.5 spelled it ``--enable-ep-moe``, EP = TP); TensorRT-LLM ``moe_expert_parallel_size: N``
  with ``moe_tensor_parallel_size: 1`` (LlmArgs, tensorrt_llm/llmapi/llm_args.py).
- Attention data parallel (DP-attention = TP): vLLM ``--data-parallel-size N`` ranks of
  ``--tensor-parallel-size 1`` whose expert layers form one TP group of N, or one EP group with
  ``--enable-expert-parallel`` (docs/serving/data_parallel_deployment.md); SGLang
  ``--attn-dp-size N`` (0.5.23; before, ``--enable-dp-attention --dp-size N``) with ``--tp-size
  N``; TensorRT-LLM ``enable_attention_dp: true`` at ``--tp_size N`` (LlmArgs). All three
  engines run both layouts and their combination ("DEP"); each engine's flags are checked
  against data/engine-flags/ and, for vLLM and SGLang, by their own parsers in CI
  (tests/test_engine_parsers.py).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field, replace

import yaml

from advisor.catalog import models
from advisor.catalog.drafts import MTP
from advisor.catalog.loader import DATA_DIR
from advisor.catalog.quoting import shell_comment
from advisor.deploy.checkpoints import Checkpoint, choose
from advisor.deploy.quantize import QuantizeJob, job_for
from advisor.deploy.settings import Plan, PoolSettings
from advisor.deploy.tables import checkpoints, engine_flags, releases
from advisor.physics.engine_limits import block_quantized_moe_tp_blocker, draft_pipeline_blocker

PORT = 8000
#: Port the SGLang/TensorRT-LLM multi-node rendezvous and disaggregation bootstrap use.
DIST_PORT = 20000
CONFIG_DIR = "/config"
#: SGLang's disaggregation bootstrap port (ServerArgs default); one per prefill server.
BOOTSTRAP_PORT = 8998
HEAD = "HEAD_NODE_IP"


@dataclass
class Command:
    """One program invocation: ``program`` (not flag-checked) then ``args`` (flag, value)."""

    program: list[str]
    args: list[tuple[str, str | None]]
    #: False for helpers outside the engine's server parser (a router, ray); not flag-checked.
    engine_flags: bool = True
    env: dict[str, str] = field(default_factory=dict)

    def argv(self) -> list[str]:
        out = list(self.program)
        for flag, value in self.args:
            out += [flag] if value is None else [flag, value]
        return out

    def shell(self) -> str:
        env = "".join(f"{k}={shlex.quote(v)} " for k, v in self.env.items())
        parts = [" ".join(shlex.quote(p) for p in self.program)]
        for flag, value in self.args:
            parts.append(flag if value is None else f"{flag} {shlex.quote(value)}")
        return env + " \\\n    ".join(parts)


@dataclass
class Server:
    """A pool's server: the command one replica runs (per node when it spans nodes)."""

    role: str  # server | prefill | decode | router
    pool: PoolSettings | None
    commands: list[Command]  # one per node of a replica (multi-node), else one
    replicas: int
    gpus_per_replica: int
    port: int = PORT


@dataclass
class Launch:
    """An engine's launch of a Plan: servers and files, or why the engine cannot run it."""

    engine: str
    image: str | None
    checkpoint: Checkpoint | None
    version: str = ""  # the engine release (data/engine-images.yaml) flags and image are for
    quantize: QuantizeJob | None = None  # the quantize-first job whose output the servers load
    servers: list[Server] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)  # steps before the servers (quantize, ray)
    files: dict[str, str] = field(default_factory=dict)  # extra config files: name -> text
    notes: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # why not, with the nearest alternative

    @property
    def supported(self) -> bool:
        return not self.unsupported


def _kv(engine: str, kv: str) -> str | None:
    """The engine's KV-cache dtype value, None when it has none for ``kv``."""
    table = {
        "vllm": {"fp16": "auto", "bf16": "auto", "fp8": "fp8"},
        "sglang": {"fp16": "auto", "bf16": "auto", "fp8": "fp8_e4m3"},
        "trtllm": {"fp16": "auto", "bf16": "auto", "fp8": "fp8"},
    }
    return table[engine].get(kv)


def _remote_code(plan, flag: str = "--trust-remote-code") -> list[tuple[str, str | None]]:
    """The engine's trust flag when the model's repository ships its own code
    (data/checkpoints.yaml ``remote_code``): without it the server refuses to load the config."""
    return [(flag, None)] if plan.model.id in checkpoints()["remote_code"] else []


def _weight_args(plan, ck) -> list[tuple[str, str | None]]:
    """Flags for weights the checkpoint does not carry as served (vLLM and SGLang spell them
    alike): quantize at load (``--quantization``), or run in fp32 (``--dtype float32``); and
    the trust flag of a model with its own code (``_remote_code``)."""
    args: list[tuple[str, str | None]] = _remote_code(plan)
    if ck.online_quantization:
        args.append(("--quantization", ck.online_quantization))
    if plan.spec.weights == "fp32":
        args.append(("--dtype", "float32"))
    return args


def _draft_repo(draft_id: str | None) -> str:
    if draft_id is None:
        return ""
    return choose(draft_id, "bf16", "vllm").repo if draft_id in models() else draft_id


def _nodes(p: PoolSettings, plan: Plan) -> int:
    return -(-p.gpus_per_replica // plan.gpus_per_node)


def _common_notes(plan: Plan, ck: Checkpoint) -> list[str]:
    notes = []
    for p in plan.pools:
        notes.append(
            f"{p.role} pool: {p.replicas} replica(s) × TP={p.tp}"
            + (f" × PP={p.pp}" if p.pp > 1 else "")
            + f"; KV budget {p.kv_budget_bytes / 1e9:.1f} GB per GPU, at most {p.max_num_seqs} "
            "sequences running per replica (the budget's count at ISL + OSL)"
        )
    if any(p.replicas > 1 for p in plan.pools) and not plan.spec.disaggregated:
        notes.append("launch.sh and Compose start each replica on its own GPUs and port; put an "
                     "HTTP balancer in front of them (on Kubernetes the Service is one).")  # fmt: skip
    notes.append(f"max model length = {plan.pools[0].max_model_len:,} tokens: {plan.context_why}; "
                 "a longer request is refused by the server (set the longest with --max-context); "
                 "the KV budget holds one such request.")  # fmt: skip
    if ck.published and ck.source:
        notes.append(f"checkpoint: {ck.repo} ({ck.source})")
    return notes


def _unsupported_common(engine: str, version: str, plan: Plan) -> list[str]:
    out = []
    vendor, gpu = plan.gpu.vendor, plan.gpu.id
    rel = releases()[engine]
    if rel.image(version, gpu, vendor) is None:
        other = rel.version_for(gpu, vendor)
        if rel.image(other, gpu, vendor) is not None:
            alt = f"{engine} {other} (it has one)"
        else:
            alt = "vLLM or SGLang (ROCm images)" if vendor == "AMD" else "the vendor's own stack"
        out.append(f"{engine} {version} has no official image listed for {vendor} {gpu}; "
                   f"nearest: {alt}")  # fmt: skip
    if _kv(engine, plan.spec.kv) is None:
        out.append(f"{engine} has no {plan.spec.kv} KV cache; nearest: fp8 KV (a new "
                   "recommendation with KV dtype fp8)")  # fmt: skip
    # layouts the engine refuses at start; the search leaves them out for its engine too
    for p in plan.pools:
        block = block_quantized_moe_tp_blocker(plan.model, plan.gpu, p.tp, p.ep,
                                               plan.spec.weights, engine)  # fmt: skip
        draft = (
            draft_pipeline_blocker(engine, plan.draft_model, p.tp, p.pp) if p.speculative else None
        )
        out += [why for why in (block, draft) if why and why not in out]
    return out


def _start(plan: Plan, engine: str, version: str | None) -> tuple[Launch, Checkpoint]:
    ck = choose(plan.model.id, plan.spec.weights, engine, plan.gpu.vendor)
    rel = releases()[engine]
    version = version or rel.version_for(plan.gpu.id, plan.gpu.vendor)
    img = rel.image(version, plan.gpu.id, plan.gpu.vendor)
    la = Launch(engine=engine, image=img and img.image, checkpoint=ck, version=version)
    job = None
    if not ck.published and ck.online_quantization is None and ck.prepare:
        job = job_for(plan.model.id, ck.repo, plan.spec.weights, engine)
        if job is None and plan.spec.weights == "mxfp4":
            la.unsupported.append(f"{ck.prepare}; nearest: a recommendation with int4 or fp8 "
                                  "weights")  # fmt: skip
    if job is not None:  # the servers load what the quantize-first job writes
        la.quantize, la.files["quantize.py"] = job, job.script()
        ck = replace(ck, repo=job.path)
        la.checkpoint = ck
    elif ck.prepare:
        la.setup.append(shell_comment(f"first: {ck.prepare}"))
    la.unsupported += _unsupported_common(engine, version, plan)
    la.notes += _common_notes(plan, ck)
    return la, ck


def _per_rank_seqs(p: PoolSettings) -> int:
    """The running-sequence cap of one scheduler: under attention DP every rank schedules its
    own sequences, so vLLM's ``--max-num-seqs`` (per data-parallel engine core) and
    TensorRT-LLM's ``max_batch_size`` (per attention-DP rank) take the replica's cap / TP,
    rounded up; SGLang's ``--max-running-requests`` is the whole server's (its scheduler
    divides it by ``--dp-size``: per_dp_max_running_requests)."""
    return -(-p.max_num_seqs // p.tp) if p.dp_attention else p.max_num_seqs


# -- vLLM --------------------------------------------------------------------------------------


def _layout_vllm(p: PoolSettings) -> list[tuple[str, str | None]]:
    """A replica's parallel flags: attention DP runs TP ranks of 1 as ``--data-parallel-size``
    engines sharing the expert layers (vLLM's data-parallel deployment docs)."""
    if p.dp_attention:
        args = [("--tensor-parallel-size", "1"), ("--data-parallel-size", str(p.tp))]
    else:
        args = [("--tensor-parallel-size", str(p.tp))]
    return args + ([("--enable-expert-parallel", None)] if p.ep else [])


def vllm(plan: Plan, version: str | None = None) -> Launch:
    la, ck = _start(plan, "vllm", version)
    if plan.spec.speculative and la.version == "0.11.0" and plan.draft_model != MTP:
        la.unsupported.append(
            "vLLM 0.11.0 (V1 engine) refuses a separate draft model: 'Draft model speculative "
            "decoding is not supported yet' (vllm/engine/arg_utils.py); nearest: "
            f'--speculative-config \'{{"method": "ngram", "num_speculative_tokens": '
            f'{plan.spec_tokens}, "prompt_lookup_max": 4}}\' (no draft model; a different '
            "acceptance rate), vLLM 0.34.0 (--engine-version 0.34.0: it runs a draft model), or "
            "SGLang / TensorRT-LLM with the draft model"
        )
    if la.unsupported:
        return la
    for p in plan.pools:
        args: list[tuple[str, str | None]] = [
            ("--served-model-name", plan.model.id), *_layout_vllm(p),
            ("--pipeline-parallel-size", str(p.pp)),
            ("--gpu-memory-utilization", f"{p.gpu_memory_utilization}"),
            ("--max-num-seqs", str(_per_rank_seqs(p))), ("--max-model-len", str(p.max_model_len)),
            ("--enable-chunked-prefill", None),
            ("--max-num-batched-tokens", str(p.max_num_batched_tokens)),
            ("--kv-cache-dtype", _kv("vllm", plan.spec.kv)),
        ]  # fmt: skip
        args += _weight_args(plan, ck)
        if p.speculative and plan.draft_model == MTP:
            # the checkpoint's own MTP layers (vLLM SpeculativeConfig methods deepseek_mtp and
            # the generic mtp, the spelling GLM-4.5's README gives)
            method = "deepseek_mtp" if plan.model.family == "deepseek_v3" else "mtp"
            spec = {"method": method, "num_speculative_tokens": plan.spec_tokens}
            args.append(("--speculative-config", json.dumps(spec, separators=(",", ":"))))
        elif p.speculative:
            spec = {"method": "draft_model", "model": _draft_repo(plan.draft_model),
                    "num_speculative_tokens": plan.spec_tokens}  # fmt: skip
            args.append(("--speculative-config", json.dumps(spec, separators=(",", ":"))))
        if p.role in ("prefill", "decode"):
            cfg = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
            args.append(("--kv-transfer-config", json.dumps(cfg, separators=(",", ":"))))
        nodes = _nodes(p, plan)
        if nodes > 1:
            args.append(("--distributed-executor-backend", "ray"))
            if p.dp_attention:  # data-parallel ranks on several nodes (vLLM DP docs: Ray)
                args.append(("--data-parallel-backend", "ray"))
        args += [("--host", "0.0.0.0"), ("--port", str(PORT))]
        cmd = Command(["vllm", "serve", ck.repo], args)
        la.servers.append(Server(p.role, p, [cmd], p.replicas, p.gpus_per_replica))
    if plan.spec.disaggregated:
        proxy = Command(["python3", f"{CONFIG_DIR}/vllm-pd-proxy.py"], [], engine_flags=False)
        la.servers.append(Server("router", None, [proxy], 1, 0))
        la.files["vllm-pd-proxy.py"] = (DATA_DIR / "deploy" / "vllm-pd-proxy.py").read_text()
        la.notes.append(
            "Disaggregated: every prefill and decode server loads the NixlConnector "
            "(--kv-transfer-config, kv_role kv_both; NIXL ships in the vLLM image), its NIXL side "
            "channel on an address the others reach (VLLM_NIXL_SIDE_CHANNEL_HOST/PORT). Clients "
            "talk to vllm-pd-proxy.py, which sends each request first to a prefill server "
            "(max_tokens = 1) and then to a decode server with the returned kv_transfer_params "
            "(vLLM's protocol; llm-d or the vLLM production stack offer production routers)."
        )
    return la


# -- SGLang ------------------------------------------------------------------------------------


def _sglang_attention_dp(version: str, tp: int) -> list[tuple[str, str | None]]:
    """Attention DP over the replica's TP GPUs: ``--attn-dp-size N`` where the release has it
    (0.5.23: ``--enable-dp-attention`` is deprecated, "Use '--attn-dp-size <dp-size>' instead",
    its parser warns), else ``--enable-dp-attention --dp-size N``; either way the server's
    ``--max-running-requests`` is divided over the N schedulers."""
    if "--attn-dp-size" in engine_flags("sglang", version)["flags"]:
        return [("--attn-dp-size", str(tp))]
    return [("--enable-dp-attention", None), ("--dp-size", str(tp))]


def sglang(plan: Plan, version: str | None = None) -> Launch:
    la, ck = _start(plan, "sglang", version)
    if la.unsupported:
        return la
    for p in plan.pools:
        args: list[tuple[str, str | None]] = [
            ("--model-path", ck.repo), ("--served-model-name", plan.model.id),
            ("--tp-size", str(p.tp)),
        ]  # fmt: skip
        if p.dp_attention:
            args += _sglang_attention_dp(la.version, p.tp)
        if p.ep:
            args.append(("--ep-size", str(p.tp)))
        if p.pp > 1:
            args.append(("--pp-size", str(p.pp)))
        args += [
            ("--mem-fraction-static", f"{p.mem_fraction_static}"),
            ("--max-running-requests", str(p.max_num_seqs)),
            ("--context-length", str(p.max_model_len)),
            ("--chunked-prefill-size", str(p.max_num_batched_tokens)),
            ("--kv-cache-dtype", _kv("sglang", plan.spec.kv)),
        ]  # fmt: skip
        args += _weight_args(plan, ck)
        if p.speculative:
            k = plan.spec_tokens
            # an own MTP head: EAGLE on the checkpoint's NextN layer, no draft path (SGLang's
            # DeepSeek docs: --speculative-algorithm EAGLE --speculative-num-steps 1 ...)
            own = plan.draft_model == MTP
            args += [
                ("--speculative-algorithm", "EAGLE" if own else "STANDALONE"),
                *([] if own else [("--speculative-draft-model-path", _draft_repo(plan.draft_model))]),
                ("--speculative-num-steps", str(k)), ("--speculative-eagle-topk", "1"),
                ("--speculative-num-draft-tokens", str(k + 1)),
            ]  # fmt: skip
        if p.role in ("prefill", "decode"):
            args += [("--disaggregation-mode", p.role),
                     ("--disaggregation-transfer-backend", "mooncake"),
                     ("--disaggregation-bootstrap-port", str(BOOTSTRAP_PORT))]  # fmt: skip
        nodes = _nodes(p, plan)
        args += [("--host", "0.0.0.0"), ("--port", str(PORT))]
        if nodes == 1:
            cmds = [Command(["python3", "-m", "sglang.launch_server"], args)]
        else:
            cmds = [
                Command(["python3", "-m", "sglang.launch_server"],
                        args + [("--dist-init-addr", f"{HEAD}:{DIST_PORT}"),
                                ("--nnodes", str(nodes)), ("--node-rank", str(i))])
                for i in range(nodes)
            ]  # fmt: skip
        la.servers.append(Server(p.role, p, cmds, p.replicas, p.gpus_per_replica))
    if plan.spec.disaggregated:
        urls = [(f"--{p.role}", f"http://{p.role}-{i}:{PORT}")
                for p in plan.pools for i in range(p.replicas)]  # fmt: skip
        router = Command(
            ["python3", "-m", "sglang_router.launch_router"],
            [("--pd-disaggregation", None), *urls, ("--host", "0.0.0.0"), ("--port", str(PORT))],
            engine_flags=False,
        )
        la.servers.append(Server("router", None, [router], 1, 0))
        la.notes.append(
            "Disaggregated: prefill and decode servers exchange KV over Mooncake (RDMA; set "
            "--disaggregation-ib-device to the node's InfiniBand devices, or use "
            "--disaggregation-transfer-backend nixl); the sglang-router (pip package "
            "sglang-router, in the image) in PD mode fronts them, given each prefill server's URL "
            "and bootstrap port and each decode server's URL; its flags are checked against "
            "sglang-router 0.3.2's parser (data/engine-flags/sglang-router-0.3.2.yaml)."
        )
    return la


# -- TensorRT-LLM ------------------------------------------------------------------------------


def _trt_options(plan: Plan, p: PoolSettings) -> dict:
    opts: dict = {"kv_cache_config": {"dtype": _kv("trtllm", plan.spec.kv)}}
    if p.dp_attention:
        opts["enable_attention_dp"] = True
    if plan.model.is_moe and (p.ep or p.dp_attention):
        # the experts' split over the TP GPUs, said explicitly: all EP, or all TP
        ep = p.tp if p.ep else 1
        opts["moe_expert_parallel_size"], opts["moe_tensor_parallel_size"] = ep, p.tp // ep
    if p.speculative and plan.draft_model == MTP:  # LlmArgs MTPDecodingConfig
        opts["speculative_config"] = {
            "decoding_type": "MTP", "num_nextn_predict_layers": plan.spec_tokens,
        }  # fmt: skip
    elif p.speculative:
        opts["speculative_config"] = {
            "decoding_type": "Draft_Target", "max_draft_len": plan.spec_tokens,
            "speculative_model_dir": _draft_repo(plan.draft_model),
        }  # fmt: skip
    if p.role in ("prefill", "decode"):
        opts["cache_transceiver_config"] = {"backend": "UCX"}
    if p.role == "prefill":
        opts["disable_overlap_scheduler"] = True
    return opts


def trtllm(plan: Plan, version: str | None = None) -> Launch:
    la, ck = _start(plan, "trtllm", version)
    if la.unsupported:
        return la
    urls: dict[str, list[str]] = {}
    for p in plan.pools:
        name = "extra-llm-api-options.yaml" if p.role == "server" else f"{p.role}-options.yaml"
        la.files[name] = yaml.safe_dump(_trt_options(plan, p), sort_keys=False)
        args: list[tuple[str, str | None]] = [
            ("--backend", "pytorch"), ("--tp_size", str(p.tp)), ("--pp_size", str(p.pp)),
            ("--max_batch_size", str(_per_rank_seqs(p))), ("--max_seq_len", str(p.max_model_len)),
            ("--max_num_tokens", str(p.max_num_batched_tokens)),
            ("--kv_cache_free_gpu_memory_fraction", f"{p.free_gpu_memory_fraction}"),
            ("--enable_chunked_prefill", None),
            ("--extra_llm_api_options", f"{CONFIG_DIR}/{name}"),
            *_remote_code(plan, "--trust_remote_code"),
            ("--host", "0.0.0.0"), ("--port", str(PORT)),
        ]  # fmt: skip
        nodes = _nodes(p, plan)
        program = ["trtllm-serve", ck.repo]
        if nodes > 1:
            per_node = p.gpus_per_replica // nodes
            program = ["srun", "-N", str(nodes), "--ntasks-per-node", str(per_node),
                       "--mpi=pmix", "trtllm-llmapi-launch", *program]  # fmt: skip
        la.servers.append(Server(p.role, p, [Command(program, args)], p.replicas,
                                 p.gpus_per_replica))  # fmt: skip
        urls[p.role] = [f"{p.role}-{i}:{PORT}" for i in range(p.replicas)]
    if plan.spec.disaggregated:
        cfg = {
            "hostname": "0.0.0.0", "port": PORT, "backend": "pytorch",
            "context_servers": {"num_instances": len(urls["prefill"]), "urls": urls["prefill"]},
            "generation_servers": {"num_instances": len(urls["decode"]), "urls": urls["decode"]},
        }  # fmt: skip
        la.files["disagg-config.yaml"] = yaml.safe_dump(cfg, sort_keys=False)
        front = Command(["trtllm-serve", "disaggregated"],
                        [("-c", f"{CONFIG_DIR}/disagg-config.yaml")])  # fmt: skip
        la.servers.append(Server("router", None, [front], 1, 0))
        la.notes.append(
            "Disaggregated: context (prefill) and generation (decode) servers exchange KV through "
            "the cache transceiver (UCX); `trtllm-serve disaggregated -c disagg-config.yaml` "
            "fronts them and lists their host:port (edit the names to your hosts)."
        )
    return la


LAUNCHERS = {"vllm": vllm, "sglang": sglang, "trtllm": trtllm}
