"""Turning a selection into a replay plan: per request, the target, the pre-built request bytes
(or gRPC call), its scheduled offset, and the columns copied into the results. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from .body import BodyOptions, build_body, build_headers, request_bytes
from .grpc_replay import GrpcCall, build_call
from .routes import Route, Target
from .shape import fill_bodies, shape_mask


@dataclass
class Plan:
    targets: list[Target]  # index 0 is --target, then one per --route rule
    route_names: list[str | None]  # per target index: the rule's predicate, None for --target
    offsets_ns: list[int]
    target_idx: list[int]
    http: list[bytes | None]  # request bytes for HTTP rows
    grpc: list[GrpcCall | None]  # call for gRPC rows
    skip: list[str | None]  # why a row cannot be replayed (becomes its error), else None
    request_id: list[str]
    kind: list[str | None]
    model: list[str | None]
    client_id: list[str | None]
    prompt_chars: list[int | None]
    expected_completion_tokens: list[int | None]
    recorded_e2e_ns: list[int | None] = field(default_factory=list)  # how long the response took in production
    lead_in: list[bool] = field(default_factory=list)  # sent to warm the shadow, before the window

    def __len__(self) -> int:
        return len(self.offsets_ns)


def _col(t: pa.Table, name: str) -> list:
    return t.column(name).to_pylist()


def is_grpc(kind: str | None, protocol: str | None) -> bool:
    return kind == "grpc" or protocol == "grpc"


def build_plan(table: pa.Table, offsets_ns: list[int], target: Target, routes: list[Route],
               opts: BodyOptions, extra_headers: list[tuple[str, str]]) -> Plan:
    targets = [target] + [r.target for r in routes]
    names: list[str | None] = [None] + [r.predicate for r in routes]
    route_index = _col(table, "route_index")
    tidx = [0 if r is None else int(r) + 1 for r in route_index]
    kinds = _col(table, "kind")
    protocols = _col(table, "protocol")
    shape_rows = shape_mask(table)
    bodies = fill_bodies(table, _col(table, "request_body"), opts.shape)
    streams = _col(table, "stream")
    ctoks = _col(table, "completion_tokens")
    methods = _col(table, "method")
    paths = _col(table, "path")
    headers = _col(table, "request_headers")
    models_rec = _col(table, "model")
    n = table.num_rows
    http: list[bytes | None] = [None] * n
    grpc: list[GrpcCall | None] = [None] * n
    skip: list[str | None] = [None] * n
    models: list[str | None] = [None] * n
    gsvc = gmeth = gframes = None
    for i in range(n):
        if is_grpc(kinds[i], protocols[i]):
            if gsvc is None:
                gsvc, gmeth, gframes = _col(table, "grpc_service"), _col(table, "grpc_method"), _col(table, "grpc_messages")
            grpc[i] = build_call(gsvc[i], gmeth[i], paths[i], gframes[i], extra_headers)
            if grpc[i] is None:
                skip[i] = "not replayable: gRPC row without service/method or request frames"
            m = models_rec[i]
            models[i] = opts.model_map.get(m, m) if m else m
            continue
        if shape_rows[i] and bodies[i] is None:
            skip[i] = "not replayable: shape row without prompt_tokens, or of an API whose prompts are not synthesized"
        body, model = build_body(bodies[i], kind=kinds[i], stream=streams[i], completion_tokens=ctoks[i], opts=opts)
        rec_model = models_rec[i]
        models[i] = model or (opts.model_map.get(rec_model, rec_model) if rec_model else None)
        path = paths[i] or "/"
        t = targets[tidx[i]]
        hdrs = build_headers(headers[i], extra_headers)
        http[i] = request_bytes((methods[i] or "POST").upper(), t.base_path + path, t.hostport, hdrs, body)
    return Plan(
        targets=targets,
        route_names=names,
        offsets_ns=offsets_ns,
        target_idx=tidx,
        http=http,
        grpc=grpc,
        skip=skip,
        request_id=_col(table, "request_id"),
        kind=kinds,
        model=models,
        client_id=_col(table, "client_id"),
        prompt_chars=_col(table, "prompt_chars"),
        expected_completion_tokens=ctoks,
        recorded_e2e_ns=[None if v is None or not v > 0 else round(v * 1e6) for v in _col(table, "e2e_ms")],
    )
