"""Over-scrub and secrets recall of the scrubber, on text with no personal data and on a
generated corpus of secrets (issue 38).

* **Over-scrub**: characters the scrubber changes, as % of all characters, on
  - source code: real files on this machine in several languages (the Python standard library,
    the packages of the main venv's site-packages: .py, .c/.h, .js; npm's JavaScript);
  - English prose: the package docs of site-packages (*.md, *.rst, METADATA), and a second
    set: npm's docs and READMEs and the READMEs of /usr/share/doc.
  Changes in credit and address lines (`credit_line`: an `@`, `Author`, `Copyright`, `written
  by`, ...: people's names and e-mail addresses, which are personal data) are counted apart.
  Files are split by a hash of their path into `dev` (the rules may be tuned on it) and `test`
  (reported, never tuned on). Nothing in these files is planted, so every other changed
  character counts.
* **Secrets recall** per phrasing family and language on benchmarks/secrets_corpus.py's
  generated corpus (dev templates and held-out test templates), and the share of sentences
  about passwords without one that change.

  With `--people-python PY` (a Python with spaCy and en_core_web_sm: benchmarks/label_people.py),
  changes inside people's full names that spaCy finds (`Julian Berman` in a README) are counted
  apart too: a real person's name is personal data, whether or not a credit word is on its line.

    .venv/bin/python benchmarks/overscrub_eval.py [--files 120] [--examples 20] [--people-python PY]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from secrets_corpus import FAMILIES, LANGS, chatter, generate  # noqa: E402

from shadowreplay.anonymize import Scrubber  # noqa: E402
from shadowreplay.anonymize.detectors import find_spans  # noqa: E402

SITE = Path("/work/main/.venv/lib/python3.12/site-packages")
_CREDIT_WORDS = ("author", "maintainer", "maintained by", "copyright", "written by", "contributed by", "contributors",
                 "thanks to", "(c)", "©", "project-url", "home-page", "download-url", "license", "reported by",
                 "contributions from", "patch by", "fixed by", "suggested by", "reviewed by")
# a link to a person's profile (`* [Zach Smith](https://github.com/zsmith)`, `[Sorin](https://sourceforge.net/u/sorin/)`)
_PROFILE_LINK = re.compile(r"\]\(https?://(?:www\.)?(?:github\.com|gitlab\.com|twitter\.com|x\.com|sourceforge\.net/u"
                           r"|stackoverflow\.com/users(?:/\d+)?)/[^/\s)]+/?\)")
# a changelog entry ending in its authors, and its pull request (`- **assert**: fix ...
# (Ruben Bridgewater) [#27202](...)`, `* v8: fix a crash (Fedor Indutny)`, `(Fedor Indutny,`)
_CHANGELOG_AUTHOR = re.compile(r"\([^()\n]{2,80}\)[ \t]*\[#\d+\]|^[ \t]*[*-][ \t].*\((?:[^()\n]*[ /])?"
                               r"[A-Z][\w.'\u2019-]*(?:[ \t]+[A-Z][\w.'\u2019-]*){1,3}(?:\)[ \t]*(?:<https?://\S+>)?|,)[ \t]*$")


def credit_line(line: str) -> bool:
    """A line that credits people or gives an address (`# Author: Barry Warsaw`, `Copyright
    2012 Simon Sapin`, `__author__ = ...`, `* [Zach Smith](https://github.com/zsmith)`, a
    changelog entry's `(Ruben Bridgewater) [#27202]`, any line with an `@`): its names and addresses are personal data, so what changes there is no
    over-scrub (set aside, as the issue says)."""
    low = line.lower()
    return ("@" in line or any(w in low for w in _CREDIT_WORDS) or _PROFILE_LINK.search(line) is not None
            or _CHANGELOG_AUTHOR.search(line) is not None)


def split_of(path: str) -> str:
    return "dev" if hashlib.sha256(path.encode()).digest()[0] % 2 == 0 else "test"


def _files(root: Path, patterns: tuple[str, ...], limit: int, skip_tests: bool = True) -> list[Path]:
    if not root.is_dir():
        return []
    found = sorted(p for pat in patterns for p in root.rglob(pat)
                   if p.is_file() and not (skip_tests and ({"test", "tests"} & set(p.parts))))
    if len(found) > limit:  # every k-th, so the sample spreads over the tree
        step = len(found) / limit
        found = [found[int(i * step)] for i in range(limit)]
    return found


def _read(p: Path, max_chars: int = 200_000) -> str | None:
    try:
        if p.suffix == ".gz":
            return gzip.decompress(p.read_bytes()).decode("utf-8")[:max_chars]
        return p.read_text(encoding="utf-8")[:max_chars]
    except (UnicodeDecodeError, OSError, EOFError, gzip.BadGzipFile):
        return None


def code_corpus(n: int) -> dict[str, list[tuple[str, str]]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    sets = {
        "python (stdlib)": _files(stdlib, ("*.py",), n),
        "python (site-packages)": _files(SITE, ("*.py",), n),
        "c/h (site-packages)": _files(SITE, ("*.c", "*.h"), n),
        "javascript (npm, site-packages)": _files(Path("/usr/lib/node_modules/npm"), ("*.js",), n) + _files(SITE, ("*.js",), 10),
    }
    out = {}
    for k, paths in sets.items():
        out[k] = [(str(p), t) for p in paths if (t := _read(p))]
    return out


def prose_corpus(n: int) -> list[tuple[str, str]]:
    out = []
    for p in _files(SITE, ("*.md", "*.rst", "METADATA"), n, skip_tests=False):
        t = _read(p)
        if not t:
            continue
        out.append((str(p), t))
    return out


def system_prose_corpus(n: int) -> list[tuple[str, str]]:
    """The second English prose set: npm's documentation and its packages' READMEs, and the
    READMEs of /usr/share/doc (Debian packages; gzipped ones read through gzip)."""
    paths = _files(Path("/usr/lib/node_modules"), ("*.md",), n, skip_tests=False)
    paths += _files(Path("/usr/share/doc"), ("README", "README.*", "*.md", "*.md.gz"), n, skip_tests=False)
    out = []
    for p in paths:
        t = _read(p)
        if t and t.strip():
            out.append((str(p), t))
    return out


def people_spans(python: str | None, texts: list[str]) -> list[list[tuple[int, int]]]:
    """People's full names in each text (benchmarks/label_people.py run by `python`), or none."""
    if not python:
        return [[] for _ in texts]
    p = subprocess.run([python, str(HERE / "label_people.py")], input=json.dumps(texts), capture_output=True,
                       text=True, check=False)
    if p.returncode != 0:
        raise SystemExit(f"label_people.py failed under {python}: {p.stderr.strip()[-500:]}")
    return [[(a, b) for a, b in spans] for spans in json.loads(p.stdout)]


def changed(scrubber: Scrubber, text: str, people: list[tuple[int, int]] = ()) -> tuple[int, int, int, dict[str, int], list[str]]:
    """(characters changed outside credit lines and people's names, in credit lines, in the
    names outside them, counts, examples)"""
    r = scrubber.scrub_text(text)
    credit = bytearray(len(text))
    pos = 0
    for line in text.splitlines(keepends=True):
        if credit_line(line):
            credit[pos : pos + len(line)] = b"\x01" * len(line)
        pos += len(line)
    person = bytearray(len(text))
    for a, b in people:
        person[a:b] = b"\x01" * (b - a)
    every = [i for i, (a, b) in enumerate(zip(text, r.text)) if a != b]
    in_credit = sum(1 for i in every if credit[i])
    in_person = sum(1 for i in every if person[i] and not credit[i])
    diff = [i for i in every if not credit[i] and not person[i]]
    ex = []
    if diff:
        # the runs of changed characters, with some context
        runs, start, prev = [], diff[0], diff[0]
        for i in diff[1:]:
            if i > prev + 1:
                runs.append((start, prev + 1))
                start = i
            prev = i
        runs.append((start, prev + 1))
        ex = [repr(text[max(0, a - 25) : b + 10]) for a, b in runs[:3]]
    return len(diff), in_credit, in_person, r.counts, ex


def over_scrub(label: str, files: list[tuple[str, str]], n_examples: int, people_python: str | None = None,
               splits: tuple[str, ...] = ("dev", "test")) -> None:
    for split in splits:
        part = [(p, t) for p, t in files if split_of(p) == split]
        if not part:
            continue
        people = people_spans(people_python, [t for _, t in part])
        s = Scrubber(b"overscrub-eval")
        s.disable_text_cache()
        chars = sum(len(t) for _, t in part)
        ch = ch_credit = ch_person = 0
        touched = 0
        kinds: dict[str, int] = {}
        examples: list[str] = []
        t0 = time.process_time()
        for (path, text), spans in zip(part, people):
            n, nc, np_, counts, ex = changed(s, text, spans)
            ch += n
            ch_credit += nc
            ch_person += np_
            touched += n > 0
            for k, v in counts.items():
                kinds[k] = kinds.get(k, 0) + v
            if ex and len(examples) < n_examples:
                examples.append(f"    {Path(path).name}: {counts} {' | '.join(ex)}")
        dt = time.process_time() - t0
        mb = sum(len(t.encode()) for _, t in part) / 1e6
        people_cell = f"{ch_person / chars * 100:.3f} % | {(ch + ch_person) / chars * 100:.4f} % | " if people_python else ""
        print(f"| {label} | {split} | {len(part)} | {chars / 1e6:.2f} M | {ch / chars * 100:.4f} % | {ch_credit / chars * 100:.3f} % | "
              f"{people_cell}{touched / len(part) * 100:.0f} % | "
              f"{', '.join(f'{k} {v}' for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))} | {mb / dt:.2f} |")
        if examples:
            print("\n".join(examples))


def replaced(text: str, spans: list, value: str) -> bool:
    """The planted value is replaced: every letter and digit of it lies inside a span the
    scrubber replaces, so a half-replaced passphrase is a miss (its symbols need not be: a
    substitute keeps each character's class, `!` stays `!`)."""
    i = text.find(value)
    if i < 0:
        return True
    return all(any(s <= k < e for s, e, _ in spans) for k in range(i, i + len(value)) if text[k].isalnum())


def secrets_recall(splits: tuple[str, ...] = ("dev", "test")) -> None:
    for split in splits:
        s = Scrubber(b"overscrub-eval")
        items = generate(split)
        tab: dict[tuple[str, str], list[int]] = {}
        for text, planted, fam, lang in items:
            spans = find_spans(text)
            ok = all(replaced(text, spans, v) for v in planted)
            cell = tab.setdefault((fam, lang), [0, 0])
            cell[0] += ok
            cell[1] += 1
        got, total = sum(a for a, _ in tab.values()), sum(b for _, b in tab.values())
        print(f"\n**secrets, {split} split** ({total} values): recall {got / total:.3f}")
        print("| family | " + " | ".join(LANGS) + " | all |")
        print("|---|" + "---|" * (len(LANGS) + 1))
        for fam in FAMILIES:
            cells = [tab.get((fam, lang)) for lang in LANGS]
            a = sum(c[0] for c in cells if c)
            b = sum(c[1] for c in cells if c)
            print(f"| {fam} | " + " | ".join(f"{c[0]}/{c[1]}" if c else "" for c in cells) + f" | {a / b:.3f} |")
        per_lang = {lang: [sum(tab[(f, lang)][0] for f in FAMILIES if (f, lang) in tab), sum(tab[(f, lang)][1] for f in FAMILIES if (f, lang) in tab)]
                    for lang in LANGS}
        print("| all | " + " | ".join(f"{a / b:.3f}" for a, b in per_lang.values()) + f" | {got / total:.3f} |")
        sentences = chatter(split)
        moved = [t for t in sentences if s.scrub_text(t).text != t]
        print(f"sentences about passwords without one, changed: {len(moved)} of {len(sentences)}"
              + (f" ({', '.join(repr(t) for t in moved)})" if moved else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=120, help="files per code set and of prose (before the dev/test split)")
    ap.add_argument("--examples", type=int, default=0, help="print up to this many changed snippets per set and split")
    ap.add_argument("--people-python", metavar="PY", help="a Python with spaCy and en_core_web_sm: set people's full names apart")
    ap.add_argument("--skip-code", action="store_true", help="prose and secrets only")
    ap.add_argument("--secrets-split", choices=("dev", "test", "both"), default="both",
                    help="which split of the secrets sets to print (dev while tuning: the test split is measured once)")
    ap.add_argument("--split", choices=("dev", "test", "both"), default="both",
                    help="which split of the over-scrub corpora to measure (dev while tuning)")
    a = ap.parse_args()
    pp = a.people_python
    sp = ("dev", "test") if a.split == "both" else (a.split,)
    head = "changed (credit lines and people's names aside)" if pp else "changed (credit lines aside)"
    extra = "changed in people's names (spaCy) | changed (credit lines aside) | " if pp else ""
    print(f"| corpus | split | files | characters | {head} | changed in credit lines | {extra}files touched | "
          "spans by kind | MB/s (cache off) |")
    print("|---|---|---|---|---|---|" + ("---|---|" if pp else "") + "---|---|---|")
    if not a.skip_code:
        code = code_corpus(a.files)
        allcode = [f for fs in code.values() for f in fs]
        for label, files in code.items():
            over_scrub(label, files, a.examples, pp, sp)
        over_scrub("all source code", allcode, 0, pp, sp)
    over_scrub("English prose (package docs)", prose_corpus(a.files * 2), a.examples, pp, sp)
    over_scrub("English prose (npm, Debian docs)", system_prose_corpus(a.files * 2), a.examples, pp, sp)
    secrets_recall(("dev", "test") if a.secrets_split == "both" else (a.secrets_split,))


if __name__ == "__main__":
    main()
