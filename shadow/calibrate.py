"""Sizes the demo's load to the engine at hand. A 2-core CPU shared with other work and a GPU
differ by orders of magnitude; fixed rates would either show nothing or drown the engine.
A few requests (sent to the engine directly, never recorded) measure what one short chat and one
long batch prompt cost alone, and what a short chat costs when several run together (continuous
batching serves them at once); the rates follow from target utilizations."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from shadowreplay.errors import TargetError

from .traffic import Generator, TrafficConfig

# Share of the engine's batched capacity the short chats use on their own: at least the first,
# and up to the second when the slot needs more of them to hold SLOT_REQUESTS.
SHORT_UTILIZATION = (0.35, 0.5)
SLOT_REQUESTS = 130  # short requests the slot should hold in a run: a P95 needs 100 per side
BATCH_PROBE = 4  # short chats sent at once to measure the batched cost
LONG_UTILIZATION = 0.8  # share the batch client's long prompts add during its slot


@dataclass
class Calibration:
    short_s: float  # one short chat alone (prefix cached), seconds
    long_s: float  # one long batch prompt alone, seconds
    short_rate: float  # chats per second
    batch_interval_s: float  # one long prompt this often during the slot


def measure(url: str, cfg: TrafficConfig, shorts: int = 4, longs: int = 2) -> tuple[float, float]:
    import httpx

    gen = Generator(cfg.model, cfg.seed + 1000)  # other prompts than the recorded ones
    endpoint = url.rstrip("/") + "/v1/chat/completions"

    def timed(body: dict) -> float:
        body = dict(body, stream=False)
        body.pop("stream_options", None)
        t = time.monotonic()
        r = client.post(endpoint, json=body)
        r.raise_for_status()
        return time.monotonic() - t

    try:
        with httpx.Client(timeout=300, trust_env=False) as client:
            timed(gen.chat(cfg.chat_words, cfg.chat_max_tokens))  # warms the shared system prompt's cache
            s = [timed(gen.chat(cfg.chat_words, cfg.chat_max_tokens)) for _ in range(shorts)]
            lo = [timed(gen.batch(cfg.batch_words, cfg.batch_max_tokens)) for _ in range(longs)]
    except httpx.HTTPError as e:
        raise TargetError(f"calibrating against {url} failed: {type(e).__name__}: {e}") from None
    return statistics.median(s), statistics.median(lo)


def measure_batched(url: str, cfg: TrafficConfig, n: int = BATCH_PROBE) -> float:
    """Seconds per short chat when `n` are sent at once: the wall time of all of them over n."""
    import concurrent.futures

    import httpx

    gen = Generator(cfg.model, cfg.seed + 2000)
    endpoint = url.rstrip("/") + "/v1/chat/completions"
    bodies = []
    for _ in range(n):
        b = dict(gen.chat(cfg.chat_words, cfg.chat_max_tokens), stream=False)
        b.pop("stream_options", None)
        bodies.append(b)
    try:
        with httpx.Client(timeout=300, trust_env=False) as client, concurrent.futures.ThreadPoolExecutor(n) as pool:
            t = time.monotonic()
            for r in pool.map(lambda b: client.post(endpoint, json=b), bodies):
                r.raise_for_status()
            return (time.monotonic() - t) / n
    except httpx.HTTPError as e:
        raise TargetError(f"calibrating against {url} failed: {type(e).__name__}: {e}") from None


def rates(short_s: float, long_s: float, slot_len_s: float, batched_s: float | None = None,
          slot_total_s: float | None = None) -> Calibration:
    """The load: short chats at the rate that puts SLOT_REQUESTS into the run's `slot_total_s`
    seconds of slot, kept within SHORT_UTILIZATION of the engine (judged on the batched cost when
    measured, else on one chat alone); long prompts adding LONG_UTILIZATION during the slot."""
    cost = batched_s or short_s
    lo, hi = (u / cost for u in SHORT_UTILIZATION)
    want = SLOT_REQUESTS / slot_total_s if slot_total_s else lo
    short_rate = min(6.0, max(1.0, min(hi, max(lo, want))))
    # n long prompts evenly spaced from the slot's start, at least one: whole prompts, so the last
    # one ends near the slot's end instead of spilling a queue into the next slot
    n = max(1, min(round(slot_len_s * LONG_UTILIZATION / long_s), int(slot_len_s / 0.5)))
    interval = slot_len_s / n
    return Calibration(short_s, long_s, round(short_rate, 2), round(interval, 2))
