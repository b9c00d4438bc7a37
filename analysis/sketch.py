"""The latency percentile sketch of `analyze` and `analyze anomalies` (docs/analysis.md).

A DDSketch-style log histogram written as plain SQL (analysis/sql/summary.sql, fold.sql): a value
v > 0 falls in bucket i = ceil(ln(v) / ln(GAMMA)), GAMMA = (1 + ALPHA) / (1 - ALPHA), and stands
for the bucket's representative 2 GAMMA^i / (GAMMA + 1), within ALPHA (relative) of every value
of the bucket. A negative value is mirrored (bucket of -v, sign -1); zero has a bucket of its own.
A sketch is a count per (group, bucket): sketches of partitions merge by summing their counts,
so the SQL holds a few hundred buckets per group instead of every value. A quantile is read from
the cumulative counts as DuckDB's quantile_cont reads sorted values (interpolating between the
0-based ranks floor(h) and ceil(h), h = (n - 1) q), so each reported figure lies within ALPHA of
the exact one. Groups of at most EXACT_MAX values keep their exact values instead (the same
histogram, one bucket per distinct value): their percentiles are exact.

This module holds the constants (the SQL gets them as the variables of `params`) and a numpy
reference of the same sketch, used by the tests."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable


ALPHA = 0.005  # relative error of a sketched percentile
GAMMA = (1 + ALPHA) / (1 - ALPHA)
EXACT_MAX = 5000  # groups with at most this many values get exact percentiles
EVERYTHING = 2**62  # exact_max of the exact path (--exact): every group is "small"


def params(exact: bool = False) -> dict[str, float | int]:
    """The SQL variables of the sketch: sketch_gamma and exact_max."""
    return {"sketch_gamma": GAMMA, "exact_max": EVERYTHING if exact else EXACT_MAX}


def describe(exact: bool = False) -> dict[str, object]:
    """The `percentiles` field of --json: how the latency percentiles were computed."""
    if exact:
        return {"method": "exact", "relative_error": 0.0, "exact_up_to": None}
    return {"method": "sketch", "relative_error": ALPHA, "exact_up_to": EXACT_MAX}


def note(exact: bool = False, figures: str = "latency percentiles", groups: str = "groups") -> str:
    """The line printed with the figures."""
    if exact:
        return f"{figures} exact (--exact)"
    return (f"{figures} within \u00b1{100 * ALPHA:g} % (sketch) for {groups} over {EXACT_MAX:,} values, "
            f"exact below; --exact for exact figures everywhere")


def buckets(values: Iterable[float]) -> Counter:
    """The sketch of `values`: a count per (sign, bucket index)."""
    import numpy as np

    v = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64)
    s = np.sign(v).astype(np.int64)
    a = np.abs(v)
    idx = np.zeros(len(v), np.int64)
    nz = a > 0
    idx[nz] = np.ceil(np.log(a[nz]) / math.log(GAMMA)).astype(np.int64)
    return Counter(zip(s.tolist(), idx.tolist()))


def merge(*sketches: Counter) -> Counter:
    out: Counter = Counter()
    for s in sketches:
        out.update(s)
    return out


def representative(sign: int, index: int) -> float:
    return 0.0 if sign == 0 else sign * 2 * GAMMA**index / (GAMMA + 1)


def quantile(sketch: Counter, q: float) -> float | None:
    """The q-quantile of a sketch, interpolated between ranks as quantile_cont."""
    import numpy as np

    keys = sorted(sketch, key=lambda k: (k[0], k[0] * k[1]))
    n = sum(sketch.values())
    if n == 0:
        return None
    h = (n - 1) * q
    cum = np.cumsum([sketch[k] for k in keys])
    vals = [representative(*k) for k in keys]
    lo = vals[int(np.searchsorted(cum, math.floor(h), side="right"))]
    hi = vals[int(np.searchsorted(cum, math.ceil(h), side="right"))]
    return lo + (h - math.floor(h)) * (hi - lo)
