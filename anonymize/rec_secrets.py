"""Recognizers of secrets: machine keys by their format, and any value a secret word declares.

* `KeyFormats`: known key formats (`sk-`, `AKIA`, JWTs, `ghp_`, PEM private key bodies, ...),
  strong shapes found by a literal with `str.find` and matched at that position only.
* `UrlPasswords`: the password of a URL (`postgres://admin:S3cret!@db`), a strong shape;
  a placeholder (`password`, `<pass>`, `${DB_PASS}`) fails its validator.
* `CommandPasswords`: passwords on a command line (`mysql -u root -pX`, `sshpass -p X`,
  `curl -u user:X`, `redis-cli -a X`), strong shapes.
* `DeclaredSecrets`: values a secret word declares, in any language whose words are in
  data/context-password.txt, context-key.txt, context-pin.txt and context-username.txt: quoted
  or backticked after the word (`his password "X"`, `密码“X”`, `パスワード「X」`), after a copula
  (`my password is X`, `Mein Passwort lautet X`, `パスワードはXです`), a passphrase's words, a
  PIN or one-time code's digits, the login beside a password (`username X, password Y`,
  `a@b.example / X`); and config lines, whose key's name says password/secret/token/key
  (`DB_PASSWORD=X`, `export PGPASSWORD='X'`, `SECRET_KEY = "..."`, `"password": "X"`,
  `password: X`). Each is a weak shape found right after its context word; its validator fails
  for what is no value: code (`None`, `getpass()`, `os.environ[...]`, `raise`), a placeholder,
  a plain word after a copula (`password is required`), and, for keys and tokens, a value
  that does not look random.

The decision is evidence.decide's, as for every kind."""

from __future__ import annotations

import functools
import keyword
import math
import re

import ahocorasick

from .gazetteer import ENGLISH_WORDS
from .evidence import FAIL, FOUND, NONE, PASS, STRONG, WEAK, Candidate, Doc, alternation, context_words
from .spans import EMAIL, SECRET

# ---------------------------------------------------------------- known key formats
_SK = re.compile(r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}")  # OpenAI, Anthropic
_AWS = re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])")
_GITHUB = re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}")
_STRIPE = re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}")  # secret and restricted keys
# (literal, search the lower-cased text?, a character the text must contain for it to matter, the pattern)
_SECRET_FIND = (
    ("sk-", True, "-", _SK),
    ("AKIA", False, "", _AWS),
    ("ASIA", False, "", _AWS),
    ("eyJ", False, "", re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),  # JWT
    ("ghp_", True, "_", _GITHUB), ("gho_", True, "_", _GITHUB), ("ghs_", True, "_", _GITHUB),
    ("ghu_", True, "_", _GITHUB), ("ghr_", True, "_", _GITHUB),
    ("github_pat_", False, "_", re.compile(r"github_pat_[A-Za-z0-9_]{40,}")),
    ("xox", True, "-", re.compile(r"xox[abprs]-[A-Za-z0-9\-]{10,}")),  # Slack
    ("bearer", True, "", re.compile(r"(?:Bearer|bearer|BEARER)[ \t]{1,4}[A-Za-z0-9._~+/=\-]{8,}")),
    ("authorization", True, "", re.compile(r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+([^\s\x00\"']{6,})")),
    ("AIza", False, "", re.compile(r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")),  # Google (Gemini) API keys
    ("sk_", False, "_", _STRIPE), ("rk_", False, "_", _STRIPE),
    ("hf_", False, "_", re.compile(r"hf_[A-Za-z0-9]{30,}")),  # Hugging Face
    ("glpat-", False, "-", re.compile(r"glpat-[A-Za-z0-9_\-]{20,}")),  # GitLab
    ("npm_", False, "_", re.compile(r"npm_[A-Za-z0-9]{36}")),
    ("gsk_", False, "_", re.compile(r"gsk_[A-Za-z0-9]{40,}")),  # Groq
    ("r8_", False, "_", re.compile(r"r8_[A-Za-z0-9]{30,}")),  # Replicate
    ("SG.", False, ".", re.compile(r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}")),  # SendGrid
    # a PEM or PGP private key: the lines of its body, base64 or a header (Proc-Type: ...,
    # Version: ...), the BEGIN and END lines kept; also when cut short before its END line
    ("-----BEGIN ", False, "-", re.compile(r"-----BEGIN [A-Z0-9 ]{0,20}PRIVATE KEY(?: BLOCK)?-----[ \t]*(?:\r?\n|\\n)"
                                             r"((?:(?:[A-Za-z][A-Za-z\-]*:[ \t][^\r\n\\]*|[A-Za-z0-9+/=]*)(?:\r?\n|\\n))*"
                                             r"[A-Za-z0-9+/=]{4,})(?=[ \t]*(?:\r?\n|\\n|$|[\"'`]))")),
)
_KEYWORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


class KeyFormats:
    name = "key formats"
    kinds = (SECRET,)

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        if not doc.letters:
            return
        text, lo = doc.text, doc.lo
        has = {"-": "-" in text, "_": "_" in text, ".": "." in text, "": True}
        for kw, in_lower, needs, pat in _SECRET_FIND:
            if not has[needs]:  # cheap gate: sk-/xox- need a dash, gh?_ an underscore
                continue
            hay = lo if in_lower else text
            p = hay.find(kw)
            while p != -1:
                if p == 0 or text[p - 1] not in _KEYWORD_CHARS:
                    m = pat.match(text, p)
                    if m and not (kw == "bearer" and _word_token(m.group().split()[-1])):  # `bearer authentication`
                        out.append(Candidate(m.start(pat.groups), m.end(pat.groups), SECRET, STRONG))
                p = hay.find(kw, p + 1)


_PARTICIPLE_COMPOUND = re.compile(r"[a-z]+\d*(?:-[a-z]+\d*)*-([a-z]+(?:ed|ing))")


def _participle_compound(value: str) -> bool:
    """`base64-encoded`, `url-encoded`, `salted-and-hashed`: how a password is kept, not one."""
    m = _PARTICIPLE_COMPOUND.fullmatch(value.rstrip(".,;:!?"))
    return m is not None and m.group(1) in ENGLISH_WORDS


def _word_token(token: str) -> bool:
    """An English word, perhaps behind a sign (`authentication`, `#comment`): no token's value."""
    core = token.strip("#@$%&*!.,;:-_/'\"`")
    return core.isalpha() and core.lower() in ENGLISH_WORDS


# ---------------------------------------------------------------- what is no secret value
_PLACEHOLDERS = frozenset(
    "password passwd pass pwd secret token key apikey api_key changeme xxx xxxx xxxxxx xxxxxxxx none null nil "
    "undefined true false yes no empty example placeholder redacted hidden masked required optional string str "
    "your_password yourpassword mypassword your-password value foo bar baz test".split()
)
_CODE_WORDS = frozenset(keyword.kwlist) | frozenset(
    "none null nil undefined true false self cls this str int bytes bool float dict list tuple object any optional "
    "callable await async raise return pass yield lambda new var let const def".split()
)
_PLACEHOLDER_SHAPE = re.compile(r"[*xX•.#_\-]+|<[^<>]*>|\{\{?[^{}]*\}\}?|\$\{?(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)\}?|%\(?[a-z_]*\)?[sd]|\[[^\[\]]*\]|\.\.\.|…")
_DIGIT_IN_WORD = re.compile(r"[A-Za-z][0-9]+[A-Za-z]")
_CODE_VALUE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def placeholder(v: str) -> bool:
    """A value that stands for a secret rather than being one: `***`, `<password>`, `${PASS}`,
    `%s`, `password`, `changeme`, `None`."""
    return v.lower().strip(" '\"`") in _PLACEHOLDERS or _PLACEHOLDER_SHAPE.fullmatch(v) is not None


def code_value(text: str, s: int, e: int, assigned: bool = True) -> bool:
    """The value at text[s:e] is an expression, not a literal: a call (`getpass()`), an
    attribute path (`os.environ.get`), an index (`env["X"]`), a keyword or builtin (`None`,
    `raise`, `str`), a variable or constant name (`DB_PASSWORD`, `password_env`)."""
    v = text[s:e]
    if v.lower() in _CODE_WORDS or (v[:1] == "_" and v[1:].isidentifier()):
        return True  # (`_PasswordType`: a private name)
    if not assigned:  # after a copula in prose (`is`, `es`, `lautet`) only a keyword is code
        return False
    nxt = text[e : e + 1]
    if nxt in ("(", "[") or (nxt == "." and (text[e + 1 : e + 2].isalnum() or text[e + 1 : e + 2] == "_")):
        return True
    if _CODE_VALUE.fullmatch(v) and not v.startswith("eyJ") and not _DIGIT_IN_WORD.search(v) and not any(
            map(_typed_at_random, v.split("."))):
        return True  # os.environ.get, settings.DB_PASSWORD (not rR.xg29jt: digits inside a word; not do.XT_5fyGzsnN)
    # snake_case names and SCREAMING_SNAKE constants (password_env: DB_PASSWORD) are references
    return v.isidentifier() and "_" in v and (v.lower() == v or v.upper() == v) and not any(c.isdigit() for c in v)


def _typed_at_random(part: str) -> bool:
    """A part of a dotted value with digits and both cases, the case changing three times or
    more (`XT_5fyGzsnN`): typed at random, not a name in code (`DB_PASSWORD_2`, `getPassword`)."""
    if len(part) < 8 or not any(c.isdigit() for c in part) or part.lower() == part or part.upper() == part:
        return False
    letters = [c for c in part if c.isalpha()]
    return sum(a.isupper() != b.isupper() for a, b in zip(letters, letters[1:])) >= 3


def _entropy(s: str) -> float:
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_CAMEL_WORDS = re.compile(r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*")


def looks_random(value: str) -> bool:
    """A key or token rather than a word: 8+ characters with digits or mixed case, entropy >= 3."""
    if len(value) < 8:
        return False
    has_digit = any(c.isdigit() for c in value)
    if not has_digit and _CAMEL_WORDS.fullmatch(value):
        return False  # TokenCredential, Encryption: words, a type's name
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return (has_digit or mixed) and _entropy(value) >= 3.0


def password_like(value: str) -> bool:
    """What a user types as a password, rather than a word of the sentence: a digit, a symbol,
    or a capital after the first letter (`hunter2`, `Tr0ub4dor&3`, `sommerSonne`)."""
    return any(c.isdigit() or not (c.isalnum() or c in "'’-") for c in value) or any(c.isupper() for c in value[1:])


# ---------------------------------------------------------------- URLs and command lines
# (a password may hold an `@` a user did not percent-encode: it runs to the last `@` before the host)
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{1,15}://[^\s:/@\x00\"'<>]{0,64}:([^\s/\x00\"'<>]{1,128})@(?=[^\s/@\x00\"'<>]*(?:[/?#\s\"'<>]|$))")


class UrlPasswords:
    name = "URL passwords"
    kinds = (SECRET,)

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        text = doc.text
        if "://" not in text or "@" not in text:
            return
        for m in _URL_PASSWORD.finditer(text):  # postgres://admin:S3cretPass!@db: the password
            v = m.group(1)
            out.append(Candidate(m.start(1), m.end(1), SECRET, STRONG, FAIL if placeholder(v) else NONE))


# One pattern per command form, each tried only where one of its literals is in the lower-cased
# text (an alternation of all of them would be tried at every position of every text); the
# value is the group `v`. `prose`: a word of prose may follow the flag instead of a value
# (`-u root -p prompts for it`, `zip -P is insecure`), so a short or English word there fails.
_COMMANDS: tuple[tuple[tuple[str, ...], bool, re.Pattern], ...] = tuple(
    (lits, prose, re.compile(p)) for lits, prose, p in (
    (("mysql", "mariadb"), False,
     r"(?<![\w-])(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n\x00]*?[ \t]-p(?P<v>['\"]?[^\s\x00\"'`]+['\"]?)"),
    (("sshpass",), True, r"(?<![\w-])sshpass[ \t]+-p[ \t]*(?P<v>[^\s\x00]+)"),
    (("redis-cli",), True, r"(?<![\w-])redis-cli\b[^\n\x00]*?[ \t]-a[ \t]+(?P<v>[^\s\x00]+)"),
    (("curl",), False, r"(?<![\w-])curl\b[^\n\x00]*?[ \t](?:-u|--user)[ \t]+[\"']?[^:\s\x00\"']+:(?P<v>[^\s\x00\"']+)"),
    (("smb", "rpcclient"), False,
     r"(?<![\w-])(?:smbclient|rpcclient|smbmap|smbget)\b[^\n\x00]*?[ \t](?:-U|--user(?:=|[ \t]))[ \t]*[^%\s\x00]+%(?P<v>[^\s\x00]+)"),
    (("sudo",), False,
     r"(?<![\w-])echo[ \t]+(?P<q>[\"']?)(?P<v>[^\s\x00\"'|]{3,})(?P=q)[ \t]*\|[ \t]*sudo[ \t]+(?:-[a-zA-Z]+[ \t]+)*?-[a-zA-Z]*S"),
    (("password-stdin",), False,
     r"(?<![\w-])echo[ \t]+(?P<q>[\"']?)(?P<v>[^\s\x00\"'|]{3,})(?P=q)[ \t]*\|[^\n\x00]*?--password-stdin"),
    (("net user",), False, r"(?<![\w-])net[ \t]+user[ \t]+[^\s\x00/]+[ \t]+(?P<v>[^\s\x00/*][^\s\x00]*)"),
    (("net use",), False, r"(?<![\w-])net[ \t]+use\b[^\n\x00]*?[ \t]/user:[^\s\x00]+[ \t]+(?P<v>[^\s\x00/*][^\s\x00]*)"),
    (("htpasswd",), False,
     r"(?<![\w-])htpasswd[ \t]+-[a-zA-Z]*b[a-zA-Z]*[ \t]+[^\s\x00]+[ \t]+[^\s\x00]+[ \t]+(?P<v>[^\s\x00]+)"),
    # an option whose name holds `pass` (`keytool -storepass X`, `openssl -passin pass:X`)
    (("storepass", "keypass", "-passin", "-passout", "-pass "), True,
     r"(?<![\w-])-(?:store|key)?pass(?:in|out)?[ \t]+(?:pass:)?(?P<v>(?![-<>|&;$])[^\s\x00]+)"),
    # archivers' password flags (`7z x a.7z -pX`, `zip -P X`, `unzip -P X`)
    (("7z",), True, r"(?<![\w-])7z[ar]?\b[^\n\x00]*?[ \t]-p(?P<v>[^\s\x00]+)"),
    (("zip -",), True, r"(?<![\w-])(?:zip|unzip)\b[^\n\x00]*?[ \t]-P[ \t]+(?P<v>[^\s\x00]+)"),
    # a long option that names a password (`--password X`, `--db-password=X`; not a next flag `-v`)
    (("-pass", "-pwd"), True, r"(?<![\w-])--(?:[a-z0-9]+-)*(?:password|passwd|pass|pwd)(?:=|[ \t]+)"
                              r"(?P<v>(?![-<>|&;$])[^\s\x00]+|-(?=[^\s\x00]*[^\w\s\x00-])[^\s\x00]{5,})"),
    # `echo 'root:X' | chpasswd`; `ssh-keygen -p -N X`
    (("chpasswd",), False, r"(?P<q>[\"']?)[\w.\-]+:(?P<v>[^\s\x00\"':]{3,})(?P=q)[ \t]*\|[ \t]*(?:sudo[ \t]+)?chpasswd\b"),
    (("ssh-keygen",), False, r"(?<![\w-])ssh-keygen\b[^\n\x00]*?[ \t]-N[ \t]*(?P<v>[^\s\x00]+)"),
    # a user flag (or a bind DN), flags between, then a password flag and its value (`mongo -u admin
    # -p X`, `sqlcmd -S db -U sa -P X`, `ldapsearch -x -D cn=admin -w X`)
    (("-u ", "-d "), True,
     r"(?<![\w-])-[uUD][ \t]+[^\s\x00-][^\s\x00]*(?:[ \t]+-[A-Za-z](?:[ \t]+[^\s\x00-][^\s\x00]*)?){0,3}?"
     r"[ \t]+-[pPw][ \t]+(?P<v>[^\s\x00-][^\s\x00]*)"),
))


class CommandPasswords:
    name = "command lines"
    kinds = (SECRET,)

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        lo = doc.lo
        for lits, prose, pat in _COMMANDS:
            if not any(lit in lo for lit in lits):
                continue
            for m in pat.finditer(doc.text):
                v = m.group("v").strip("'\"")
                s = m.start("v") + (m.group("v").find(v) if v else 0)
                short = prose and (len(v) < 4 or (v.isalpha() and v.islower() and v in ENGLISH_WORDS))
                out.append(Candidate(s, s + len(v), SECRET, STRONG, FAIL if not v or short or placeholder(v) else NONE))


# ---------------------------------------------------------------- values a secret word declares
_QUOTES = {"'": "'", '"': '"', "`": "`", "\u201c": "\u201d", "\u2018": "\u2019", "\u300c": "\u300d", "\u300e": "\u300f",
           "\u00ab": "\u00bb", "\u201e": "\u201c", "\u201a": "\u2018", "\u2039": "\u203a", "\uff02": "\uff02", "\uff07": "\uff07"}
_OPEN = "".join(_QUOTES)
# where an unquoted value ends: a space, a quote, sentence punctuation followed by a space or
# the end, CJK punctuation, a Japanese copula
_VALUE = re.compile(r"[^\s\x00\"'`“”«»「」『』，。；、！？（）()<>\[\]{}]+")
_TRAIL = ".,;:!?)"
_TRAIL_CJK = ".,;:)"
_DIGITS_CODE = re.compile(r"\d{3,4}[ \-]?\d{2,4}|\d{4,8}")
_CODE_FOR_WORDS = (" to verify", " to confirm", " to sign in", " to log in", " to activate", " to complete", " is your")
_TO_COLON = re.compile(r"[^\n\x00:：.!?]{1,30}[:：][ \t]*")  # a few words or a parenthesis, then a colon
_CLOSING_AFTER = re.compile(r"\d{4,8}[\])）】]")
# a one-time code before what it is for: `Use 469070 to verify your account`, `469070 is your code`
_CODE_FOR = re.compile(r"(?<![\w.,:/\-])(\d{4,8})(?![\w.,:/\-])[ \t]+(?:is[ \t]+your(?:[ \t]+[A-Za-z]+){0,2}[ \t]+(?:code|pin|otp|passcode)\b"
                       r"|to[ \t]+(?:verify|confirm|sign[ \t]in|log[ \t]in|activate|complete)\b)", re.IGNORECASE)
_PAIR_SEP = re.compile(r"[ \t]*(?:/|:|\||,)[ \t]*")


def _latin_alnum(c: str) -> bool:
    """A letter or digit that joins a Latin or Cyrillic word (not a CJK, kana or Hangul one)."""
    return c.isalnum() and c <= "\u04ff"


# German writes a secret word as the head of a compound noun: `Zugangspasswort`, `Adminkennwort`
_COMPOUND_HEADS_T = ("passwort", "kennwort", "code")
_COMPOUND_HEADS = frozenset(_COMPOUND_HEADS_T)
# compounds of `code` that name no secret: `Barcode`, `Quellcode`, `Fehlercode`, `Unicode`
_NOT_SECRET_CODE = re.compile(
    r"(?:bar|quell|fehler|status|programm|maschinen|byte|qr|farb|länder|laender|zeichen|uni|op|shell|zip|post|"
    r"source|pseudo|error|exit|return|country|html|java|x|vs|en|de|trans|geo|area|region|sprach|iso|ansi|ascii|"
    r"morse|binär|binaer|objekt|object|micro|mikro|bytes|steuer|short|key|hash|char|leet|auto|time|colou?r|hex|re|pre|"
    r"dis|gen|mnemo|machine|hdl|bit|tele|telefon|vor|wahl|lan|bank|swift|bic|sort|promo|rabatt|gutschein|voucher|"
    r"coupon|discount|referral|invite|einladungs|dial)$")


def _stems(phrases) -> ahocorasick.Automaton:
    """One automaton of the first four characters of every phrase (its first word's), less those
    another stem starts (`api` finds `apik`): every place a phrase may start, in one pass over
    the text (four times faster here than str.find per stem, or a regular expression)."""
    heads = sorted({re.split(r"[ \-]", p)[0][:4] for p in phrases})
    auto = ahocorasick.Automaton()
    for h in heads:
        if not any(o != h and h.startswith(o) for o in heads):
            # (Latin and Cyrillic stems stand at the start of a word; CJK and kana ones may be glued)
            auto.add_word(h, (len(h) - 1, h[0] <= "\u04ff"))
    auto.make_automaton()
    return auto


def _starts(auto: ahocorasick.Automaton, lo: str) -> list[int]:
    out = set()
    for end, (back, word_start) in auto.iter(lo):
        i = end - back
        if not (word_start and i and (_latin_alnum(lo[i - 1]) or lo[i - 1] == "_")):
            out.add(i)
        elif lo[i - 1].isalpha() and lo.startswith(_COMPOUND_HEADS_T, i):  # `Zugangspasswort`
            out.add(i)
    return sorted(out)


# what makes a password word one for several words (a passphrase): `pass phrase`, `frase
# secreta`, `парольная фраза`, `密码短语`, `助记词`, `合言葉`, `암호 문구`, `mnemonic`, `seed words`
_PHRASE_WORDS = ("phrase", "frase", "фраз", "кодовое слово", "短语", "助记词", "助記詞", "恢复词", "密语", "合言葉", "フレーズ", "ニーモニック",
                 "프레이즈", "문구", "구문", "니모닉", "satz", "mnemon", "мнемони", " words", "wörter", "mots de récup", "palabras", "palavras")


_GLUED = re.compile("[\u3040-\u9fff]")  # kana and CJK: written without a space before


@functools.cache
def _words() -> tuple[re.Pattern, re.Pattern, dict[str, str], frozenset[str], ahocorasick.Automaton]:
    """(the scan over every secret word of every language, the copulas, phrase -> its family
    (password, passphrase, key, pin, username), the passphrase words, where phrases may start)"""
    family: dict[str, str] = {}
    copulas: list[str] = []
    grammar = context_words("password")
    prepositions, qualifiers = grammar.get("preposition", []), grammar.get("qualifier", [])
    for fam in ("seed", "key", "username", "pin", "password"):  # (a later family wins a shared phrase)
        for lang, phrases in context_words(fam).items():
            if lang == "copula":
                copulas += phrases
                continue
            if lang in ("head", "preposition", "qualifier"):  # (grammar: _seed_grammar, between)
                continue
            for p in phrases:
                family[p] = fam
    passphrase = frozenset(p for p in family if any(w in p for w in _PHRASE_WORDS))
    for p in passphrase:
        family[p] = "passphrase"
    # (no lookbehind in the scan: the engine then skips fast to the possible first characters;
    # the boundaries are checked on each hit)
    scan = re.compile(alternation(list(family), bounded=False))
    between = (r"(?:['’]s[ \t]+)?(?:[ \t]+[^\W\d_][\w.]{0,15}(?=[ \t]*(?:[:：=–—]|->)))?"
               r"(?:[ \t]*\([^()\n\x00]{1,30}\))?"  # `seed phrase (keep offline): ...`
               # `パスワード変更後：X`, `비밀번호 변경됨: X`: a short CJK word, a colon, a typed value
               r"(?:[ \t]*[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7a3]{1,4}(?=[ \t]*[:：][ \t]*[!-~])"
               r"|[\u3040-\u30ff\u4e00-\u9fff]{1,8}(?=[ \t]*(?:→|->|=>)[ \t]*[!-~]))?"  # `パスワード変更しました→X`
               r"[ \t\u00a0\u3000]*(?:(?:->|=>|[:：=\-–—→])[ \t\u00a0\u3000]*)?(?:(?:(?:[^\W\d_]{1,12}[ \t]+)?" + alternation(prepositions)
               + r"(?:[ \t]+(?:[^\W\d_]{1,2}['’])?[^\W\d_]{1,12}){1,4}(?:[ \t]+|(?=[:：]|->))"  # `password for the VPN is X`, `de la base de datos es X`
               # a clause or a name between: `password they gave us was X`, `Passwort, das wir
               # bekommen haben, war X`, `phrase de passe GPG est X` (the value then must look typed)
               + r"|(?P<clause>,?[ \t]*(?:_L{1,2}['’])?_L{1,12}(?:,?[ \t]+(?:_L{1,2}['’])?_L{1,12}){0,5}?,?[ \t]+))?".replace("_L", _LATIN_CYRILLIC)
               + alternation(copulas)
               + r"(?:[ \t]+" + alternation([q for q in qualifiers if not _GLUED.match(q)])
               + "|" + alternation([q for q in qualifiers if _GLUED.match(q)]) + ")?"  # `is now X`, `はまだX`
               + r"[ \t\u00a0\u3000]*(?:[:：][ \t\u00a0\u3000]*)?)?")
    return scan, re.compile(between), family, passphrase, _stems(family)


_LATIN_CYRILLIC = "[A-Za-z\u00c0-\u024f\u0400-\u04ff]"  # (a clause's words; CJK and Hangul put clauses first)


# up to two short words between a secret word and a quoted value: `password for root 'X'`,
# `password was "X"`, `密码是“X”`, `비밀번호는 'X'`
_TO_QUOTE = re.compile(r"[ \t\u00a0\u3000:：=\-–—,>→⇒]*(?:[^\W\d_]{1,12}[ \t\u00a0\u3000:：=]*){0,2}?(?<![A-Za-z0-9])(?=[" + re.escape(_OPEN) + "])")  # (not the `'` of `c'est`)
_LETTER_BEFORE = re.compile(r"[^\W\d_]")
_WORD_CHAR = re.compile(r"[\w]")




def _bounded(text: str, lo: str, s: int, e: int, phrase: str) -> bool:
    """A Latin or Cyrillic phrase stands as a whole word (not `spin`, `passenger`); CJK, kana
    and Hangul ones may be glued (`密码是`, `비밀번호는`); a German head may end a compound."""
    if not phrase[:1].isascii() and not ("\u00c0" <= phrase[0] <= "\u04ff"):
        return True
    if s > 0 and (_latin_alnum(lo[s - 1]) or lo[s - 1] == "_"):
        if not (phrase in _COMPOUND_HEADS and lo[s - 1].isalpha()):
            return False
        if phrase == "code":  # `Garagencode`, not `Barcode`, `Unicode`, `FlightStatusCode`
            a = s
            while a > 0 and lo[a - 1].isalpha():
                a -= 1
            if _NOT_SECRET_CODE.match(lo, a, s) or not text[a + 1 : e].islower():
                return False
    return not (e < len(lo) and lo[e].isalpha() and lo[e].isascii() or (e < len(lo) and "\u0400" <= lo[e] <= "\u04ff"))


_PAIR_BEFORE_SLASH = re.compile(r"(?:user|username|login|email|e-mail|id|account|name)[ \t]*$")


class DeclaredSecrets:
    name = "declared secrets"
    kinds = (SECRET,)

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        scan, between, family, _, stems = _words()
        text, lo = doc.text, doc.lo
        if any(w in lo for w in _CODE_FOR_WORDS):
            for m in _CODE_FOR.finditer(text):
                out.append(Candidate(m.start(1), m.end(1), SECRET, WEAK, NONE, FOUND))
        # the scan runs only where a phrase's first four characters stand (str.find is far faster
        # than a regular-expression scan of the whole text)
        starts = _starts(stems, lo)
        if not starts:
            return
        n = len(text)
        covered = 0
        near: list[tuple[int, int, str]] = []
        for i in starts:
            if i < covered:
                continue
            m = scan.match(lo, i)
            if m is None:
                continue
            s, e = m.span()
            phrase = m.group()
            if not _bounded(text, lo, s, e, phrase):
                continue  # (`admin pass` in `admin password`: the next start reads `password`)
            covered = e
            fam = family.get(phrase)
            if fam is None:  # (a phrase matched with other spaces or hyphens)
                fam = family.get(re.sub(r"[ \t\u00a0\-]+", " ", phrase), "password")
            if fam == "seed":  # (`сид-фраза`: no identifier)
                _seed_words(doc, s, out)
                continue
            if e < n and ((text[e] in "_-" and not _PROSE_SUFFIX.match(lo, e)) or (text[e] == "." and e + 1 < n and (text[e + 1].isalnum() or text[e + 1] == "_"))) or (s > 0 and (text[s - 1] in "_." or (text[s - 1] == "-" and not _compound(text, s)))):
                continue  # part of an identifier: the config-line recognizer reads it
            if s > 0 and text[s - 1] == "/" and not _PAIR_BEFORE_SLASH.search(lo, max(0, s - 12), s - 1):
                continue  # a path (`/etc/passwd`), not `username/password`
            if fam != "username" and not (phrase == "code" and s > 0 and lo[s - 1].isalpha()):
                near.append((s, e, fam))  # (`Garagencode ist X` reads on; no quote before it)
            q = _TO_QUOTE.match(text, e)
            nxt = text[e : e + 16].split(None, 1)
            if nxt and nxt[0].lower().strip(":：") in _COMPOUND_NEXT:
                q = None  # `the password hint is 'favourite pet'`: a thing about the password
            if q and q.end() - e <= 24 and "\n" not in text[e : q.end()]:
                self._quoted(doc, q.end(), fam, out)
                continue
            b = between.match(text, e)
            p = b.end()
            if "==" in text[e : p + 1] or "!=" in text[e - 1 : p]:
                continue  # a comparison: `if password == confirm`
            if p >= n:
                continue
            if fam == "pin":
                if p < n and text[p] in "[(（【" and _CLOSING_AFTER.match(text, p + 1):
                    p += 1  # `인증번호 [420096]`
                t = _VALUE.match(text, p) if p > e else None
                if t and not t.group().isdigit() and any(c.isdigit() for c in t.group()) and password_like(t.group()):
                    # `the master code became Garden9684!`: a code of letters and digits, whole
                    out.append(Candidate(p, _trim(text, p, t.end()), SECRET, WEAK, NONE, FOUND))
                    continue
                d = _DIGITS_CODE.match(text, p)
                if phrase in _BARE_CODE:  # `Use code 675783`: a one-time code's six or more digits, right after
                    if not d:  # or after a few words and a colon: `Code zur Anmeldung: 147504`
                        w = _PIN_WORDS.match(text, e)
                        if w and ":" in text[e : w.end()] or w and "：" in text[e : w.end()]:
                            d = _DIGITS_CODE.match(text, w.end())
                        else:  # `código que me mandaron por SMS es 163781`, `код от гаража 353182`
                            w = _code_clause().match(text, e)
                            if w:
                                d = _DIGITS_CODE.match(text, w.end())
                    if d and d.end() - d.start() >= 6 and text[d.start() : d.end()].isdigit() and not (d.end() < n and text[d.end()].isalnum()):
                        out.append(Candidate(d.start(), d.end(), SECRET, WEAK, NONE, FOUND))
                    continue
                if not d:  # `PIN de la tarjeta es 589169`, `Code zur Anmeldung: 147504`: a few words first
                    w = _PIN_WORDS.match(text, e)
                    if w:
                        p = w.end()
                        d = _DIGITS_CODE.match(text, p)
                if d and not (d.end() < n and text[d.end()].isdigit()) and (p > e or text[p - 1] in " \t:：" or _spaced_or_cjk(text, e, phrase)):
                    out.append(Candidate(d.start(), d.end(), SECRET, WEAK, NONE, FOUND))
                continue
            if fam == "passphrase" and text[e:p].strip():
                self._phrase(text, p, out)
                continue
            if fam == "passphrase":  # `the passphrase we agreed on: w w w w`, `frase, em ordem: w w w w`
                w = _TO_COLON.match(text, e)
                if w:
                    self._phrase(text, w.end(), out)
                continue
            if fam == "username":
                self._login(doc, p, out)
                continue
            if fam == "password" and phrase[0] > "\u04ff":
                w = _LATIN_PHRASE.match(text, p)  # `口令是 marble garden river lantern`: in CJK text a run of Latin words is the value
                if w:
                    out.append(Candidate(p, w.end(1), SECRET, WEAK, NONE, FOUND))
                    continue
            v = _VALUE.match(text, p)
            if not v or (p == e and not _spaced_or_cjk(text, e, phrase)):
                continue
            vs, ve = v.span()
            q = _NEXT_PARAM.search(text, vs, ve)  # `?token=X&page=2`: the query's next parameter is not the value
            ve = _trim(text, vs, q.start() if q else ve)
            if ve - vs < 3:
                far = _far_value(text, e)  # `Пароль от wifi X`: a short word first
                if far:
                    out.append(Candidate(far[0], far[1], SECRET, WEAK, NONE, FOUND))
                continue
            value = text[vs:ve]
            cjk_word = phrase[0] > "\u04ff"  # (a CJK, kana or Hangul word: not `contraseña`)
            colon = any(c in ":：=" for c in text[e:p])
            if cjk_word and not _typed(value):
                # a typed value ends where the CJK text resumes: `S3cr3t24$になります`, `X입니다`,
                # `X了` (not `8文字以上にしてください`: too short)
                k = next(i for i, c in enumerate(value) if not _typed(c))
                if k >= 4 and (colon or password_like(value[:k])):
                    ve = vs + k
                    value = text[vs:ve]
                elif not colon:
                    continue
            clause = b.group("clause")
            if len(value) < 3 or (clause and (not password_like(value) or clause.split(None, 1)[0].strip(",").lower() in _COMPOUND_NEXT)):
                continue  # (`the password you chose was too short`, `password manager is 1Password`)
            if fam == "key":
                check = PASS if looks_random(value) and not code_value(text, vs, ve) else FAIL
            elif code_value(text, vs, ve, colon) or placeholder(value) or _participle_compound(value):
                check = FAIL
            elif password_like(value) or (cjk_word and (colon or _typed(value))):
                check = NONE
            else:
                check = FAIL  # a plain word after the word: `password is required`, `password manager`
                far = _far_value(text, e)  # unless a few words on a password stands: `Пароль от wifi X`
                if far:
                    vs, ve = far
                    check = NONE
            out.append(Candidate(vs, ve, SECRET, WEAK, check, FOUND))
            if check == NONE:
                login = _login_before(text, s)
                if login:
                    out.append(Candidate(login[0], login[1], SECRET, WEAK, NONE, FOUND))
        if near:
            _near_quoted(doc, near, out)

    @staticmethod
    def _quoted(doc: Doc, q: int, fam: str, out: list[Candidate]) -> None:
        text = doc.text
        close = _QUOTES[text[q]]
        end = text.find(close, q + 1, q + 130)
        if end <= q + 1 or "\n" in text[q + 1 : end] or "\x00" in text[q + 1 : end]:
            return
        vs, ve = q + 1, end
        if text[q] == "\u00ab":  # « X », French spacing inside the guillemets
            while vs < ve and text[vs] in " \u00a0\u202f":
                vs += 1
            while ve > vs and text[ve - 1] in " \u00a0\u202f":
                ve -= 1
        value = text[vs:ve]
        if value[:1] in " ,;)]}" or value[-1:] == " " or placeholder(value) or (fam == "pin" and not value.strip().isdigit()):
            check = FAIL
        elif fam == "key":
            check = PASS if looks_random(value) and not any(c.isspace() for c in value) and "\\n" not in value else FAIL
        elif fam == "username":
            check = NONE if _password_after(doc, ve) else FAIL
        else:
            check = NONE
        out.append(Candidate(vs, ve, SECRET, WEAK, check, FOUND))

    @staticmethod
    def _phrase(text: str, p: int, out: list[Candidate]) -> None:
        """A passphrase's words, to the end of its clause: three to eight words, 64 characters."""
        e = p
        words = 0
        n = len(text)
        while e < n and words < 8:
            v = _VALUE.match(text, e)
            if not v:
                break
            ve = _trim(text, e, v.end())
            e = ve
            words += 1
            if ve < v.end() or e >= n or text[e] != " " or e - p > 64:
                break
            e += 1
        e = e if e > p and text[e - 1] != " " else e - 1
        if e - p >= 8 and text.count(" ", p, e) >= 2:  # (three words at least: not `written down`)
            value = text[p:e]
            first = value.split(" ", 1)[0].lower()
            prose = any(w in _PROSE_WORDS for w in value.lower().split()[1:])  # `is asked at boot`: a clause
            check = FAIL if placeholder(value) or first in _NOT_PHRASE_START or prose else NONE
            out.append(Candidate(p, e, SECRET, WEAK, check, FOUND))

    @staticmethod
    def _login(doc: Doc, p: int, out: list[Candidate]) -> None:
        """The login beside a password (`username X, password Y`; `login: X / Y`)."""
        text = doc.text
        v = _VALUE.match(text, p)
        if not v:
            return
        vs, ve = v.start(), _trim(text, v.start(), v.end())
        if text[vs] == "-":  # `docker login --username ci`: a command's flag, not a login
            return
        if text[vs].isascii():  # `IDはjdoe30でパスワードは...`: a typed login ends where the CJK text resumes
            k = next((i for i in range(vs, ve) if not _typed(text[i])), ve)
            ve = _trim(text, vs, k)
        if ve - vs < 2 or code_value(text, vs, ve, False) or placeholder(text[vs:ve]) or text[vs:ve] in _LOGIN_NOT or (
            text[vs:ve].isalpha() and text[vs:ve].lower() in ENGLISH_WORDS and text[vs:ve].lower() not in _LOGIN_WORDS):
            return
        pair = _PAIR_SEP.match(text, ve)
        if pair and text[ve : pair.end()].strip() == "/" and not (text[ve] in " \t" and text[pair.end() - 1] == "/"):
            # (not `net user guest /active:no`: a space before the slash and none after is a switch)
            w = _VALUE.match(text, pair.end())
            if w:
                ws, we = w.start(), _trim(text, w.start(), w.end())
                if we - ws >= 3 and not placeholder(text[ws:we]):
                    out.append(Candidate(vs, ve, SECRET, WEAK, NONE, FOUND))
                    out.append(Candidate(ws, we, SECRET, WEAK, NONE, FOUND))
            return
        short = _PASS_AFTER.match(text, ve)  # `login jdoe pass X`, `user: jdoe pass: X`: pass, a password's short word
        if short:
            w = _VALUE.match(text, short.end())
            if w:
                ws, we = w.start(), _trim(text, w.start(), w.end())
                if we - ws >= 3 and not placeholder(text[ws:we]) and not code_value(text, ws, we, False):
                    out.append(Candidate(vs, ve, SECRET, WEAK, NONE, FOUND))
                    out.append(Candidate(ws, we, SECRET, WEAK, NONE, FOUND))
                    return
        if _password_after(doc, ve):
            out.append(Candidate(vs, ve, SECRET, WEAK, NONE, FOUND))


# three to eight lower-case Latin words, ending where the CJK text (or the line) resumes
_LATIN_PHRASE = re.compile(r"([a-z]{2,16}(?: [a-z]{2,16}){2,7})(?=$|[\s.,;:!?。，；：！？」』）)]|[^\x00-\u04ff])")
_PASS_AFTER = re.compile(r"[ \t]*[,;]?[ \t]+(?i:pass)(?:[ \t]*[:=][ \t]*|[ \t]+)(?=\S)")


# a few words between a PIN word and its digits, on the same line: `PIN de la tarjeta es`,
# `code PIN de la carte est`, `Code zur Anmeldung:`, `ПИН-код карты`
_PIN_WORDS = re.compile(r"(?:[ \t]+[^\W\d_]{1,12}(?:-[^\W\d_]{1,12})?){1,4}[ \t]*[:：]?[ \t]*(?=\d)")
_OPENERS = frozenset(_OPEN)
_NEXT_PARAM = re.compile(r"&(?=[A-Za-z_][\w.\-]*=)")
# a word that names many codes (`error code 1234`): a one-time code only as six digits or more
_BARE_CODE = frozenset(("code", "código", "codigo", "код", "codice", "kod", "kode"))


@functools.cache
def _code_clause() -> re.Pattern:
    """What may stand between a bare `code` and its digits on one line: a few words then a
    one-word copula (`que me mandaron por SMS es`, `I got by text is`), or a preposition and
    one or two words (`от гаража`, `for the gate`)."""
    grammar = context_words("password")
    copulas = [c for c in grammar.get("copula", []) if c.isalpha()]
    return re.compile(
        r"(?:(?:[ \t]+[^\W\d_]{1,12}){1,6}?[ \t]+" + alternation(copulas)
        + r"|[ \t]+" + alternation(grammar.get("preposition", [])) + r"(?:[ \t]+[^\W\d_]{1,12}){1,2})"
        r"[ \t]*[:：]?[ \t]+(?=\d)")

_SENTENCE_STOP = re.compile(r"[.!?。！？](?:\s|$)|[\n\x00]")


# nouns that make a compound with a secret word: what follows is about that thing
_COMPOUND_NEXT = frozenset(
    "manager managers policy policies field fields form reset hash hashes length strength requirement requirements rule "
    "rules prompt box generator vault store storage change expiry history hint hints manager's hashing hasher encryption "
    "complexity expiration rotation protection authentication "
    "manager-app gestor gestionnaire verwaltung manager-app менеджер".split())
_SKIP_WORDS = re.compile(r"(?:[ \t]+[^\W\d_](?:[^\W\d_]|['’\-](?=[^\W\d_])){0,13}(?=[ \t:：=]|$)){1,3}[ \t]*(?:[:：=][ \t]*)?")  # (whole words: not the `F` of `F!Nm`)


# prepositions of place, which say where a secret is kept, not what it is
_PLACE_WORDS = frozenset("in inside at on under within en dans sur im auf unter no na em в на".split())


def _far_value(text: str, e: int) -> tuple[int, int] | None:
    """A value one to three words after a secret word, on its line, when it has a password's
    strict shape (`contraseña nueva: P@ss1`, `Пароль от wifi maple640`, `mot de passe du
    NAS hunter22`); words between and a plain word after are the sentence's."""
    w = _SKIP_WORDS.match(text, e)
    if not w or text[e : w.end()].split(None, 1)[0].lower() in _COMPOUND_NEXT:
        return None  # `password manager is 1Password`: the word names a thing about passwords
    skipped = text[e : w.end()].lower().split()
    if len(skipped) >= 2 and skipped[-1].rstrip(":：=") in _PLACE_WORDS:
        return None  # `the password is in 1Password`, `ist im Tresor`: where it is kept
    words = text[e : w.end()].rstrip(" \t")
    last = words.rsplit(None, 1)[-1]
    if len(skipped) >= 2 and words[-1:] not in ":：=" and _mixed_random(last):
        return e + len(words) - len(last), e + len(words)  # (the words took the value: `temporaire est pKwcjTSeNAB`)
    v = _VALUE.match(text, w.end())
    if not v:
        return None
    vs, ve = v.start(), _trim(text, v.start(), v.end())
    v = text[vs:ve]
    if (_quoted_password(v) or _mixed_random(v)) and not code_value(text, vs, ve) and not (ve < len(text) and text[ve] in "(["):
        return vs, ve
    return None


# words that start a sentence's predicate, not a passphrase: `the passphrase is too short`,
# `passphrase must be long`, `passphrase protects your key`
_NOT_PHRASE_START = frozenset(
    "is the a an too very not no so must should can cannot will would may might has have had was were "
    "be been being protects protect of for to and or that which it its this your my our their".split())


# function words of a clause, which a passphrase of chosen words does not hold: `asked at boot`
_PROSE_WORDS = frozenset("at the a an to in on of for with by from is are was be it this that or and words characters letters digits".split())


_PROSE_SUFFIX = re.compile(r"-(?:wise|related)(?![\w-])")  # `password-wise`: a word of prose, no identifier


def _compound(text: str, s: int) -> bool:
    """`WLAN-Passwort`, `Root-Kennwort`, `sudo-Passwort`, `root-пароль`, `Staging-DB-Passwort`: words joined to a
    secret word by a hyphen in prose (a letter run before the hyphen with a space or the start
    before it, one of the two capitalised or the secret word in no ASCII), not `db-password`."""
    i = s - 1
    j = i
    while j > 0 and (text[j - 1].isalpha() or (text[j - 1] == "-" and j - 1 > 0 and text[j - 2].isalpha() and text[j].isalpha())):
        j -= 1  # (`Staging-DB-Passwort`: several words joined)
    return j < i and (j == 0 or text[j - 1] in " \t\n(\"'") and (text[j].isupper() or text[s].isupper() or not text[s].isascii())


def _near_quoted(doc: Doc, near: list[tuple[int, int, str]], out: list[Candidate]) -> None:
    """A quoted value shaped like a password in the same sentence as a secret word, before or
    after it (`reset it to 'X' and send me the new password`, `the password (`X`)`, `Kennwort
    für den Router: 'X'`, `la contraseña de la base de datos es «X»`): weak shape, its context
    found. A value with a space, an address, a URL, a placeholder or a name of code is kept."""
    text = doc.text
    n = len(text)
    seen: set[int] = set()
    for s, e, _fam in near:
        a = max(0, s - 100)
        for m in _SENTENCE_STOP.finditer(text, a, s):
            a = m.end()
        stop = _SENTENCE_STOP.search(text, e, min(n, e + 100))
        b = stop.start() if stop else min(n, e + 100)
        for q in range(a, b):
            c = text[q]
            if c not in _OPENERS or q in seen or (q > 0 and _glued(text[q - 1])):
                continue  # (`c'est`, `variant='B'`, `"a"||l.type==="b"`: no quote of prose)
            close = text.find(_QUOTES[c], q + 1, min(n, q + 66))
            if close <= q + 4 or (close + 1 < n and (_glued(text[close + 1]) or text[close + 1] in "([=")):
                continue
            vs, ve = q + 1, close
            if text[vs] in "   " and c == "«":  # « X »
                while vs < ve and text[vs] in "   ":
                    vs += 1
                while ve > vs and text[ve - 1] in "   ":
                    ve -= 1
            value = text[vs:ve]
            if _quoted_password(value) and not code_value(text, vs, ve):
                seen.add(q)
                out.append(Candidate(vs, ve, SECRET, WEAK, NONE, FOUND))


def _mixed_random(v: str) -> bool:
    """Letters only, typed at random: 8+ of them, the case changing three times or more, no
    CamelCase name (`pKwcjTSeNAB`, not `TokenCredential`)."""
    if len(v) < 8 or not v.isascii() or not v.replace("_", "").replace("-", "").isalpha() or _CAMEL_WORDS.fullmatch(v):
        return False  # (letters, perhaps with `_` or `-` between: `fCjQ_NRGTF`)
    return sum(a.isupper() != b.isupper() for a, b in zip(v, v[1:])) >= 3


def _quoted_password(v: str) -> bool:
    """A password's shape, strict (the value stands apart from its word): 4-64 characters, no
    space, a letter and a digit or a symbol, no address, URL, path or placeholder."""
    if not 4 <= len(v) <= 64 or any(c.isspace() for c in v) or placeholder(v):
        return False
    if "://" in v or "@" in v and "." in v.rsplit("@", 1)[-1] or v.startswith(("/", "./", "~/")):
        return False
    if "(" in v or ")" in v or "::" in v or any(c in v for c in "'\"`") or v.count("/") > 1 or "==" in v or _MEASURE.fullmatch(v):
        return False  # a call, a path, a comparison, `64-bit`
    letter = any(c.isalpha() for c in v)
    digit = any(c.isdigit() for c in v)
    symbol = any(c in "!#$%&*+=?^~@|<>" for c in v)
    return letter and (digit or symbol) and not _CODE_VALUE.fullmatch(v) and not _IDENT.fullmatch(v)




def _glued(c: str) -> bool:
    """A quote with this character beside it belongs to code or a word (`c'est`, `"a"||b`,
    `x.get("k")`), not to prose."""
    return c.isascii() and (c.isalnum() or c in "_|&+*/\\`$")


_MEASURE = re.compile(r"\d+[-_]?[A-Za-z]{1,6}")  # 64-bit, 100ms, 3rd
_IDENT = re.compile(r"[A-Z_]+[0-9]*|[a-z][a-z0-9]*(?:_[a-z0-9]+)+")  # DB_PASSWORD, api_key_2


_LOGIN_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9._\-]{1,31}")
_TOKEN = re.compile(r"[^\s\x00]+")


def _login_before(text: str, s: int) -> tuple[int, int] | None:
    """A login just before a password word whose value was found, within three words on its
    line: a typed name with a digit or a `.`, `_`, `-` in it that is no English word (`log in as
    jdoe81 with password`, `entra como admin298 con la contraseña`, `wang_li72 계정 비밀번호는`)."""
    a = max(s - 60, text.rfind("\n", 0, s) + 1, text.rfind("\x00", 0, s) + 1)
    for m in list(_TOKEN.finditer(text, a, s))[-3:][::-1]:
        tok = m.group().strip(",;:：、，")
        if (_LOGIN_SHAPE.fullmatch(tok) and any(c.isdigit() or c in "._-" for c in tok) and tok[-1].isalnum()
                and tok.lower() not in ENGLISH_WORDS and "@" not in tok):
            ts = m.start() + m.group().find(tok)
            return ts, ts + len(tok)
    return None


# words after a login word that are the sentence's, not a login: `the login form has ...`
_LOGIN_WORDS = frozenset("admin root guest user test demo operator".split())  # logins that are words too
_LOGIN_NOT = frozenset("form forms page screen field fields button flow details data info information name names and or "
                       "is was with for to of in on at the a an".split())


def _typed(value: str) -> bool:
    """ASCII or full-width ASCII only: what a user types as a password in CJK text."""
    return all("!" <= c <= "~" or "\uff01" <= c <= "\uff5e" for c in value)


def _spaced_or_cjk(text: str, e: int, phrase: str) -> bool:
    """A value glued right to its word is one only after a CJK, kana or Hangul word (`密码X`)."""
    return not phrase.isascii() and not ("\u00c0" <= phrase[0] <= "\u04ff")


def _trim(text: str, s: int, e: int) -> int:
    """The end of a bare value less the sentence's punctuation after it; in Chinese or Japanese
    text, whose sentences end in full-width marks, an ASCII `!` or `?` is the value's own."""
    trail = _TRAIL
    if s > 0 and ("\u3000" <= text[s - 1] <= "\u9fff" or "\uff00" <= text[s - 1] <= "\uffef"):
        trail = _TRAIL_CJK
    while e - s > 1 and text[e - 1] in trail and (e == len(text) or not text[e].isalnum()):
        e -= 1
    return e


_LINE_END = re.compile(r"[ \t]*\r?\n[ \t]*")


def _password_after(doc: Doc, p: int) -> bool:
    """A password word in the 40 characters after p, on the same line or, where the line ends
    there, at the start of the next (`username: U` then `password: P`)."""
    scan, _, family, _, _ = _words()
    window = doc.lo[p : p + 40]
    nl = _LINE_END.match(window)
    window = window[nl.end() : nl.end() + 12] if nl else window
    window = window.split("\n", 1)[0].split("\x00", 1)[0]
    return any(family.get(m.group()) in ("password", "passphrase") for m in scan.finditer(window))


# a wallet's seed words: `recovery words: w1 w2 w3 w4 ...`, `mi frase semilla: ...`, `시드 문구는
# ...`: words of a list (no function word among them) after a colon or a copula (the password
# words' copulas) that follows a word for what they restore and a word for words or a phrase
# (data/context-seed.txt, its `head` lines)
_SEED_WORDS = re.compile(r"[a-z]{3,8}(?:[ \t]+[a-z]{3,8}){3,23}(?=$|[\s.,;!?。，；！？」』）)]|[^\x00-\u04ff])")


@functools.cache
def _seed_grammar() -> tuple[tuple[str, ...], re.Pattern]:
    """(the words for words or a phrase, what leads from the seed word to its value)."""
    heads = tuple(context_words("seed").get("head", ()))
    copulas = [c for c in context_words("password").get("copula", ()) if c not in (":", "：", "=")]
    spaced = [c for c in copulas if _LATIN_OR_DASH.search(c)]
    glued = [c for c in copulas if not _LATIN_OR_DASH.search(c)]
    return heads, re.compile(r"[^\n\x00:：=]{0,40}?(?:[ \t]*[:：=]|[ \t]" + alternation(spaced, bounded=False) + r"[ \t]|"
                             + alternation(glued, bounded=False) + r")[ \t]*")


_LATIN_OR_DASH = re.compile("[A-Za-z\u00c0-\u04ff\u2013\u2014<>=-]")


def _seed_words(doc: Doc, s: int, out: list[Candidate]) -> None:
    lo = doc.lo
    heads, to_value = _seed_grammar()
    m = to_value.match(lo, s)
    if not m or not any(h in lo[max(0, s - 24) : m.end()] for h in heads):
        return
    w = _SEED_WORDS.match(doc.text, m.end())
    if w and not any(x in _PROSE_WORDS or x in _NOT_PHRASE_START for x in w.group().split()):
        out.append(Candidate(w.start(), w.end(), SECRET, WEAK, NONE, FOUND))


# ---------------------------------------------------------------- a login and a password, slashed
# `u: jdoe / p: X`, `user=jdoe / pass=X`; or bare, `jdoe81 / X`, with a word of logging in on its
# line (`jdoe81 / X でログインしてください`, `sign in with ops-bot9 / X`)
_SLASH_PAIR = re.compile(
    r"(?<![\w.@/\-])(?:(?P<ul>u|user|usr|login|id)(?:[ \t]*[:=][ \t]*|[ \t]+))?(?P<u>[A-Za-z][A-Za-z0-9._\-]{1,31})[ \t]*/[ \t]*"
    r"(?:(?P<pl>p|pw|pwd|pass)(?:[ \t]*[:=][ \t]*|[ \t]+))?(?P<p>[^\s\x00/]{4,64})(?=\s|$)", re.IGNORECASE)
# `Steam: jdoe94 / X` alone on its line: an account's label, then its login and password
_LABEL_BEFORE = re.compile(r"(?:^|\n)[ \t]*(?:[-*•][ \t]+)?[^\W\d_][\w.\-]{0,23}(?:[ \t]+[^\W\d_][\w.\-]{0,23}){0,2}[ \t]*[:：][ \t]*$")


# `jdoe65 / X for the staging box`: what a login is for, right after the pair
_FOR_MACHINE = re.compile(
    r"[ \t]+(?:for|on|to|para|pour|für|auf|для|на)[ \t]+(?:(?:the|my|our|your|a|el|la|le|les|der|die|das|o|a)[ \t]+)?(?:[\w\-]{1,16}[ \t]+)?"
    r"(?:box|server|host|vm|machine|instance|cluster|account|portal|site|router|wifi|wi-fi|database|db|console|panel|dashboard|"
    r"admin|staging|prod|production|servidor|cuenta|serveur|compte|konto|сервер|аккаунт)\b", re.IGNORECASE)


def _label_line(text: str, s: int, e: int) -> bool:
    """A pair that is the whole value of a short labelled line (`Steam: u / p`)."""
    if e < len(text) and text[e] not in "\r\n":
        rest = text[e : text.find("\n", e) if "\n" in text[e:] else len(text)]
        if rest.strip():
            return False
    return bool(_LABEL_BEFORE.search(text, max(0, s - 40), s))


@functools.cache
def _sign_in() -> tuple[str, ...]:
    """Words of logging in or of an account (data/context-signin.txt), every language."""
    return tuple(w for ws in context_words("signin").values() for w in ws)


# `jdoe:P (user:pass)`: a login and a password joined by a colon, on a line that says so
_COLON_HINT = re.compile(r"(?:user(?:name)?|login|id)[ \t]*:[ \t]*(?:pass(?:word)?|pw|pwd)\b")
_COLON_PAIR = re.compile(r"(?<![\w.@/:\-])([A-Za-z][A-Za-z0-9._\-]{1,31}):([^\s\x00:/]{4,64})(?=\s|$)")


class LoginPairs:
    name = "login pairs"
    kinds = (SECRET,)

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        text = doc.text
        if ":" in text and (":pass" in doc.lo or ": pass" in doc.lo or ":pw" in doc.lo):
            for h in _COLON_HINT.finditer(doc.lo):
                a = text.rfind("\n", 0, h.start()) + 1
                b = text.find("\n", h.end())
                b = len(text) if b < 0 else b
                for m in _COLON_PAIR.finditer(text, a, b):
                    if h.start() <= m.start() < h.end():
                        continue
                    pe = _trim(text, m.start(2), m.end(2))
                    if _quoted_password(text[m.start(2) : pe]):
                        out.append(Candidate(m.start(1), m.end(1), SECRET, WEAK, NONE, FOUND))
                        out.append(Candidate(m.start(2), pe, SECRET, WEAK, NONE, FOUND))
        if "/" not in text or not doc.letters:
            return
        for m in _SLASH_PAIR.finditer(text):
            u = m.group("u")
            ue = _trim(text, m.start("u"), m.end("u"))
            pe = _trim(text, m.start("p"), m.end("p"))
            pw = text[m.start("p") : pe]
            if not (_quoted_password(pw) or _mixed_random(pw)) or code_value(text, m.start("p"), pe):
                continue
            if not (m.group("ul") and m.group("pl")):  # bare: a login's shape, and a word of logging in on the line
                if not (any(c.isdigit() or c in "._-" for c in u) and u.lower() not in ENGLISH_WORDS):
                    continue
                a = max(text.rfind("\n", 0, m.start()) + 1, m.start() - 40)
                b = text.find("\n", m.end())
                line = doc.lo[a : min(m.end() + 40, b if b >= 0 else len(text))]
                if not any(w in line for w in _sign_in()) and not _label_line(text, m.start(), m.end()) and not _FOR_MACHINE.match(text, m.end()):
                    continue
            out.append(Candidate(m.start("u"), ue, SECRET, WEAK, NONE, FOUND))
            out.append(Candidate(m.start("p"), pe, SECRET, WEAK, NONE, FOUND))


# ---------------------------------------------------------------- credential pairs after an e-mail
_EMAIL_LIKE = re.compile(r"@[A-Za-z0-9\-]+\.[A-Za-z]{2,}")
_PORT = re.compile(r"\d{1,5}(?:[/?#]|$)")
_AFTER_EMAIL = re.compile(r"(?:[ \t]*/[ \t]*|:)([^\s\x00\"'`,;<>()\[\]{}]{3,64})")
# `creds for the console: a@b.example and X`: after a word for credentials, the value beside the address
_AND_AFTER_EMAIL = re.compile(r"(?:[ \t]*,[ \t]*|[ \t]+(?:and|&|plus)[ \t]+)([^\s\x00\"'`,;<>()\[\]{}]{3,64})")
_CREDS_BEFORE = re.compile(r"(?<![a-z])(?:creds|credentials|login|log-?in|sign-?in)(?![a-z])")


def email_pairs(doc: Doc, spans: list, out: list[Candidate]) -> None:
    """`name@mail.example / X`, `name@mail.example:X`: the value after an e-mail address."""
    text = doc.text
    for sp in spans:
        if sp.kind != EMAIL:
            continue
        m = _AFTER_EMAIL.match(text, sp.end)
        if not m:
            m = _AND_AFTER_EMAIL.match(text, sp.end)
            if m and _CREDS_BEFORE.search(doc.lo, max(0, sp.start - 48), sp.start) and password_like(m.group(1)):
                out.append(Candidate(m.start(1), _trim(text, m.start(1), m.end(1)), SECRET, WEAK, NONE, FOUND))
            continue
        v = m.group(1)
        vs, ve = m.start(1), _trim(text, m.start(1), m.end(1))
        if _PORT.match(v) or _EMAIL_LIKE.search(v) or "://" in v or placeholder(text[vs:ve]):
            continue  # a port (user@host:8080/db), another address
        if text[sp.end] == ":" and not password_like(text[vs:ve]):
            continue  # `a@b.example:` then a word: a label, a mail header
        out.append(Candidate(vs, ve, SECRET, WEAK, NONE, FOUND))


# ---------------------------------------------------------------- config lines
_KV_WORDS = ("key", "secret", "token", "pass", "pwd", "auth", "psk")
# what must follow a key-like word for the next value to be a credential: the rest of the key's
# name, a closing quote, `:`/`=`/` is `, then a quoted value (whole) or a bare one (an `&` in
# it too, unless a query's next `name=` follows: `?token=X&page=2`)
_KV_TAIL = re.compile(
    r"[A-Za-z0-9_\-]{0,20}[\"']?[ \t]{0,8}(?:[:=]|[ \t]is[ \t])[ \t]{0,8}"
    r"(?:\"([^\"\n\x00]{1,200})\"|'([^'\n\x00]{1,200})'|((?:[^\s\x00\"',;{}<>()\[\]&]|&(?![A-Za-z_][\w.\-]*=)){4,}))"
)
_PASSWORD_WORDS = ("pass", "pwd", "psk")
_CREDENTIAL_PARTS = frozenset(
    "key keys apikey secret secrets token tokens pass password passwd passphrase passcode pwd psk auth credential credentials".split()
)
_CREDENTIAL_ENDINGS = ("password", "passwd", "secret", "token", "apikey", "pwd")  # PGPASSWORD, DBPASS
_IDENT_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def credential_name(ident: str) -> bool:
    """api_key, apiKey, SECRET_KEY, access-token, password, PGPASSWORD: a credential's name.
    tokenizer, monkey, keyboard, passenger: not (the key word is not a whole part of the name,
    nor the end of a name in capitals)."""
    parts = _IDENT_PARTS.findall(ident)
    for i, part in enumerate(parts):
        low = part.lower()
        if low == "auth" and i < len(parts) - 1:
            continue  # `REDIS_AUTH`, `basic_auth`; not `auth_url`, `AUTH_TYPE`
        if low in _CREDENTIAL_PARTS or (part.isupper() and len(part) > 6 and low.endswith(_CREDENTIAL_ENDINGS)):
            return True
    return False


_PATH_KEY = re.compile(r"[_\-.](?:file|path|dir|filename)$")


# a call that sets a quoted credential name to a quoted value: `define('DB_PASSWORD', 'X')`,
# `setenv("API_TOKEN", "X")` (not a lookup's default: `.get("password", "")`, `getenv`)
_CALL_PAIR = re.compile(r"""\([ \t]*(['"])([A-Za-z_][\w.]{0,39})\1[ \t]*,[ \t]*(['"])([^'"\n\x00]{4,200})\3[ \t]*[),]""")
_CALL_NAME = re.compile(r"[A-Za-z_][\w.]*$")
_PGPASS = re.compile(r"(?<![\w.:/\-])[\w.\-*]+:(?:\d{1,5}|\*):[\w.\-*]+:[\w.\-*]+:([^\s\x00]+)")  # host:port:db:user:password
_LOOKUPS = ("get", "getattr", "pop", "getenv", "get_secret", "getpass", "input")
# an XML element whose name says password/secret/token/key: `<password>X</password>`
_XML_FIELD = re.compile(r"<([A-Za-z_][\w.\-]{0,40})>([^<>\s\x00]{1,200})</\1>")


# fish's and csh's variables: `set -x WIFI_PSK X`, `set -gx API_TOKEN "X"`, `setenv DB_PASS X`
_SHELL_SET = re.compile(
    r"(?:^|(?<=[\n;&|({`]))[ \t]*(?:\$[ \t]+)?(?:set[ \t]+(?:-[A-Za-z]+[ \t]+)*|setenv[ \t]+)([A-Za-z_]\w{0,40})[ \t]+"
    r"(?:\"([^\"\n\x00]{1,200})\"|'([^'\n\x00]{1,200})'|([^\s\x00\"';|&]{4,200}))")


class ConfigSecrets:
    name = "config lines"
    kinds = (SECRET,)

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        text, lo = doc.text, doc.lo
        if "</" in text:
            for m in _XML_FIELD.finditer(text):
                if credential_name(m.group(1)):
                    check = _credential_check(m.group(1).lower(), m.group(2), True)
                    out.append(Candidate(m.start(2), m.end(2), SECRET, WEAK, check, FOUND))
        if "pgpass" in lo:
            for m in _PGPASS.finditer(text):
                out.append(Candidate(m.start(1), _trim(text, m.start(1), m.end(1)), SECRET, WEAK, NONE, FOUND))
        if "'," in text or '",' in text:
            for m in _CALL_PAIR.finditer(text):
                name = _CALL_NAME.search(text, max(0, m.start() - 40), m.start())
                fn = name.group().rsplit(".", 1)[-1].lower() if name else ""
                if credential_name(m.group(2)) and fn not in _LOOKUPS:
                    check = _credential_check(m.group(2).lower(), m.group(4), True)
                    out.append(Candidate(m.start(4), m.end(4), SECRET, WEAK, check, FOUND))
        if "set" in lo:
            for m in _SHELL_SET.finditer(text):
                if credential_name(m.group(1)):
                    g = 2 if m.group(2) is not None else 3 if m.group(3) is not None else 4
                    out.append(self._judge(text, m.group(1).lower() + "=", m, g, bare=4))
        if not doc.letters or not (":" in text or "=" in text or " is " in lo):  # every key/value form needs one
            return
        for kw in _KV_WORDS:
            p = lo.find(kw)
            while p != -1:
                m = _KV_TAIL.match(text, p + len(kw))
                if m and "::" in text[p + len(kw) : m.start(m.lastindex) + 1]:
                    m = None  # a C++ or Rust path (`Aws::Auth::Provider`), no key and value
                if m:
                    g = 1 if m.group(1) is not None else 2 if m.group(2) is not None else 3
                    a = p
                    while a > 0 and p - a < 30 and text[a - 1] in _KEYWORD_CHARS:
                        a -= 1
                    ident = text[a : m.start(g)].split("=")[0].split(":")[0].strip(" \t\"'")
                    if ident.lower().endswith(" is"):
                        ident = ident[:-3]
                    if credential_name(ident) or credential_name(ident.lower()):
                        out.append(self._judge(text, lo[a : m.start(g)], m, g))
                p = lo.find(kw, p + 1)

    @staticmethod
    def _judge(text: str, key: str, m: re.Match, g: int, bare: int = 3) -> Candidate:
        """The value of group g (group `bare` the unquoted one) under a credential's name."""
        vs, ve = m.span(g)
        if g == bare:
            ve = _trim(text, vs, ve)
        value = text[vs:ve]
        if g == bare and code_value(text, vs, ve):
            check = FAIL
        else:  # a password unquoted after ` is ` only when it looks typed
            check = _credential_check(key, value, g != bare or "=" in key or ":" in key or password_like(value))
        return Candidate(vs, ve, SECRET, WEAK, check, FOUND)


def _credential_check(key: str, value: str, typed: bool) -> int:
    """The validator's word on a value under a credential's name (`key`, lower case): a password
    (SECRET_KEY = "S3cr3t87!", SECRET=X) is what it is where it stands as typed; a key or token
    passes when random-looking, or counts when typed like a password (`auth_token: "a%aDB2Z6d"`);
    a placeholder or a name that says where the secret is (`PASSWORD_FILE=/run/secrets/db`) fails."""
    if placeholder(value) or not value.strip() or _PATH_KEY.search(key.rstrip(" \t\"':=")):
        return FAIL
    if any(w in key for w in _PASSWORD_WORDS) or "secret" in key:
        return NONE if typed else FAIL
    if _word_token(value):  # comment_key='#comment', sort_key: "name"
        return FAIL
    if looks_random(value) and not any(c.isspace() for c in value) and "\\n" not in value:
        return PASS
    return NONE if len(value) >= 8 and _quoted_password(value) else FAIL
