"""Over-scrub (issue 38): text with no personal data that the scrubber used to change. Each
case names its mechanism; all of it must come back unchanged."""

from __future__ import annotations

import pytest

from shadowreplay.anonymize import Scrubber

UNCHANGED = [
    # a product after "such as" / "like" taken for a person; a tool that is a surname, alone
    "I use a password manager such as Bitwarden.", "Jenkins asks for a password.",
    # an article before an acronym or a noun starts a sentence; German nouns beside few function words
    "El PIN caducó.", "Le PIN a expiré.", "Das Admin-Passwort steht im Tresor.", "Er steht im Tresor.",
    # a rare capitalised word as a thing's name: after an indefinite article before a noun, after a
    # preposition of place, in a list beside a product; a run ending in a noun that ends a term
    "fugashi is a Cython wrapper for MeCab", "names as they are used on Wiktionary, the free dictionary",
    "a library for Python on Linux, OSX, Cygwin or other unix-like systems", "docstrings in reST, Google and Numpydoc format",
    "define a Backus-Naur Form definition", "EMSO (Unique Master Citizen Number)", "Wolfram Research for MathWorld",
    "Can you recommend a tool like Grafterix for this?",
    # code after a credential word
    "if not password: raise ValueError('password is required')",
    "password = None",
    "password: Optional[str] = None",
    # a trigger name that is code, and "name is" followed by a sentence's short words
    "name: Optional[str] = None",
    "def f(name: Any, value: int): ...",
    "The name is an identifier and an attribute; an error is raised when the name is not set.",
    # capitalised identifiers and terms the same text writes in lower case
    "# Instances of Field are only ever created from within this module; use field() instead.",
    "Use the server setting. Server Error: the server said no.",
    "import numba\n\nNumba compiles the function; numba.njit is the decorator.",
    # digits taken as phones or cards
    "Fixes CVE-2021-44228 and CVE-2022-22965.",
    "HEX = b'0123456789ABCDEF'",
    "Free Software Foundation, Boston, MA 02110-1301 USA",
    # section numbers and version strings taken as IPv4
    "As described in section 5.2.1.1. Append the header.",
    "RFC-2068, section 19.6.1.2 says so",
    "Requires-Dist: py4j<0.10.9.10,>=0.10.9.7",
    "version 1.2.3.4 was released",
    # a Chinese word read as a name
    "請輸入金鑰以繼續",
    "密钥和金鑰都要保管好",
    # a secret word is no name
    "Passwort vergessen? Kennwort zurücksetzen.",
    "¿Olvidaste tu contraseña?",
    # articles and German nouns at a sentence start taken as names
    "Le chat est noir.", "Le mot de passe doit contenir un chiffre.", "Das Passwort muss Sonderzeichen enthalten.",
    "El perro come.", "Der Code zur Anmeldung ist abgelaufen.",
    # secret words beside code and things
    "if user.check_password(password): login(user)", "The login form has username and password fields.",
    "My password manager is 1Password.", "The passphrase is too short.", "パスワードは8文字以上にしてください",
    "hash the secret to a 64-bit hash value", "password: _PasswordType | None = None,",
    'if(l.type==="keydown"||l.type==="keyup"||l.type==="password")return',
    "std::shared_ptr<Azure::Core::Credentials::TokenCredential> token_credential;", "Private Key Encryption:",
    "passing `variant='B'` returns the other code", "Added the `Language.to_alpha3()` method, see the password docs",
    # countries and states, alone or of several words
    " * CPF (Cédula de Persona Física, Costa Rica physical person ID number)", "a Montenegro tax number",
    "San Marino national tax number", "flights to El Salvador and North Macedonia",
    # a German compound of long words is no double-barrelled surname
    " * UID (Umsatzsteuer-Identifikationsnummer, Austrian VAT number)",
    # English word formation: prefixes, suffixes, two words
    "JSON Web Signature (JWS) Unencoded Payload Option", "Deprecations and Removals", "a Pythonic API",
    "There are helpful Makefile targets", "| Lookahead and lookback |",
    # a changelog line that starts with a verb before a product
    "==================\n\n* Add Cython optimization for quoting", "- Made Cython line tracing opt-in via an env var",
    # a name-like word the text writes as an identifier
    "Install it with `pip install rich`. Anything renderable by Rich may be printed: rich.print(x).",
    # a street
    "Foundation, Inc., 51 Franklin Street, Fifth Floor, Boston", "she lives at 12 Baker Lane",
    # demonyms and languages; a common token before a word-surname
    " * Czech bank account number", "the Austrian Company Register", "such as replacing Serbo-Croatian with Serbian",
    "avoids\n  Callback Hell.\n- Provides",
    # an English word after `bearer`, or as a key's value
    "or sent with bearer authentication and retries disabled", "- `comment_key='#comment'`: Key used for XML comments",
    # a word a technical noun names as a thing, there and everywhere in the text
    "Native Wayland Support\n\nChromium detects a Wayland session.", "the published Myers algorithm",
    "The optimized Huffman decoder is fast.", "It runs on Mac OS. Travis CI runs the tests.",
    # an imperative verb before a name-like word, then `and`; word formation in a heading
    "        Add Amiga and newer MacOS support.", "Runtime Deprecations and End-of-Life APIs",
    # numbers: a quantity's key, a ruler, a version after `update to`, an id in a web address
    '"memoryLimit": 4345298944,', '"total_memory": "17179869184",', "information:123456789 123456789 12345",
    "* v8: update to 3.14.5.9", "Review-Url: https://codereview.chromium.org/2159683002",
    # a secret word in a path
    "awk -F: </etc/passwd '$3 >= 1000 {print $3}'",
    # identifiers glued to an operator, and their mentions; limits of integer types
    "for(var Pe=null,Me=Y,Le=Y=0;Le<j.length;Le++){}",
    "if len(buf) > 2147483647:",
    # a comment or a table cell starts a sentence
    "(0x025aa, 0x025ab,),  # Black Small Square", "| Alpha           | Linux       |",
]

STILL_FOUND = [
    ("connect to 10.0.3.7 now", "10.0.3.7"),
    ("the server is at 192.168.10.20.", "192.168.10.20"),  # an IP word declares it, full stop or not
    ("call 415-555-2671x565", "415-555-2671"),
    ("my name is lena andersson", "lena"),
    ("I met Carla yesterday.", "Carla"),
    ("Mr. Jenkins asks for a password.", "Jenkins"), ("El Greco pintó.", "Greco"),
    ("Unlike the Nevels novel, it is short.", "Nevels"), ("I met Priyanka in Kyoto.", "Priyanka"),
    ("I work in Zeliha's team.", "Zeliha"), ("Zeliha and Carla went home.", "Zeliha"),
    ("https://x.io/api?token=abcdef123456&page=2", "abcdef123456"),  # the token, not the next parameter
    ("Le Van Thanh came.", "Thanh"),
    # what the rules above must not drop
    ("Rich Chiodo fixed the bug.", "Chiodo"), ("Thanks Rich Chiodo.", "Chiodo"), ("Will Brysbaert joined us.", "Brysbaert"),
    ("Willshire and Willshire were engineers", "Willshire"), ("I met Diane Lane today", "Diane"),
    ("I flew to Costa Rica with Maria.", "Maria"), ("Authorization: Bearer abc123def456ghi789", "abc123def456ghi789"),
    ('api_key = "hunter2hunter2"', "hunter2hunter2"), ("Jan Krčmář\nElectronic equipment", "Krčmář"),
    ("give Tom server access", "Tom"), ("Meet Anna and Tom.", "Anna"), ("Kimiko Hoshino wrote it", "Hoshino"),
    ('"phone": "4155552671"', "4155552671"), ("my card is 1234 5678 9012 3456", "9012"),
    ("https://wa.me/14155552671", "14155552671"), ("username/password 'admin/hunter2'", "hunter2"),
    ("Anna Karlsson[1] wrote it. Karlsson[2] said so.", "Karlsson"), ("# Anna Smith wrote this", "Smith"),
    ("write to anna[at]example.org, Anna Berg", "anna"),
]


@pytest.fixture(scope="module")
def scrubber():
    return Scrubber(b"overscrub-test")


@pytest.mark.parametrize("text", UNCHANGED)
def test_unchanged(scrubber, text):
    assert scrubber.scrub_text(text).text == text


def test_a_mention_glued_to_a_bracket_is_code(scrubber):
    out = scrubber.scrub_text("List Anthropic's notices.\nx: List[str]").text
    assert out.endswith("x: List[str]") and not out.startswith("List Anthropic")


@pytest.mark.parametrize("text,value", STILL_FOUND)
def test_what_is_still_found(scrubber, text, value):
    assert value not in scrubber.scrub_text(text).text


def test_a_particle_of_a_name_is_not_looked_for_elsewhere(scrubber):
    """`De` in a name found is no name word of its own: the other `de` of the text stay."""
    text = "Ask Marta De Sousa.\n * NRT (Número de Registre Tributari, Andorra tax number)"
    out = scrubber.scrub_text(text).text
    assert "Marta" not in out and out.endswith("\n * NRT (Número de Registre Tributari, Andorra tax number)")
