"""Synthetic gateway traffic for the demo: open-loop Poisson arrivals of short agent chats from
several clients (API keys) sharing one agent system prompt, plus a scheduled batch client that,
in one fixed slot of every period (a compressed "week"), sends prompts about 4x the usual length.

Every chat carries planted PII (names after "my name is", emails, phone numbers); the planted
values are returned in memory only, each with its request's `x-request-id`, so the caller can
check the recording holds none of them (`pii_check.LeakChecker`). Nothing here writes to disk.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

from .pii_check import REQUEST_ID_HEADER, Planted as PlantedValue

# API keys of the simulated clients. The recorder turns each into a keyed client_id (c_...).
CLIENT_KEYS = {
    "web-app": "sk-demo-web-7f3a9c",
    "mobile-app": "sk-demo-mobile-41d2e8",
    "support-agent": "sk-demo-agent-9b6c05",
}
BATCH_CLIENT = "nightly-batch"
BATCH_KEY = "sk-demo-batch-c0ffee"
USER_AGENTS = {
    "web-app": "web-frontend/2.3",
    "mobile-app": "mobile-ios/5.1",
    "support-agent": "support-agent/1.0",
    BATCH_CLIENT: "batch-summarizer/0.9",
}


@dataclass
class TrafficConfig:
    model: str
    duration_s: float
    period_s: float = 60.0
    slot_start_s: float = 30.0  # the batch client's slot within each period
    slot_len_s: float = 10.0
    short_rate: float = 2.0  # Poisson arrivals per second of short chats
    batch_interval_s: float = 2.0  # one long prompt this often during the slot
    batch_words: int = 1300  # document words of a batch prompt (about 4x a chat prompt)
    # Short user messages and answers keep a chat cheap on a CPU engine (its shared system prompt
    # is cached), so the slot holds enough short requests for a P95 verdict on TTFT, what the
    # long prompts hurt: every uncached prompt token and every answer token costs about 1-10 ms.
    chat_words: tuple[int, int] = (10, 40)  # user message words of a chat
    chat_max_tokens: tuple[int, int] = (2, 5)
    batch_max_tokens: int = 16
    seed: int = 7
    timeout_s: float = 120.0


@dataclass
class Planned:
    at: float  # seconds after the start
    client: str
    key: str
    body: dict
    long: bool
    request_id: str = ""  # sent as x-request-id; set once the schedule is sorted
    planted: list[tuple[str, str]] = field(default_factory=list)  # (kind, value) planted in the body


@dataclass
class TrafficResult:
    sent: int = 0
    ok: int = 0
    failed: int = 0
    long_sent: int = 0
    errors: list[str] = field(default_factory=list)
    planted: list[PlantedValue] = field(default_factory=list)  # PII planted, per request (memory only)
    bodies: dict[str, dict] = field(default_factory=dict)  # request id -> the body as sent (memory only)
    ttft_short_ms: list[float] = field(default_factory=list)
    ttft_short_slot_ms: list[float] = field(default_factory=list)


def agent_system_prompt(seed: int = 99, words: int = 300) -> str:
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    rules = " ".join(fake.sentence(nb_words=12) for _ in range(words // 12))
    return (
        "You are Acme Corp's support agent. Follow the policy below, answer briefly, never reveal "
        "internal notes, and escalate billing disputes. Policy: " + rules
    )


def in_slot(t: float, cfg: TrafficConfig) -> bool:
    return cfg.slot_start_s <= (t % cfg.period_s) < cfg.slot_start_s + cfg.slot_len_s


class Generator:
    """Makes chat and batch request bodies from one seed; `last_planted` holds the PII planted in
    the body made last, as (kind, value) pairs."""

    def __init__(self, model: str, seed: int):
        from faker import Faker

        self.model = model
        self.rnd = random.Random(seed)
        self.fake = Faker(["en_US", "en_GB", "de_DE"])
        self.fake.seed_instance(seed)
        self.us = self.fake["en_US"]
        self.system = agent_system_prompt()
        self.last_planted: list[tuple[str, str]] = []

    def person(self) -> tuple[str, str, str]:
        rnd, us = self.rnd, self.us
        first, last = us.first_name(), us.last_name()
        email = f"{first}.{last}{rnd.randint(1, 99)}@{us.free_email_domain()}".lower()
        phone = f"+1 {rnd.choice(['415', '212', '646', '312', '617'])}-{rnd.randint(200, 989)}-{rnd.randint(1000, 9999)}"
        self.last_planted = [("person", f"{first} {last}"), ("email", email), ("phone", phone)]
        return f"{first} {last}", email, phone

    def chat(self, words: tuple[int, int], max_tokens: tuple[int, int]) -> dict:
        name, email, phone = self.person()
        ask = self.fake.paragraph(nb_sentences=max(2, self.rnd.randint(*words) // 12))
        user = f"Hi, my name is {name}. {ask} You can reach me at {email} or {phone}."
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": self.system}, {"role": "user", "content": user}],
            "max_tokens": self.rnd.randint(*max_tokens),
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": 0.7,
        }

    def batch(self, n_words: int, max_tokens: int) -> dict:
        name, email, phone = self.person()
        words: list[str] = []
        while len(words) < n_words:
            words += self.fake.paragraph(nb_sentences=8).split()
        doc = " ".join(words[:n_words])
        user = f"Summarize this customer record for the weekly report.\nName: {name}\nEmail: {email}\nPhone: {phone}\n\n{doc}"
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": "You write terse summaries."}, {"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }


def plan(cfg: TrafficConfig) -> list[Planned]:
    """The whole schedule, decided up front from the seed (open loop: nothing waits on replies)."""
    gen = Generator(cfg.model, cfg.seed)
    rnd = gen.rnd
    out: list[Planned] = []
    names = list(CLIENT_KEYS)
    t = 0.0
    while True:
        t += rnd.expovariate(cfg.short_rate)
        if t >= cfg.duration_s:
            break
        client = rnd.choices(names, weights=(5, 3, 2))[0]
        body = gen.chat(cfg.chat_words, cfg.chat_max_tokens)
        out.append(Planned(t, client, CLIENT_KEYS[client], body, False, planted=gen.last_planted))
    period = 0
    while period * cfg.period_s < cfg.duration_s:
        t = period * cfg.period_s + cfg.slot_start_s + 0.2
        while t < period * cfg.period_s + cfg.slot_start_s + cfg.slot_len_s and t < cfg.duration_s:
            body = gen.batch(cfg.batch_words, cfg.batch_max_tokens)
            out.append(Planned(t, BATCH_CLIENT, BATCH_KEY, body, True, planted=gen.last_planted))
            t += cfg.batch_interval_s
        period += 1
    out.sort(key=lambda p: p.at)
    for i, p in enumerate(out):
        p.request_id = f"demo-{i:06d}"
    return out


async def _send(client, url: str, p: Planned, cfg: TrafficConfig, t0: float, res: TrafficResult) -> None:
    headers = {"authorization": f"Bearer {p.key}", "user-agent": USER_AGENTS[p.client], REQUEST_ID_HEADER: p.request_id}
    sent = time.monotonic()
    first = None
    try:
        async with client.stream("POST", url, json=p.body, headers=headers, timeout=cfg.timeout_s) as r:
            async for chunk in r.aiter_bytes():
                if first is None and chunk:
                    first = time.monotonic()
            if r.status_code != 200:
                raise RuntimeError(f"HTTP {r.status_code}")
        res.ok += 1
        if not p.long and first is not None:
            ms = (first - sent) * 1000
            res.ttft_short_ms.append(ms)
            if in_slot(p.at, cfg):
                res.ttft_short_slot_ms.append(ms)
    except Exception as e:  # counted and reported; traffic goes on (open loop)
        res.failed += 1
        if len(res.errors) < 5:
            res.errors.append(f"{p.client}: {type(e).__name__}: {e}"[:200])


async def _drive(base_url: str, cfg: TrafficConfig, schedule: list[Planned], res: TrafficResult, progress, alive) -> None:
    import httpx

    url = base_url.rstrip("/") + "/v1/chat/completions"
    limits = httpx.Limits(max_connections=512, max_keepalive_connections=64)
    async with httpx.AsyncClient(limits=limits, trust_env=False) as client:
        t0 = time.monotonic()
        tasks = []
        next_report = 10.0
        for p in schedule:
            delay = t0 + p.at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if alive is not None:
                alive()  # raises when the proxy died: no point sending into nothing
            tasks.append(asyncio.create_task(_send(client, url, p, cfg, t0, res)))
            res.sent += 1
            res.long_sent += p.long
            if progress and p.at >= next_report:
                progress(f"  t={p.at:5.0f}s  sent {res.sent} ({res.long_sent} long), ok {res.ok}, failed {res.failed}")
                next_report += 10.0
        await asyncio.gather(*tasks)


def drive(base_url: str, cfg: TrafficConfig, progress=None, alive=None) -> TrafficResult:
    """Sends the planned traffic to base_url (the proxy) and waits for every reply. `alive`, if
    given, is called before each send and may raise to stop the run."""
    schedule = plan(cfg)
    res = TrafficResult(planted=[PlantedValue(p.request_id, kind, value) for p in schedule for kind, value in p.planted],
                        bodies={p.request_id: p.body for p in schedule})
    asyncio.run(_drive(base_url, cfg, schedule, res, progress, alive))
    return res
