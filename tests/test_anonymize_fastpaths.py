"""The name detector's hand-written fast paths, each against its rule written as a regular
expression (the oracle) on random text: mention_spans (the other mentions of a name found once,
located with str.find and checked at their edges), the word before a candidate, and whether a
line looks like source code."""

from __future__ import annotations

import random
import re

import pytest

from shadowreplay.anonymize.gazetteer import ENGLISH_WORDS
from shadowreplay.anonymize import names
from shadowreplay.anonymize.names import _code_line, _prev_word, mention_spans


def oracle(text: str, words: set[str], json_text: bool) -> list[tuple[int, int]]:
    cjk = sorted((w for w in words if "\u4e00" <= w[0] <= "\u9fff"), key=len, reverse=True)
    latin = sorted((w for w in words if w not in cjk), key=len, reverse=True)
    folded = [re.escape(w) for w in latin if w.lower() not in ENGLISH_WORDS]
    plain = [re.escape(w) for w in latin if w.lower() in ENGLISH_WORDS]
    before, after = r"(?<![\w\-.@/\\#$%&*+=|~^`])", r"(?![\w\-(@/\\]|\.\w)"
    if json_text:
        before = r"(?:(?<=(?<!\\)\\[nrtbf])|(?<=(?<!\\)\\u[0-9a-fA-F]{4})|" + before + ")"
        after = r"(?![\w\-(@/]|\.\w|\\\\)"
    alts = []
    if folded:
        alts.append(before + "(?i:" + "|".join(folded) + ")" + after)
    if plain:
        alts.append(before + "(?:" + "|".join(plain) + ")" + after)
    if cjk:
        alts.append("|".join(map(re.escape, cjk)))
    return [m.span() for m in re.finditer("|".join(alts), text)] if alts else []


def test_edges_case_and_overlaps():
    words = {"Lena", "Andersson", "Will", "王芳", "王芳芳"}
    text = "lena.x LENA Lena's obj.Lena Lena( Will will Andersson-Lee 王芳芳说王芳 @Lena Lena."
    got = [text[s:e] for s, e in mention_spans(text, words)]
    # folded for a name that is no English word, exact for one that is (will is a verb)
    assert got == ["LENA", "Lena", "Will", "王芳芳", "王芳", "Lena"]


def test_json_escapes_count_as_the_decoded_characters():
    words = {"Lena"}
    text = r'"\nLena\n" "\u00e9Lena" "\\Lena" "Lena\\\\x" "\\nLena"'
    got = mention_spans(text, words, json_text=True)
    assert [text[s - 2 : e] for s, e in got][:2] == [r"\nLena", "e9Lena"]
    assert len(got) == 2  # after an escaped backslash (\\Lena, \\nLena) or before one: no mention


@pytest.mark.parametrize("json_text", [False, True])
def test_agrees_with_the_rules_written_as_a_regex(json_text):
    rnd = random.Random(7 + json_text)
    words = {"Lena", "Ann", "Anna", "Grace", "Nakamura", "王芳", "欧阳娜娜"}
    alphabet = ["Lena", "lena", "LENA", "Ann", "Anna", "anna", "Grace", "grace", "Nakamura", "王芳", "欧阳娜娜", "芳",
                " ", " ", ".", "-", "_", "(", "@", "/", "\\", "\\n", "\\u00e9", "\\\\", "x", "9", "'s", "\n", "\""]
    for _ in range(3000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 14)))
        assert mention_spans(text, words, json_text) == oracle(text, words, json_text), text


def test_many_chinese_names_are_found_in_one_pass_as_one_by_one():
    """Past _MANY_CJK Chinese names (a body listing thousands) mention_spans scans the text once
    instead of searching for each name: the same mentions, the oracle's."""
    rnd = random.Random(5)
    surnames, given = "王李张刘陈杨赵黄周吴欧", "芳伟娜强磊军洋勇艳杰娟涛明超阳"
    cjk = {s + g for s in surnames for g in given[:3]} | {s + g + h for s in surnames[:4] for g in given[3:6] for h in given[6:8]}
    assert len(cjk) > names._MANY_CJK
    words = cjk | {"Lena", "Nakamura"}
    alphabet = sorted(cjk) + list(surnames + given) + ["Lena", "lena", " ", "的", "，", "x", "\n"]
    for _ in range(300):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 40)))
        assert mention_spans(text, words) == oracle(text, words, False), text


@pytest.mark.parametrize("json_text", [False, True])
def test_many_latin_names_are_looked_for_as_one_by_one(json_text):
    """Past _MANY_LATIN name words (a body listing a thousand names) mention_spans looks up each
    run of letters and digits instead of searching for each word: the same mentions, the
    oracle's, hyphenated and apostrophed names (still searched for) among them."""
    from faker import Faker

    rnd = random.Random(11 + json_text)
    fake = Faker("en_US")
    fake.seed_instance(3)
    latin = {fake.first_name() for _ in range(60)} | {fake.last_name() for _ in range(60)}
    latin |= {"Will", "Grace", "Whitfield-Barnes", "O'Brien", "Ann", "Anna"}
    latin = {w for w in latin if names._listed(w)}
    assert len(latin) > names._MANY_LATIN
    words = latin | {"王芳"}
    pool = sorted(latin)
    alphabet = pool + [w.lower() for w in pool[:20]] + [w.upper() for w in pool[20:30]] + [
        "will", "Whitfield", "Barnes", "O'", " ", " ", ".", "-", "_", "(", "@", "/", "\\", "\\n", "\\u00e9",
        "\\\\", "x", "9", "'s", "\n", "\"", "王芳"]
    for _ in range(1500):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 30)))
        assert mention_spans(text, words, json_text) == oracle(text, words, json_text), text


def test_a_rare_word_taken_for_a_name_is_not_searched_elsewhere():
    # (a capitalised word in no name list may be an identifier: class Iterable)
    assert mention_spans("Iterable iterable", {"Iterable"}) == []


PREV_WORD = re.compile(r"([A-Za-z]+)(\.?)[ \t]*[:,]?[ \t]*$")
DOTTED = {"mr", "mrs", "ms", "mx", "dr", "prof", "attn", "cc"}  # after a full stop only these count


def test_prev_word_agrees_with_its_regex():
    rnd = random.Random(11)
    alphabet = ["Dear", "hi", "x", "Mr", "Attn", ".", ",", ":", " ", "\t", "\n", "9", "\u00e9", "said", "a", "customer"]
    for _ in range(20000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 14)))
        s = rnd.randint(0, len(text))
        m = PREV_WORD.search(text, max(0, s - 24), s)
        want = m.group(1).lower() if m and (not m.group(2) or m.group(1).lower() in DOTTED) else ""
        assert _prev_word(text, s) == want, (text, s)
    assert _prev_word("Thanks, said the customer:  ", 28) == "customer"
    assert _prev_word("Ask the agent. Such", 15) == ""  # a sentence ends: no cue
    assert _prev_word("Attn. Smith", 6) == "attn"


CODE_LINE = re.compile(
    r"^[ \t]*(?:def |class |import |from [\w.]+ import|return\b|raise |assert |if |for |while |elif |else:|try:|except\b|finally:"
    r"|with |async |await |@\w|#|//|/\*|\*|[{}\[\]<]|(?:const|let|var|function|public|private|static|void|int|fn|func|pub|use|package|type|interface) )"
    r"|[;{}\[\](,]\s*$|\S:[ \t]*$|[=!<>]=|=>|->|\w\(|\)\s*[:{]?\s*$|^\s*\w[\w.]*\s*[+\-*/|&]?=\s*\S|[\"'][A-Z]\w*[\"'],|::\w"
)


def test_code_line_agrees_with_its_regex():
    rnd = random.Random(5)
    alphabet = ["def ", "if ", "x", "Foo", " ", "\t", "(", ")", ":", "=", "==", "-", ">", "<", "!", ",", ";", "{", "}", "[",
                "]", "\"", "'", "A", "_", ".", "\r", "\x0c", "\u00e9", "#", "*", "/", "return", "a.b", "+", "|", "&"]
    for _ in range(30000):
        line = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 10)))
        assert _code_line(line) == (CODE_LINE.search(line) is not None), line
    assert _code_line("    tokenizer = BertTokenizer.from_pretrained(name)")
    assert not _code_line("Carla met Sandra in Lisbon last week")
