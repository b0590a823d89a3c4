"""Find credentials in text before it is committed; pure, no I/O.

Git history is forever, so a fact or topic that carries a key must be refused
before the commit, not cleaned up after. Two kinds of detector run over the
text: token families with a recognisable shape (``AKIA...``, ``ghp_...``,
``-----BEGIN ... PRIVATE KEY-----``) and assignments (``password = ...``,
``api_key: ...``) whose value looks like a real credential rather than a
placeholder, a reference or prose.

False positives matter as much as misses: ordinary notes about token buckets,
password-reset flows, git SHAs, UUIDs, paths and URLs must pass. Every pattern
is anchored at the start of a word and bounded, so scanning stays linear in
the length of the text.

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from am.records.secret_values import char_classes as _char_classes
from am.records.secret_values import entropy as _entropy
from am.records.secret_values import is_placeholder as _is_placeholder
from am.records.secret_values import looks_random as _looks_random

__all__ = ["KINDS", "SecretFinding", "scan_fields", "scan_text"]


@dataclass(frozen=True)
class SecretFinding:
    """One suspected credential: what it looks like and where it is, redacted."""

    kind: str
    field: str
    line: int
    excerpt: str

    def describe(self) -> str:
        """Say where the suspected credential is and what it looks like, for an error message."""
        return f"field '{self.field}' line {self.line} looks like a credential: {self.kind} ({self.excerpt})"


# A hit is (kind, start, end) of the secret within the text.
_Hit = tuple[str, int, int]
_Check = Callable[[re.Match[str], str], bool]


@dataclass(frozen=True)
class _Family:
    kind: str
    pattern: re.Pattern[str]
    check: _Check | None = None
    needs: tuple[str, ...] = ()  # run only on a text whose lower case holds one of these (a scan stays cheap)


# --- helpers ---------------------------------------------------------------------

def _after_prefix(match: re.Match[str]) -> str:
    """Return a token without its family prefix (up to the first _ or -)."""
    token = match.group("secret")
    cut = min((i for i in (token.find("_"), token.find("-")) if i >= 0), default=-1)
    return token[cut + 1 :]


def _random_body(match: re.Match[str], text: str) -> bool:
    return _looks_random(_after_prefix(match))


def _not_placeholder(match: re.Match[str], text: str) -> bool:
    return not _is_placeholder(_after_prefix(match))


# Key material (base64) must follow a PEM header within a few lines; a note
# that only names the header ("files start with -----BEGIN ...") is not a key.
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/]{20}")


def _has_key_material(match: re.Match[str], text: str) -> bool:
    tail = text[match.end() : match.end() + 400]
    boundary = tail.find("-----")  # the END line, or the next header
    if boundary >= 0:
        tail = tail[:boundary]
    return _KEY_MATERIAL.search(tail) is not None and "xxxx" not in tail.lower()


def _is_jwt(match: re.Match[str], text: str) -> bool:
    header = match.group("secret").split(".", 1)[0]
    if len(header) > 2000:  # real headers are short; huge ones only cost time
        return False
    try:
        decoded = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
        parsed = json.loads(decoded)
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(parsed, dict) and "alg" in parsed


def _is_basic_credential(match: re.Match[str], text: str) -> bool:
    encoded = match.group("secret")
    try:
        decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        plain = decoded.decode("ascii")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = plain.partition(":")
    return bool(colon) and plain.isprintable() and _is_password(password, user=user)


def _url_password(match: re.Match[str], text: str) -> bool:
    return _is_password(match.group("secret"), user=match.group("user"), min_length=6)


_COMMAND = "password on a command line"


def _command_password(match: re.Match[str], text: str) -> bool:
    value = match.group("secret")  # "$PASS", "$(cat f)", "%PASS%", "<password>": a reference, not the password
    return not value.startswith(("$", "%", "<")) and _is_password(value, min_length=6)


def _random_value(match: re.Match[str], text: str) -> bool:
    return _looks_random(match.group("secret"), min_entropy=3.5)


# Left and right edges of a token: not glued to other token characters.
_L = r"(?<![A-Za-z0-9_\-])"
_R = r"(?![A-Za-z0-9_\-])"


# What each token family's match holds, lower-cased (the literals am/sessions/redaction.py looks for):
# a family's expression runs only on a text that holds one. Python's re tries a pattern that opens with a
# look-behind at every position, ~15 us for an ordinary 120-character fact, ~0.4 ms for the thirty families.
_STARTS: dict[str, tuple[str, ...]] = {
    "GCP service-account private key": ("-----begin",),
    "private key block": ("-----begin",),
    "AWS access key id": ("akia", "asia", "abia", "acca"),
    "AWS secret access key": ("aws_secret", "awssecret", "secret_access", "secretaccess"),
    "GCP API key": ("aiza",),
    "Azure storage account key": ("accountkey",),
    "Azure SAS token": ("sig=",),
    "GitHub token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "GitLab token": ("glpat-", "glptt-", "gldt-", "glrt-", "glsoat-", "glft-", "glcbt-"),
    "Anthropic API key": ("sk-ant-",),
    "OpenAI API key": ("sk-",),
    "Slack token": ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xapp-"),
    "Slack webhook URL": ("hooks.slack.com",),
    "Discord webhook URL": ("discord",),
    "Stripe live key": ("sk_live_", "rk_live_"),
    "Stripe webhook secret": ("whsec_",),
    "npm token": ("npm_",),
    "PyPI token": ("pypi-",),
    "Hugging Face token": ("hf_",),
    "SendGrid API key": ("sg.",),
    "Google OAuth client secret": ("gocspx-",),
    "DigitalOcean token": ("doo_v1_", "dop_v1_", "dor_v1_"),
    "Telegram bot token": (":aa",),
    "JSON Web Token": ("eyj",),
    "password in URL": ("://",),
    "HTTP bearer token": ("bearer",),
    "HTTP basic auth credentials": ("basic",),
}


def _family(kind: str, pattern: str, check: _Check | None = None, needs: tuple[str, ...] = ()) -> _Family:
    return _Family(kind, re.compile(pattern), check, needs or _STARTS[kind])


# Most specific first: where two families claim the same characters, the
# earlier one names the finding.
_FAMILIES: tuple[_Family, ...] = (
    _family(
        "GCP service-account private key",
        r'"private_key"\s*:\s*"(?P<secret>-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY-----)',
        _has_key_material,
    ),
    _family(
        "private key block",
        r"(?P<secret>-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----)",
        _has_key_material,
    ),
    _family(
        "AWS access key id",
        r"(?<![A-Za-z0-9])(?P<secret>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?![A-Za-z0-9])",
        lambda m, t: not _is_placeholder(m.group("secret")),
    ),
    _family(
        "AWS secret access key",
        r"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s{0,3}(?:=|:|=>)"
        r"\s{0,3}[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        _random_value,
    ),
    _family("GCP API key", _L + r"(?P<secret>AIza[0-9A-Za-z_\-]{35})" + _R, _not_placeholder),
    _family(
        "Azure storage account key",
        r"(?i:AccountKey)\s{0,3}=\s{0,3}(?P<secret>[A-Za-z0-9+/]{40,400}+={0,2})",
        _random_value,
    ),
    _family(
        "Azure SAS token",
        r"[?&;]sig=(?P<secret>[A-Za-z0-9%+/]{30,400}+)",
        _random_value,
    ),
    _family(
        "GitHub token",
        _L + r"(?P<secret>gh[pousr]_[A-Za-z0-9]{36,255}+)" + _R,
        _not_placeholder,
    ),
    _family(
        "GitHub token",
        _L + r"(?P<secret>github_pat_[A-Za-z0-9_]{50,255}+)" + _R,
        _not_placeholder,
    ),
    _family(
        "GitLab token",
        _L + r"(?P<secret>gl(?:pat|ptt|dt|rt|soat|ft|cbt)-[A-Za-z0-9_\-]{20,255}+)",
        _random_body,
    ),
    _family(
        "Anthropic API key",
        _L + r"(?P<secret>sk-ant-[A-Za-z0-9_\-]{32,255}+)",
        _random_body,
    ),
    _family(
        "OpenAI API key",
        _L + r"(?P<secret>sk-(?!ant-)(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_\-]{20,255}+)",
        lambda m, t: _looks_random(m.group("secret")[3:], min_entropy=3.5),
    ),
    _family(
        "Slack token",
        _L + r"(?P<secret>(?:xox[abposr]|xapp)-[0-9A-Za-z\-]{10,255}+)",
        lambda m, t: _not_placeholder(m, t) and any(c.isdigit() for c in m.group("secret")),
    ),
    _family(
        "Slack webhook URL",
        r"(?P<secret>https://hooks\.slack\.com/(?:services|workflows|triggers)/"
        r"[A-Za-z0-9_/\-]{20,300}+)",
        lambda m, t: not _is_placeholder(m.group("secret").rsplit("/", 1)[-1]),
    ),
    _family(
        "Discord webhook URL",
        r"(?P<secret>https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/"
        r"[0-9]{5,30}/[A-Za-z0-9_\-]{40,200}+)",
        lambda m, t: not _is_placeholder(m.group("secret").rsplit("/", 1)[-1]),
    ),
    _family(
        "Stripe live key",
        _L + r"(?P<secret>(?:sk|rk)_live_[0-9A-Za-z]{20,255}+)",
        _not_placeholder,
    ),
    _family(
        "Stripe webhook secret",
        _L + r"(?P<secret>whsec_[0-9A-Za-z+/=]{24,255}+)",
        _random_body,
    ),
    _family("npm token", _L + r"(?P<secret>npm_[A-Za-z0-9]{36})" + _R, _random_body),
    _family(
        "PyPI token",
        _L + r"(?P<secret>pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}+)",
    ),
    _family("Hugging Face token", _L + r"(?P<secret>hf_[A-Za-z]{34})" + _R, _random_body),
    _family(
        "SendGrid API key",
        _L + r"(?P<secret>SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})" + _R,
        _not_placeholder,
    ),
    _family(
        "Google OAuth client secret",
        _L + r"(?P<secret>GOCSPX-[A-Za-z0-9_\-]{28})" + _R,
        _not_placeholder,
    ),
    _family(
        "DigitalOcean token",
        _L + r"(?P<secret>do[opr]_v1_[a-f0-9]{64})" + _R,
        _not_placeholder,
    ),
    _family(
        "Telegram bot token",
        r"(?<![0-9])(?P<secret>[0-9]{8,10}:AA[A-Za-z0-9_\-]{33})" + _R,
        _random_body,
    ),
    _family(
        "JSON Web Token",
        _L + r"(?P<secret>eyJ[A-Za-z0-9_\-]{10,}+\.[A-Za-z0-9_\-]{10,}+\.[A-Za-z0-9_\-]{10,}+)",
        _is_jwt,
    ),
    _family(
        "password in URL",
        r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,20}://"
        r"(?P<user>[^\s:/@?#\[\]\"'<>]{0,100}):(?P<secret>[^\s/@?#\"'<>]{1,200}+)@"
        r"(?=[A-Za-z0-9\[])",
        _url_password,
    ),
    _family(
        "HTTP bearer token",
        r"(?i:\bbearer)\s{1,3}(?P<secret>[A-Za-z0-9\-._~+/]{20,400}+=*)",
        _random_value,
    ),
    _family(
        "HTTP basic auth credentials",
        r"(?i:\bbasic)\s{1,3}(?P<secret>[A-Za-z0-9+/]{8,400}+={0,2})(?![A-Za-z0-9+/=])",
        _is_basic_credential,
    ),
    # A password given to a command: mysql -pX, sshpass -p X, docker login -p X, curl -u user:X.
    _family(
        _COMMAND,
        r"\bmysql[a-z]{0,6}\b[^\n|;&]{0,200}?[^\S\n]-p['\"]?(?P<secret>[^\s'\"]{1,200}+)",
        _command_password, ("mysql",),
    ),
    _family(_COMMAND, r"\bsshpass[^\S\n]+-p[^\S\n]*['\"]?(?P<secret>[^\s'\"]{1,200}+)", _command_password,
            ("sshpass",)),
    _family(
        _COMMAND,
        r"\b(?:docker|podman|nerdctl)[^\S\n]+login\b[^\n|;&]{0,200}?[^\S\n](?:-p|--password)(?:[^\S\n]+|=)"
        r"['\"]?(?P<secret>[^\s'\"]{1,200}+)",
        _command_password, ("login",),
    ),
    _family(
        _COMMAND,
        r"\bcurl\b[^\n|;&]{0,300}?[^\S\n](?:-u[^\S\n]*|--user(?:[^\S\n]+|=))['\"]?"
        r"(?P<user>[^\s:'\"]{1,100}):(?P<secret>[^\s'\"]{1,200}+)",
        lambda m, t: _command_password(m, t) and _is_password(m.group("secret"), user=m.group("user"), min_length=6),
        ("curl",),
    ),
    # "the admin password is X", "the password for prod is X": a value that is no word, path or placeholder.
    _family(
        "password in prose",
        r"(?i:\b(?:pass(?:word|wd|phrase|code)))(?:[^\S\n]+(?i:for|of|to|on|at)[^\S\n]+[^\n.,;:!?]{1,40}?)?"
        r"[^\S\n]+(?i:is|was|remains)[^\S\n]+(?:(?i:now|still)[^\S\n]+)?['\"`]?"
        r"(?P<secret>[^\s'\"`]{1,200}?)(?=[.,;:!?)]?(?:\s|$|['\"`]))",
        lambda m, t: _is_password(m.group("secret"), quoted=False) and _char_classes(m.group("secret")) >= 2,
        ("pass",),
    ),
    # An htpasswd or crypt(3) line: $apr1$, $1$, $5$, $6$, bcrypt's $2y$, {SHA}: crackable offline.
    _family(
        "password hash",
        r"(?<![A-Za-z0-9$])(?P<secret>\$(?:apr1|[156])\$[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{22,86}"
        r"|\$2[abxy]?\$[0-9]{2}\$[./A-Za-z0-9]{53}|\{SHA\}[A-Za-z0-9+/]{27}=)(?![A-Za-z0-9./+=])",
        needs=("$", "{sha}"),
    ),
)

# --- assignments -------------------------------------------------------------------

_PASSWORD_ASSIGNMENT = "password assignment"
_SECRET_ASSIGNMENT = "high-entropy secret assignment"

_UNQUOTED_CHARS = "".join(
    re.escape(c) for c in map(chr, range(0x21, 0x7F)) if c not in "\"'`,;&"
)
# name, optional closing quote/bold, separator, then a quoted or bare value.
# Values are printable ASCII: real credentials are, and it keeps Chinese prose
# after "密码：" from reading as a password.
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-$])"
    r"(?P<name>-{0,2}[A-Za-z_$][A-Za-z0-9_.\-]{0,60}|密码|口令|密钥|秘钥|令牌)"
    r"[\"']?\*{0,2}[ \t]{0,3}(?::=|=>|=(?!=)|:(?![:/])|：|是|为)[ \t]{0,3}"
    r"(?:\"(?P<dq>[\x20\x21\x23-\x7e]{1,200}+)\"|'(?P<sq>[\x20-\x26\x28-\x7e]{1,200}+)'"
    r"|`+(?P<bq>[\x20-\x5f\x61-\x7e]{1,200}+)`|(?P<bare>[" + _UNQUOTED_CHARS + r"]{1,200}+))"
)
_CJK_NAMES = {"密码": "password", "口令": "password", "密钥": "secret", "秘钥": "secret",
              "令牌": "secret"}  # fmt: skip
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "pass", "passphrase", "passcode"})
_SECRET_WORDS = frozenset(
    {"secret", "secrets", "token", "key", "apikey", "credential", "credentials", "secretkey"}
)
# "<qualifier>_key" names that are data-structure keys, not credentials.
_NOT_SECRET_QUALIFIERS = frozenset(
    {
        "public", "primary", "foreign", "sort", "partition", "cache", "idempotency",
        "hash", "lookup", "routing", "shard", "row", "composite", "unique", "dedup",
        "dedupe", "i18n", "translation", "object", "map", "dict", "group", "order",
        "index", "next", "page", "pagination", "cursor", "continuation", "sync",
        "tracking", "correlation", "message", "cancellation", "csrf", "max", "min",
        "num", "input", "output", "prompt", "completion", "total", "unit", "hot",
        "short", "shortcut", "keyboard", "natural", "surrogate", "s3",
        "storage", "bucket", "dictionary", "design", "sequence", "last", "first",
    }
)  # fmt: skip
# Names whose value is a credential even when it is plain hex or a UUID.
_STRONG_NAME_WORDS = frozenset(
    {
        "secret", "secrets", "token", "api", "apikey", "auth", "access", "private",
        "client", "password", "passwd", "pwd", "credential", "credentials", "signing",
        "session", "webhook", "master", "encryption", "license", "bearer",
    }
)  # fmt: skip
_HEX = re.compile(r"[0-9a-fA-F]{7,64}")
_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_REFERENCE = re.compile(r"[A-Za-z_$][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\.?")
_IDENTIFIER = re.compile(
    r"_*(?:"
    r"[A-Za-z][a-z]+(?:[A-Z][a-z]+)*"  # camelCase / PascalCase words
    r"|[a-z]+(?:[_\-][a-z0-9]+)*"  # snake_case / kebab-case
    r"|[A-Z]+(?:_[A-Z0-9]+)+"  # ENV_VAR_NAME
    r")"
)
# A generated secret does not spell these words; a value that does is a
# description or a sample ("secret%3Dpassword", "my-api-token-here").
_WORDY = re.compile(r"(?i)secret|passw|token|api_?key")
_PATH = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\).*|.*/.*\.[A-Za-z0-9]{1,5}")


def _name_kind(name: str) -> str | None:
    """Return "password", "secret" or None for an assignment's left-hand side."""
    if name in _CJK_NAMES:
        return _CJK_NAMES[name]
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    if not words:
        return None
    last = words[-1]
    if last in _PASSWORD_WORDS or last.endswith(("password", "passwd")):  # PGPASSWORD, MYSQLPASSWORD
        return "password"
    if last in _SECRET_WORDS:
        if len(words) >= 2 and words[-2] in _NOT_SECRET_QUALIFIERS:
            return None
        return "secret"
    return None


def _is_literal(value: str) -> bool:
    """Tell whether a bare value is literal data, not code, a reference or a word."""
    if any(c in value for c in "(){}[]<>"):
        return False
    if "://" in value or _PATH.fullmatch(value):
        return False
    return not (_REFERENCE.fullmatch(value) or _IDENTIFIER.fullmatch(value))


def _is_prose(value: str) -> bool:
    """Tell whether a value is a phrase ("top secret", 'The "pass" statement')."""
    words = [w.strip("\"'.,:;!?()\\") for w in value.split()]
    return len(words) >= 2 and 2 * sum(w.isalpha() for w in words) >= len(words)


def _is_password(
    value: str, *, user: str | None = None, quoted: bool = True, min_length: int = 8
) -> bool:
    """Tell whether a value assigned to a password looks like a real one."""
    if len(value) < min_length or _is_placeholder(value):
        return False
    if user is not None and value.lower() == user.lower():
        return False
    if "://" in value or _PATH.fullmatch(value) or _is_prose(value):
        return False
    if _WORDY.search(value) and (_IDENTIFIER.fullmatch(value) or _REFERENCE.fullmatch(value)):
        return False  # "challengePassword", settings.DB_PASSWORD: names, even quoted
    return quoted or _is_literal(value)


def _is_high_entropy(value: str, name: str) -> bool:
    """Tell whether a value assigned to a key or token looks like a credential."""
    if len(value) < 16 or _entropy(value) < 3.5 or _is_placeholder(value):
        return False
    # Generated secrets have no spaces or brackets and spell no words, quoted
    # or not; code, paths, URLs and names do.
    if " " in value or _WORDY.search(value) or not _is_literal(value):
        return False
    if _HEX.fullmatch(value) or _UUID.fullmatch(value):
        words = {w.lower() for w in _NAME_WORDS.findall(name)}
        return bool(words & _STRONG_NAME_WORDS)
    return True


def _judge(name: str, value: str, *, quoted: bool) -> str | None:
    """Return the finding kind for ``name = value``, or None if it is harmless."""
    kind = _name_kind(name)
    if kind == "password" and _is_password(value, quoted=quoted):
        return _PASSWORD_ASSIGNMENT
    if kind is not None and _is_high_entropy(value, name):
        return _SECRET_ASSIGNMENT
    return None


def _assignment_hits(text: str) -> Iterator[_Hit]:
    """Yield assignments of credential-looking values to credential-like names."""
    pos = 0
    while (match := _ASSIGNMENT.search(text, pos)) is not None:
        name = match.group("name").lstrip("-$")
        group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
        raw, start = match.group(group), match.start(group)
        pos = start  # not a credential: a name may sit in what was read as its value ("note: PGPASSWORD=...")
        if group == "bare":
            if raw.startswith(":"):
                continue  # reStructuredText roles (":type key: :class:`x`"), not values
            # Sentence punctuation and Markdown closers are not part of a value.
            value = raw.rstrip(".:)]}>*")
        else:
            value = raw.strip()
            start += len(raw) - len(raw.lstrip())
        kind = _judge(name, value, quoted=group != "bare")
        if kind is not None:
            pos = start + len(value)
            yield kind, start, start + len(value)


# --- scanning ---------------------------------------------------------------------

KINDS: tuple[str, ...] = tuple(
    dict.fromkeys([f.kind for f in _FAMILIES] + [_PASSWORD_ASSIGNMENT, _SECRET_ASSIGNMENT])
)


# Every family's literals once: a text is searched for each (a C-level search, ~60 ns), and only the families
# whose literal it holds run their expression. An ordinary fact holds none and runs none.
_FAMILY_WORDS: tuple[str, ...] = tuple(sorted({word for family in _FAMILIES for word in family.needs}))


def _family_hits(text: str) -> Iterator[_Hit]:
    lowered = text.lower()
    present = {word for word in _FAMILY_WORDS if word in lowered}
    if not present:
        return
    for family in _FAMILIES:
        if present.isdisjoint(family.needs):
            continue
        for match in family.pattern.finditer(text):
            if family.check is None or family.check(match, text):
                yield family.kind, match.start("secret"), match.end("secret")


def _redact(secret: str) -> str:
    """Show the first 4 characters (fewer for short values: at most a quarter)."""
    shown = 4 if len(secret) >= 16 else len(secret) // 4
    return secret[:shown] + "…"


def scan_text(text: str, *, field: str = "body") -> list[SecretFinding]:
    """Return the suspected credentials in a text, in order of position."""
    taken: list[tuple[int, int]] = []  # sorted, non-overlapping spans already reported
    hits: list[_Hit] = []
    for hit in _all_hits(text):
        _, start, end = hit
        i = bisect.bisect_left(taken, (start, end))
        if (i > 0 and taken[i - 1][1] > start) or (i < len(taken) and taken[i][0] < end):
            continue  # a more specific family already named these characters
        taken.insert(i, (start, end))
        hits.append(hit)
    if not hits:
        return []
    line_starts = [m.end() for m in re.finditer("\n", text)]
    hits.sort(key=lambda h: h[1])
    return [
        SecretFinding(
            kind=kind,
            field=field,
            line=bisect.bisect_right(line_starts, start) + 1,
            excerpt=_redact(text[start:end]),
        )
        for kind, start, end in hits
    ]


def _all_hits(text: str) -> Iterator[_Hit]:
    yield from _family_hits(text)
    yield from _assignment_hits(text)


def scan_fields(fields: Mapping[str, object]) -> list[SecretFinding]:
    """Return the suspected credentials in every string of a record's fields."""
    findings: list[SecretFinding] = []
    for key, value in fields.items():
        findings.extend(_scan_value(str(key), value))
    return findings


def _scan_value(field: str, value: object) -> list[SecretFinding]:
    if isinstance(value, str):
        findings = scan_text(value, field=field)
        # A frontmatter key can itself be the name: "api_token: 8f2Kq...".
        leaf = field.rsplit(".", 1)[-1]
        stripped = value.strip()
        if not findings and "\n" not in stripped:
            kind = _judge(leaf, stripped, quoted=False)
            if kind is not None:
                findings = [SecretFinding(kind, field, 1, _redact(stripped))]
        return findings
    if isinstance(value, (list, tuple)):
        return [f for item in value for f in _scan_value(field, item)]
    if isinstance(value, Mapping):
        return [f for k, v in value.items() for f in _scan_value(f"{field}.{k}", v)]
    return []
