"""Korean names in Hangul and Japanese names (kanji, kana): found in free text and JSON values,
replaced in their own script, every mention of them too, and name-free text left alone."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from faker import Faker

from shadowreplay.anonymize import Scrubber
from shadowreplay.anonymize.charclass import fill, is_hangul, is_kana
from shadowreplay.anonymize.detectors import PERSON, find_spans
from shadowreplay.anonymize.keyedrandom import KeyedRandom
from shadowreplay.anonymize.names import looks_like_name

KEY = b"names-ja-ko-test-key"
DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def scrubber() -> Scrubber:
    return Scrubber(KEY)


def left(original: str, scrubbed: str, names: list[str]) -> list[str]:
    """The planted names (and their parts of two characters or more) still in the scrubbed text."""
    assert len(scrubbed) == len(original)
    return [p for n in names for p in {n, *n.split()} if len(p) >= 2 and p in scrubbed]


def missed(scrubber: Scrubber, cases) -> tuple[float, list[str]]:
    """The share of (text, name) cases whose name survives scrubbing, and the first texts that
    kept theirs."""
    cases = list(cases)
    kept = [text for text, name in cases if left(text, scrubber.scrub_text(text).text, [name])]
    return len(kept) / len(cases), kept[:10]


# ---------------------------------------------------------------- Korean
KO_FORMS = [
    "{a} 씨, 주문하신 상품이 발송되었습니다.",
    "안녕하세요 {a} 고객님, 문의 주셔서 감사합니다.",
    "{a}님께서 요청하신 자료를 보내 드립니다.",
    "제 이름은 {a}입니다. 잘 부탁드립니다.",
    "담당자: {a}",
    "이름: {a} / 연락처는 따로 드릴게요",
    "저는 {a}이에요.",
    "{a} 선생님이 오늘 수업을 하셨다.",
    "{a} 과장님께 보고서를 전달해 주세요.",
    "{a}씨는 내일 출근하나요?",
]
# a listed surname and given name stand alone, with a particle glued on
KO_ALONE = ["어제 {a}가 회의에 늦었다.", "{a}는 다음 주에 발표한다.", "{a}의 생일 선물을 샀어요.", "{a}와 점심을 먹었다."]
# given names in no list: found only beside an honorific or cue
KO_UNLISTED_GIVEN = ["도율", "서하", "윤슬", "채율", "하람", "시안", "이든", "다온"]


def test_korean_names_beside_honorifics_and_cues(scrubber):
    fake = Faker("ko_KR")
    fake.seed_instance(7)
    rnd = random.Random(7)
    # half Faker's names, half a surname with a given name in no list
    names = [fake.name() if i % 2 else fake.last_name() + rnd.choice(KO_UNLISTED_GIVEN) for i in range(400)]
    rate, examples = missed(scrubber, ((KO_FORMS[i % len(KO_FORMS)].format(a=a), a) for i, a in enumerate(names)))
    assert rate <= 0.02, examples


def test_korean_full_names_alone(scrubber):
    fake = Faker("ko_KR")
    fake.seed_instance(11)
    names = [fake.name() for _ in range(200)]
    rate, examples = missed(scrubber, ((KO_ALONE[i % len(KO_ALONE)].format(a=a), a) for i, a in enumerate(names)))
    assert rate <= 0.05, examples


def test_korean_given_name_alone_after_the_full_name(scrubber):
    text = "제 이름은 이서연입니다. 서연이라고 불러 주세요. 이서연의 주소는 서울입니다."
    out = scrubber.scrub_text(text).text
    assert "서연" not in out
    i, j, k = text.index("이서연"), text.index("서연이라고"), text.rindex("이서연")
    full, given = out[i : i + 3], out[j : j + 2]
    assert full[1:] == given and out[k : k + 3] == full  # the given name gets its substitute in the full name
    assert all(is_hangul(c) for c in full)


@pytest.mark.parametrize("text,names", [
    ("박정희 대통령이 왔다.", ["박정희"]),  # a famous name is a frequent word too; a title beside it
    ("김장관이 말했다. 이씨는 웃었다.", ["김", "이"]),  # a surname with a title glued on
    ("최 영사가 왔다.", ["최"]),
    ("현우는 웃었다. 지영이가 왔다.", ["현우", "지영"]),  # a listed given name alone, with a particle
    ("한승원이 말했다.", ["한승원"]),  # a common surname and two given syllables that make no word
    ("노소영씨에 대한 변호사법위반", ["노소영"]),  # a locative particle after the honorific
    ("이순신 장군의 얘기", ["이순신"]),  # a title of rank
    ("김일병이 박기자를 돌아보았다.", ["김", "박"]),  # a surname with a rank glued on
    ("그때 세호 아버지가 왔다.", ["세호"]),  # a given name in no list before a kinship word
    ("승주의 책가방 속에는 한", ["승주"]),  # a given name in no list with a particle
    ("심사위원장 제임스 해리스는 말했다.", ["제임스 해리스"]),  # a Western given name and a second word
    ("특히 고르바초프는 옐친이", ["고르바초프"]),  # a transliterated name: 프, a cluster no Korean word has
    ("미야자와 수상의 발언", ["미야자와"]),  # a name in no list before a title
])
def test_korean_forms(text, names):
    assert [text[sp.start : sp.end] for sp in find_spans(text)] == names


@pytest.mark.parametrize("text", [
    "오늘 날씨가 좋네요. 아저씨가 정수기를 고쳤다.", "이번 주에 하느님께 기도했다.", "아가씨, 이 길이 맞나요?",
    "사장님께서 손님에게 인사했다.", "선생님이 학생들에게 숙제를 냈다.", "고객님, 주문이 완료되었습니다.",
    "형식 지정자를 사용해야 합니다.", "가시성 한정자는 pub입니다.", "정말 감사합니다 고객님", "소중한 고객님께 알려 드립니다.",
    "이 함수는 정수를 반환합니다.", "한국어 문서를 번역했습니다.",
    # a surname syllable before a common ending, beside a title; a word before one
    "하지만 선생님은 동의하지 않았다.", "전 장관이 기자회견을 열었다.", "여선생님이 오셨다.",
    "우리 팀장님이 보고서를 검토하셨습니다.", "보람이 있었다.",
    # loanwords and compounds with the clusters of transliterated names; a number and a counter
    "프로그램을 설치했다.", "스크린쿼터를 지켜야 한다.", "녹화테이프를 틀었다.", "자랑스럽게 말했다.",
    "만원이면 충분하다.", "성균관대 교수가 말했다.", "제임스 본드 영화",
])
def test_korean_without_names_is_kept(scrubber, text):
    assert scrubber.scrub_text(text).text == text


# ---------------------------------------------------------------- Japanese
JA_FORMS = [
    "{a}様、ご注文ありがとうございます。",
    "{a}さんは明日来ます。",
    "私は{a}と申します。よろしくお願いします。",
    "お名前：{a}",
    "担当の{a}です。",
    "{a}先生に相談しました。",
    "{a}氏が会見で述べた。",
    "昨日{a}さんからメールが届きました。",
]


def test_japanese_names_beside_honorifics_and_cues(scrubber):
    fake = Faker("ja_JP")
    fake.seed_instance(3)
    names = []
    for i in range(400):
        name = fake.name()  # 山田 花子: written with and without the space
        names.append(fake.kana_name() if i % 5 == 4 else name if i % 3 == 0 else name.replace(" ", ""))  # ヤマダ ハナコ
    rate, examples = missed(scrubber, ((JA_FORMS[i % len(JA_FORMS)].format(a=a), a) for i, a in enumerate(names)))
    assert rate <= 0.02, examples


@pytest.mark.parametrize("text,names", [
    ("山田花子の予約を確認してください。", ["山田花子"]),  # listed surname and given name, no honorific
    ("鈴木一郎が担当します。", ["鈴木一郎"]),
    ("山田さゆりちゃんと佐々木健太くん", ["山田さゆり", "佐々木健太"]),
    ("スミスさんとジョン・ブラウン様", ["スミス", "ジョン・ブラウン"]),
    ("佐藤さんに聞いてください", ["佐藤"]),
    ("田中部長が承認しました。", ["田中"]),
    ("鈴原さんは来ません。", ["鈴原"]),  # a surname in no list, before an honorific
    # news: a title after the name, its reading or age in brackets, a foreign name in katakana
    ("石原知事が会見した。", ["石原"]),
    ("馬渕健一（まぶち・けんいち）さんが亡くなった。", ["馬渕健一", "まぶち・けんいち"]),
    ("中村文則(27)が受賞した。", ["中村文則"]),
    ("田中幹子のヒットで先制した。", ["田中幹子"]),
    ("リチャード・ストールマンは述べた。", ["リチャード・ストールマン"]),
    ("菊間千乃アナウンサーが出演した。", ["菊間千乃"]),
])
def test_japanese_forms(scrubber, text, names):
    assert left(text, scrubber.scrub_text(text).text, names) == []
    assert [text[sp.start : sp.end] for sp in find_spans(text)] == names  # the names, nothing else


# the morphological analyser (the ja extra, which the tests install): names in no list and
# beside no cue, a title after a place; a name heading a company's or a prize's name is none
@pytest.mark.parametrize("text,names", [
    ("ストールマンはこの州最高裁命令に反対した。", ["ストールマン"]),
    ("本名はドルゴルスレン・ダグワドルジ。", ["ドルゴルスレン・ダグワドルジ"]),
    ("本名カロヤン・ステファノフ・マハリャノフ。", ["カロヤン・ステファノフ・マハリャノフ"]),
    ("石原慎太郎東京都知事の発言が波紋を呼んだ。", ["石原慎太郎"]),
    ("2004年には合田正人仏文学科教授が大学の決定に抗議していた。", ["合田正人"]),
    ("藤本製薬の株価が上がった。", []),
    ("芥川賞と直木賞の選考会が開かれた。", []),
    ("ランゲル・フィヨルド（ノルウェー）を訪れた。", []),
])
def test_japanese_names_the_analyser_finds(scrubber, text, names):
    assert [text[sp.start : sp.end] for sp in find_spans(text) if sp.kind == PERSON] == names


def test_japanese_surname_and_given_name_alone_after_the_full_name(scrubber):
    text = "山田花子様、ご予約ありがとうございます。山田様のお部屋は三階です。花子様へのお花も届いています。"
    out = scrubber.scrub_text(text).text
    assert "山田" not in out and "花子" not in out
    sub = out[:4]
    i, j = text.index("山田様"), text.index("花子様へ")
    assert out[i : i + 2] == sub[:2] and out[j : j + 2] == sub[2:]  # each part keeps its substitute


@pytest.mark.parametrize("text", [
    "社長さんと店員さんがお客さんに挨拶した。皆さん、こんにちは。", "お客様各位", "神様にお願いした。", "担当者様へ",
    "営業部長が会議に出た。", "運転手さんに道を聞いた。", "パパさんとママさんの集まり", "東京都新宿区で会議があります。",
    "ライブラリと同じ名前のモジュールにインポートします。", "周辺の定義を確認して、寿命を延ばす段階です。",
    "福島県の天気は晴れです。",
    # a title inside a word, a run ending in a word, a country before a title, joined katakana words
    "全英オープンゴルフ選手権大会が始まった。", "日本同様、台湾でも雨です。", "自由契約選手となった。",
    "イスラエル首相が会見した。", "ファイル・ディレクトリを作ります。",
])
def test_japanese_without_names_is_kept(scrubber, text):
    assert scrubber.scrub_text(text).text == text


# ---------------------------------------------------------------- both
@pytest.mark.parametrize("lang", ["ko", "ja"])
def test_technical_text_is_left_alone(lang):
    """Rust by Example's Korean and Japanese pages (name-free prose and code comments): no span
    in their scripts is taken for a person, and under 0.2 % of characters at all."""
    text = (DATA / f"rust_by_example_{lang}.txt").read_text(encoding="utf-8")
    assert len(text) > 5000
    changed = 0
    for para in text.split("\n\n"):
        for sp in find_spans(para):
            if sp.kind == PERSON:
                name = para[sp.start : sp.end]
                assert not any(is_hangul(c) or is_kana(c) for c in name), name
                changed += len(name)
    assert changed / len(text) < 0.002


@pytest.mark.parametrize("body,names", [
    ({"name": "김민수"}, ["김민수"]),
    ({"customer": "박 지영"}, ["박", "지영"]),
    ({"patient_name": "山田花子"}, ["山田花子"]),
    ({"name": "スズキ・イチロウ"}, ["スズキ", "イチロウ"]),
    ({"name": "さゆり"}, ["さゆり"]),
    ({"氏名": "鈴原 美咲", "이름": "도율"}, ["鈴原", "美咲", "도율"]),  # keys in the language of the value
    ({"messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "lookup_customer", "arguments": json.dumps({"name": "최동현", "customer": "鈴木一郎"}, ensure_ascii=False)}}]}]},
     ["최동현", "鈴木一郎"]),
])
def test_json_values_under_name_keys(scrubber, body, names):
    raw = json.dumps(body, ensure_ascii=False)
    r = scrubber.scrub_body(raw.encode(), "application/json")
    for n in names:
        if len(n) >= 2:
            assert n not in r.text
    assert r.counts["person"] >= 1
    assert json.loads(r.text).keys() == body.keys()


@pytest.mark.parametrize("value", ["검색", "날씨", "テスト", "データ", "ユーザー", "検索", "get_weather"])
def test_name_keys_keep_what_is_no_name(value):
    assert not looks_like_name(value)


def test_substitutes_keep_script_and_length(scrubber):
    for name in ["김민수", "남궁민", "山田花子", "佐々木健太", "スミス", "山田さゆり", "ジョン・ブラウン"]:
        text = f"{name}様、{name} 씨"
        out = scrubber.scrub_text(text).text
        sub = out[: len(name)]
        assert sub != name and len(out) == len(text)
        for c, d in zip(name, sub):
            assert is_hangul(c) == is_hangul(d) and is_kana(c) == is_kana(d), (name, sub)
            if c in "・ ":
                assert d == c
    # deterministic under one key, different under another
    assert Scrubber(KEY).scrub_text("김민수 씨").text == scrubber.scrub_text("김민수 씨").text
    assert Scrubber(b"another-key").scrub_text("김민수 씨").text != scrubber.scrub_text("김민수 씨").text


def test_fill_keeps_hangul_and_kana_in_their_script():
    text = "한국어テキストのひらがな"
    out = fill(text, KeyedRandom(b"\x01" * 32))
    assert len(out) == len(text) and out != text
    for c, d in zip(text, out):
        assert is_hangul(c) == is_hangul(d)
        assert ("\u3041" <= c <= "\u3096") == ("\u3041" <= d <= "\u3096")
        assert ("\u30a1" <= c <= "\u30fa") == ("\u30a1" <= d <= "\u30fa")
