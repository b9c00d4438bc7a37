"""Planted-PII corpus for the scrubber tests (English and Chinese, adversarial formats).

Validity helpers here are written independently of anonymize/ so the tests do not grade the
scrubber with its own code."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def luhn_valid(digits: str) -> bool:
    s = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        s += d
    return s % 10 == 0


def cn_id_valid(v: str) -> bool:
    v = v.upper()
    if not re.fullmatch(r"\d{17}[\dX]", v):
        return False
    w = [2 ** (17 - i) % 11 for i in range(17)]
    check = "10X98765432"[sum(int(c) * x for c, x in zip(v[:17], w)) % 11]
    try:
        dt.date(int(v[6:10]), int(v[10:12]), int(v[12:14]))
    except ValueError:
        return False
    return check == v[17]


def make_cn_id(region: str, birth: str, seq: str) -> str:
    first = region + birth + seq
    w = [2 ** (17 - i) % 11 for i in range(17)]
    return first + "10X98765432"[sum(int(c) * x for c, x in zip(first, w)) % 11]


def iban_valid(v: str) -> bool:
    v = v.replace(" ", "")
    s = v[4:] + v[:4]
    return int("".join(str(int(c, 36)) for c in s)) % 97 == 1


def fullwidth(s: str) -> str:
    return "".join(chr(ord(c) - 0x30 + 0xFF10) if c.isdigit() else c for c in s)


def ascii_digits(s: str) -> str:
    return "".join(str(int(c)) for c in s if c.isdigit())


ID_X = make_cn_id("110105", "19491231", "002")  # ends in X
assert ID_X.endswith("X")
ID_DIGIT = make_cn_id("440524", "19800101", "001")
ID_GLUED = make_cn_id("310104", "19900307", "123")
assert not ID_DIGIT.endswith("X")
_ok = make_cn_id("510107", "19760522", "031")
ID_TYPO = _ok[:17] + ("1" if _ok[17] == "0" else "0")  # a typo in the check digit: still someone's ID

# (entity type, planted value, text carrying it)
PLANTED: list[tuple[str, str, str]] = [
    # e-mail
    ("email", "john.doe@example.com", "Contact john.doe@example.com for details."),
    ("email", "zhangwei88@qq.com", "他的邮箱是zhangwei88@qq.com，请回复。"),
    ("email", "Mary_O'Neil+tag@Mail.Example.co.uk", "write to Mary_O'Neil+tag@Mail.Example.co.uk."),
    ("email", "zoë.ångström@exämple.se", "Svar till zoë.ångström@exämple.se tack."),
    ("email", "jose.nunez@example.es", "correo：jose.nunez@example.es。"),
    ("email", "li.si\uff20163.com", "邮箱：li.si\uff20163.com。"),  # full-width ＠, as IMEs type it
    # phones
    ("phone", "+1 (415) 555-2671", "Call +1 (415) 555-2671 tomorrow."),
    ("phone", "(212) 736-5000", "Office: (212) 736-5000."),
    ("phone", "+44 20 7946 0958", "London +44 20 7946 0958 ext."),
    ("phone", "+49 30 901820", "Berlin: +49 30 901820"),
    ("phone", "+33 1 42 68 53 00", "Paris +33 1 42 68 53 00."),
    # a + and a possible length, in groups, whatever the number's range or a trunk 0 kept
    ("phone", "+47 498 21 311", "You can call +47 498 21 311"),
    ("phone", "+33 03.34.08.71.06", "any message on +33 03.34.08.71.06. Thanks"),
    ("phone", "+39 0366 9434948", "Can someone call me on +39 0366 9434948?"),
    ("phone", "415-555-2671x565", "desk 415-555-2671x565 (front office)"),  # extension glued on
    ("phone", "612 345 678", "Llámame al 612 345 678, por favor."),  # Spain, national format
    ("phone", "312 345 6789", "il mio cellulare è 312 345 6789"),  # Italy, national format
    ("phone", "91 234 56 78", "oficina 91 234 56 78"),
    # Chinese mobiles, CJK-adjacent and adversarial formats
    ("cn_mobile", "13812345678", "手机13812345678"),
    ("cn_mobile", "139-1234-5678", "电话：139-1234-5678。"),
    ("cn_mobile", "137 1234 5678", "my mobile is 137 1234 5678 ok"),
    ("cn_mobile", "+86 158 1234 5678", "请拨打+86 158 1234 5678联系"),
    ("cn_mobile", fullwidth("18612345678"), "手机号" + fullwidth("18612345678") + "谢谢"),
    ("cn_mobile", "１３６－１２３４－５６７８", "号码１３６－１２３４－５６７８（全角）"),
    ("cn_mobile", "135\u30001234\u30005678", "联系135\u30001234\u30005678吧"),
    ("cn_mobile", "15912345678", "reach me at Tel15912345678 (office)"),  # glued to a cue word
    # Chinese resident IDs
    ("cn_id", ID_X, f"身份证号{ID_X}已登记"),
    ("cn_id", ID_X.lower(), f"id: {ID_X.lower()}"),
    ("cn_id", ID_DIGIT, f"证件号码：{ID_DIGIT}。"),
    ("cn_id", fullwidth(ID_DIGIT), f"身份证{fullwidth(ID_DIGIT)}"),
    ("cn_id", ID_GLUED, f"form: ID{ID_GLUED}, verified"),
    ("cn_id", ID_TYPO, f"身份证号：{ID_TYPO}（可能输错了一位）"),
    # payment cards
    ("card", "4111111111111111", "card 4111111111111111 exp 12/29"),
    ("card", "5500 0000 0000 0004", "Mastercard 5500 0000 0000 0004."),
    ("card", "3782-822463-10005", "amex 3782-822463-10005"),
    ("card", "4012-8888-8888-1881", "卡号4012-8888-8888-1881"),
    ("card", fullwidth("4111 1111 1111 1111"), "カード" + fullwidth("4111 1111 1111 1111")),
    # IBAN
    ("iban", "DE89 3704 0044 0532 0130 00", "IBAN DE89 3704 0044 0532 0130 00 please"),
    ("iban", "GB82WEST12345698765432", "to GB82WEST12345698765432."),
    ("iban", "FR1420041010050500013M02606", "FR1420041010050500013M02606"),
    ("iban", "de89 3704 0044 0532 0130 00", "my iban is de89 3704 0044 0532 0130 00"),  # lower case
    ("card", "502041269064", "I have lost my card 502041269064. Could you block it?"),  # Maestro, 12 digits, after "card"
    # IPs
    ("ipv4", "203.0.113.42", "from 203.0.113.42, port 443"),
    ("ipv4", "10.12.0.7", "内网地址10.12.0.7"),
    ("ipv6", "2001:db8:85a3::8a2e:370:7334", "addr 2001:db8:85a3::8a2e:370:7334."),
    ("ipv6", "fe80::1ff:fe23:4567:890a", "[fe80::1ff:fe23:4567:890a]:8080"),
    # secrets
    ("secret", "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEf", "key sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEf"),
    ("secret", "sk-ant-api03-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf-AbCdEfGh", "ANTHROPIC_API_KEY=sk-ant-api03-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf-AbCdEfGh"),
    ("secret", "AKIAIOSFODNN7EXAMPLE", "aws AKIAIOSFODNN7EXAMPLE creds"),
    ("secret", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end"),
    ("secret", "Bearer 9a8b7c6d5e4f3a2b1c0d", "Authorization: Bearer 9a8b7c6d5e4f3a2b1c0d"),
    ("secret", "Q7f9Xk2LmP4vR8sT", "api_key = 'Q7f9Xk2LmP4vR8sT'"),
    ("secret", "hunter2!x", "password: hunter2!x"),
    ("secret", "Abc123456", "我的密码：Abc123456，别告诉别人"),
    ("secret", "hunter22", "密码是 hunter22."),
    ("secret", "１２３４５６", "验证码为１２３４５６"),  # full-width digits, as IMEs type them
    ("secret", "芝麻开门吧", "口令：芝麻开门吧，快"),  # after a colon, Chinese too
    ("secret", "S3cretPass!9", "DATABASE_URL=postgres://admin:S3cretPass!9@db.internal:5432/app"),  # in a URL
    # known key formats, without a key word beside them
    ("secret", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "charge it with sk_live_4eC39HqLyjWDarjtT1zdp7dc please"),
    ("secret", "rk_test_51Hx2eF9kLmN0pQrStUvWxYz", "use rk_test_51Hx2eF9kLmN0pQrStUvWxYz here"),
    ("secret", "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI", "gemini AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI ok"),
    ("secret", "hf_Qw3ErTy7UiOp1AsDfGh5JkLzXcVbNm2Qw8", "HF hf_Qw3ErTy7UiOp1AsDfGh5JkLzXcVbNm2Qw8 works"),
    ("secret", "glpat-A1b2C3d4E5f6G7h8I9j0", "token glpat-A1b2C3d4E5f6G7h8I9j0 for CI"),
    ("secret", "npm_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "npm_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 in .npmrc"),
    ("secret", "gsk_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4", "groq gsk_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4"),
    ("secret", "r8_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "replicate r8_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 now"),
    ("secret", "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",
     "mail 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 sent"),
    ("secret", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEF",
     "gh github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEF ok"),
    # a private key's body (the BEGIN and END lines stay)
    ("secret", "MIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aumDoiXzPxfTqBbYd4b6xrHmVA\nxY9zAB12C3+/w==",
     "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aumDoiXzPxfTqBbYd4b6xrHmVA\nxY9zAB12C3+/w==\n-----END RSA PRIVATE KEY-----\n"),
    # US social security numbers (dashed)
    ("us_ssn", "123-45-6789", "SSN: 123-45-6789."),
    # names
    ("person", "John Smith", "Hi, my name is John Smith and I need help."),
    ("person", "Emily", "I'm Emily, the account owner."),
    ("person", "Sarah Connor", "Dear Sarah Connor, thanks."),
    ("person", "Brown", "Please ask Mr. Brown."),
    ("person", "Zoë Ångström", "Hello, my name is Zoë Ångström."),
    ("person", "José Núñez", "Dear José Núñez, thank you."),
    ("person", "Łukasz Żółć", "Best regards,\nŁukasz Żółć"),
    ("person", "Søren Kierkegaard", "Name: Søren Kierkegaard"),
    ("person", "Müller", "Please ask Mr. Müller."),
    ("person", "王小明", "你好，我叫王小明，想咨询。"),
    ("person", "李娜", "我是李娜，今年三十岁。"),
    ("person", "欧阳娜娜", "联系人：欧阳娜娜"),
    ("person", "张伟", "请转告张伟先生。"),
    ("person", "韩梅梅", "她叫韩梅梅，是我同事。"),
    ("person", "张三丰", "持卡人：张三丰"),
]

# Text that must come back unchanged (false-positive guards)
CLEAN: list[str] = [
    "DATABASE_URL=postgresql://user:password@localhost:5432/app",  # a placeholder, no secret
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----",  # public
    "I am going to the store at 5pm, I'm happy.",
    "我是学生，今年20岁。",
    "Version 1.2.3 was released on 2024-05-01 at 12:30:45.",
    "Order 000-12-3456 shipped; ticket 2024-11-29-0001.",
    "The answer is 42 and pi is 3.14159.",
    "Total: 1,234,567 tokens in 17 requests.",
    "Dear Sir or Madam, thank you.",
    "Use the token budget wisely; the key point is speed.",
    "localhost is 127.0.0.1 and :: is unspecified",
    "build abc13812345678 passed; see MyTel13812345678",  # glued to a word that is no cue word
    "md5 ab12cdef0123456789abcdef01234567 and sha ab12cd34ef56ab78cd90ef12ab34cd56ef78ab90",  # hashes, not IBANs
    "order 612345678 shipped; x = [123, 456, 789]; ids 110105 19880412",
    "order 502041269064 shipped",  # 12 Luhn-valid digits without a card word: an order number
    # 密码/验证码 + 是/为 and the words of a sentence, no password
    "功能谢谢看到密码为了结果.资料必须或者责任时间更新文件.", "验证码为您的手机号后四位", "请问你的密码是多少",
]


def run_cli(args: list[str], stdin: bytes = b"", env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run `shadowreplay ...` as a real separate process (python -m shadowreplay.cli)."""
    import os

    full_env = {k: v for k, v in os.environ.items() if k != "SHADOWREPLAY_SCRUB_KEY"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "shadowreplay.cli", *args], input=stdin, capture_output=True,
                          env=full_env, cwd=REPO, timeout=timeout)
