"""Traditional Chinese read as simplified (anonymize/zh_script.py): one character for one, and
simplified text untouched."""

from __future__ import annotations

from shadowreplay.anonymize import zh_script
from shadowreplay.anonymize.zh_script import simplified, traditional


def test_simplified_text_is_left_as_it_is():
    text = "请联系陈大文先生，于是我们著名的乾隆皇帝"  # 于, 著, 乾: simplified text writes them too
    assert simplified(text) is text
    assert simplified("Hello, world") == "Hello, world"


def test_traditional_text_folds_character_for_character():
    assert simplified("請聯繫陳大文先生") == "请联系陈大文先生"
    assert simplified("歐陽娜娜、劉德華、鄭秀文") == "欧阳娜娜、刘德华、郑秀文"
    # in text that writes traditional-only characters, 於 is 于 (at, about)
    assert simplified("關於這件事") == "关于这件事"
    assert simplified("於是") == "於是"  # alone it could be simplified text's surname 於


def test_every_pair_keeps_the_length():
    _, table = zh_script._t2s()
    assert len(table) > 4000
    assert all(len(v) == 1 for v in table.values())
    assert all(len(v) == 1 for v in zh_script._s2t().values())
    text = "".join(map(chr, table))
    assert len(simplified(text)) == len(text)
    only = zh_script._t2s()[0]
    assert only.sum() > 4000 and not any(only[ord(c)] for c in simplified(text))  # nothing traditional-only is left


def test_traditional_prefers_the_usual_form_and_keeps_shared_characters():
    assert traditional("陈伟华") == "陳偉華"
    assert traditional("于后余") == "于后余"  # traditional text writes these too
    assert traditional("Carla") == "Carla"
