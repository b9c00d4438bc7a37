"""Result rows: what the runner hands over when a request is done, and the replay_results
columns built from it. Pure (no I/O); used by the writer process and by the in-process fallback.

A done request travels as one compact tuple of plain values, built from the runner's arrays
without any computation (marshal-able; batches of them are marshalled later, in one call each):

    (i, sent_ns, first_byte_ns, end_ns, status, error, token_ns, usage, cap_delay_ns)

`i` indexes the plan; times are CLOCK_MONOTONIC ns (0 = never); `usage` is the usage object the
server reported (a dict of JSON values, of the request's API: see llmapi.usage_counts) or None. The columns that do not depend on
the run (request id, target, route, kind, model, ...) come from `static_columns(plan)`, sent once
before the start.
"""

from __future__ import annotations

import datetime as dt

from shadowreplay.llmapi import usage_counts

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

COLUMNS = (
    "request_id", "target", "route", "scheduled_at", "sent_at", "send_lag_ms", "cap_delay_ms",
    "ts_first_byte", "ts_end", "status", "error", "kind", "model", "client_id", "ttft_ms", "itl_ms",
    "e2e_ms", "prompt_tokens", "completion_tokens", "cached_tokens", "expected_completion_tokens",
    "prompt_chars", "lead_in",
)

Row = tuple  # (i, sent, first, end, status, error, token_ns, usage, cap_ns)


def static_columns(plan) -> dict[str, list]:
    """Per-request values fixed before the start (plain lists: marshal-able)."""
    return {
        "request_id": list(plan.request_id),
        "offsets_ns": list(plan.offsets_ns),
        "target_idx": list(plan.target_idx),
        "targets": [t.url for t in plan.targets],
        "route_names": list(plan.route_names),
        "kind": list(plan.kind),
        "model": list(plan.model),
        "client_id": list(plan.client_id),
        "expected_completion_tokens": list(plan.expected_completion_tokens),
        "prompt_chars": list(plan.prompt_chars),
        "lead_in": list(plan.lead_in) or [False] * len(plan),
    }


def _wall(ns: int, delta: int) -> dt.datetime | None:
    if not ns:
        return None
    return _EPOCH + dt.timedelta(microseconds=(ns + delta) // 1000)


def columns(static: dict[str, list], rows: list[Row], start_ns: int, wall_minus_mono_ns: int) -> dict[str, list]:
    """replay_results columns (COLUMNS, in order) for `rows`."""
    d = wall_minus_mono_ns
    cols: dict[str, list] = {k: [] for k in COLUMNS}
    targets, routes, tidx, offs = static["targets"], static["route_names"], static["target_idx"], static["offsets_ns"]
    for i, sent, first, end, status, error, toks, usage, cap_ns in rows:
        sched_ns = start_ns + offs[i]
        pt, ct, cached = usage_counts(usage)
        toks = toks or []
        cols["request_id"].append(static["request_id"][i])
        cols["target"].append(targets[tidx[i]])
        cols["route"].append(routes[tidx[i]])
        cols["scheduled_at"].append(_wall(sched_ns, d))
        cols["sent_at"].append(_wall(sent, d))
        cols["send_lag_ms"].append((sent - sched_ns) / 1e6 if sent else None)
        cols["cap_delay_ms"].append(cap_ns / 1e6)
        cols["ts_first_byte"].append(_wall(first, d))
        cols["ts_end"].append(_wall(end, d))
        cols["status"].append(status)
        cols["error"].append(error)
        cols["kind"].append(static["kind"][i])
        cols["model"].append(static["model"][i])
        cols["client_id"].append(static["client_id"][i])
        cols["ttft_ms"].append((toks[0] - sent) / 1e6 if toks and sent else None)
        cols["itl_ms"].append([(b - a) / 1e6 for a, b in zip(toks, toks[1:])] if len(toks) > 1 else ([] if toks else None))
        cols["e2e_ms"].append((end - sent) / 1e6 if end and sent else None)
        cols["prompt_tokens"].append(pt)
        cols["completion_tokens"].append(ct)
        cols["cached_tokens"].append(cached)
        cols["expected_completion_tokens"].append(static["expected_completion_tokens"][i])
        cols["prompt_chars"].append(static["prompt_chars"][i])
        cols["lead_in"].append(static["lead_in"][i])
    return cols
