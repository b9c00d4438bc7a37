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

SHORT_UTILIZATION = 0.35  # share of the engine's batched capacity the short chats use on their own
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


def rates(short_s: float, long_s: float, slot_len_s: float, batched_s: float | None = None) -> Calibration:
    """The load: short chats at SHORT_UTILIZATION of the engine (judged on the batched cost when
    measured, else on one chat alone), long prompts adding LONG_UTILIZATION during the slot."""
    short_rate = min(6.0, max(1.0, SHORT_UTILIZATION / (batched_s or short_s)))
    # at least one long prompt per slot (sent as the slot opens), so every slot holds some
    interval = min(slot_len_s, max(0.5, long_s / LONG_UTILIZATION))
    return Calibration(short_s, long_s, round(short_rate, 2), round(interval, 2))
