"""Prefill/decode proxy for vLLM servers with the NixlConnector (written by `advisor deploy`).

Each request goes first to a prefill server with max_tokens 1 and kv_transfer_params
{"do_remote_decode": true}; the prefill server keeps the prompt's KV cache and answers with the
kv_transfer_params that locate it (remote_engine_id, remote_host/port = its NIXL side channel);
the request then goes to a decode server with those parameters, which pulls the KV cache over
NIXL and generates; its answer (streamed or not) is returned as is. Servers are taken round
robin. The protocol is vLLM's (docs/features/nixl_connector_usage.md; the NIXL integration
tests' toy proxy). Runs in the vLLM image (fastapi, httpx, uvicorn are vLLM dependencies).

    python3 vllm-pd-proxy.py --prefill http://HOST:PORT ... --decode http://HOST:PORT ... --port 8000
"""

import argparse
import itertools

import httpx
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

p = argparse.ArgumentParser()
p.add_argument("--prefill", nargs="+", required=True)
p.add_argument("--decode", nargs="+", required=True)
p.add_argument("--host", default="0.0.0.0")
p.add_argument("--port", type=int, default=8000)
args = p.parse_args()

app = FastAPI()
client = httpx.AsyncClient(timeout=None)
prefills = itertools.cycle(args.prefill)
decodes = itertools.cycle(args.decode)


@app.get("/health")
async def health():
    for url in args.prefill + args.decode:
        r = await client.get(f"{url}/health")
        if r.status_code != 200:
            return JSONResponse({"unhealthy": url}, status_code=503)
    return {"status": "ok"}


@app.get("/v1/models")
async def models():
    r = await client.get(f"{next(decodes)}/v1/models")
    return JSONResponse(r.json(), status_code=r.status_code)


async def _serve(path: str, request: Request):
    body = await request.json()
    first = dict(
        body,
        max_tokens=1,
        stream=False,
        kv_transfer_params={"do_remote_decode": True, "do_remote_prefill": False},
    )
    first.pop("stream_options", None)
    if "max_completion_tokens" in first:
        first["max_completion_tokens"] = 1
    r = await client.post(f"{next(prefills)}{path}", json=first)
    if r.status_code != 200:
        return JSONResponse(r.json(), status_code=r.status_code)
    second = dict(body, kv_transfer_params=r.json().get("kv_transfer_params"))
    decode = next(decodes)
    if not body.get("stream"):
        d = await client.post(f"{decode}{path}", json=second)
        return JSONResponse(d.json(), status_code=d.status_code)

    async def stream():
        async with client.stream("POST", f"{decode}{path}", json=second) as d:
            async for chunk in d.aiter_bytes():
                yield chunk

    return StreamingResponse(stream(), media_type="text/event-stream")


@app.post("/v1/completions")
async def completions(request: Request):
    return await _serve("/v1/completions", request)


@app.post("/v1/chat/completions")
async def chat(request: Request):
    return await _serve("/v1/chat/completions", request)


if __name__ == "__main__":
    uvicorn.run(app, host=args.host, port=args.port)
