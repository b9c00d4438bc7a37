"""After a replay with 404s: did a target refuse requests for the model they name?

An OpenAI-compatible server lists its models at `GET /v1/models`; a request naming another model
gets a 404, so a replay whose `--model-map` is missing or wrong fails every request while the
sender keeps its schedule perfectly. When some requests got a 404, this asks each target once (a
short timeout; a target that does not answer, or answers with something else, is not judged) and
returns one warning per target that does not serve some of its requests' models, naming them and
a `--model-map` to add. It runs after the sends, so a replay sends nothing it did not schedule."""

from __future__ import annotations

from collections import Counter

import httpx

from .plan import Plan

TIMEOUT_S = 3.0


def served_models(base_url: str, timeout: float = TIMEOUT_S) -> list[str] | None:
    """The ids a target lists at /v1/models, or None when it does not say."""
    try:
        r = httpx.get(f"{base_url}/v1/models", timeout=timeout)
        if r.status_code != 200:
            return None
        data = r.json().get("data")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    ids = [m.get("id") for m in data if isinstance(m, dict)]
    return [i for i in ids if isinstance(i, str)] or None


def model_warnings(plan: Plan, lister=served_models) -> list[str]:
    wanted: dict[int, Counter] = {}
    for i, ti in enumerate(plan.target_idx):
        m = plan.model[i]
        if plan.http[i] is None or plan.skip[i] is not None or not isinstance(m, str) or not m:
            continue
        wanted.setdefault(ti, Counter())[m] += 1
    out = []
    for ti, counts in sorted(wanted.items()):
        url = plan.targets[ti].url
        served = lister(url)
        if not served:
            continue
        missing = {m: n for m, n in counts.items() if m not in served}
        if not missing:
            continue
        names = ", ".join(f"{m} ({n} requests)" for m, n in sorted(missing.items(), key=lambda kv: -kv[1]))
        hint = ""
        if len(served) == 1:
            hint = ": map them with " + " ".join(f"--model-map {m}={served[0]}" for m in sorted(missing))
        out.append(f"{url} serves {', '.join(served)}, not {names}; those requests fail with HTTP 404{hint}")
    return out
