"""Passwords in the shapes people paste from a terminal or write in a sentence are caught, on write and in ingest.

The scanner knew token families and `name = value` assignments, so these were written to history (and kept
in ingested session logs) as they were: `PGPASSWORD=...` (one upper-case word, which it did not read as a
password name), `mysql -p...`, `sshpass -p ...`, `docker login -p ...`, `curl -u user:...`, a password said
in a sentence ("the admin password is ..."), and an htpasswd or crypt(3) hash. Now a write refuses each
(exit 10, SecretError, as for every family) and `am ingest` masks each; the same commands and sentences
without a password in them pass. Secret-shaped values are assembled at run time from pieces, so this file
holds nothing a scanner would flag.
"""

from __future__ import annotations

import json
import random
import string

import pytest

from am.errors import SecretError
from am.records.secrets import scan_text
from am.sessions.redaction import redact_log
from am.vault import Vault

_rng = random.Random(36)


def _pw(n: int = 12) -> str:
    chars = string.ascii_letters + string.digits
    while True:
        value = "".join(_rng.choice(chars) for _ in range(n))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def _salt(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


CRYPT = string.ascii_letters + string.digits + "./"
SHAPES: list[tuple[str, str, str]] = [  # (kind, text with {}, the secret)
    ("password assignment", "PGPASSWORD={} psql -h db.internal -U app", _pw()),
    ("password on a command line", "mysql -h db.internal -uroot -p{} app_production", _pw()),
    ("password on a command line", "mysqldump -u backup -p'{}' --all-databases", _pw()),
    ("password on a command line", "sshpass -p {} ssh deploy@10.0.0.5", _pw()),
    ("password on a command line", "sshpass -p'{}' scp build.tar host:", _pw()),
    ("password on a command line", "docker login -u ci -p {} registry.example.io", _pw()),
    ("password on a command line", "docker login --password={} ghcr.io", _pw()),
    ("password on a command line", "curl -u admin:{} https://jenkins.internal/api/json", _pw()),
    ("password on a command line", "curl --user ops:{} -X POST https://x.internal/hook", _pw()),
    ("password in prose", "The admin password is {}.", _pw()),
    ("password in prose", "the password for the staging db is now {} (rotated Monday)", _pw()),
    ("password in prose", "Root passphrase was '{}' until the reset.", _pw() + "!"),
    ("password hash", "alice:{}", "$" + "apr1$" + _salt(CRYPT, 8) + "$" + _salt(CRYPT, 22)),
    ("password hash", "deploy:{}:19000:0:99999:7:::", "$" + "6$" + _salt(CRYPT, 16) + "$" + _salt(CRYPT, 86)),
    ("password hash", "bob:{}", "$" + "2y$10$" + _salt(CRYPT, 53)),
    ("password hash", "carol:{}", "{" + "SHA}" + _salt(string.ascii_letters + string.digits + "+/", 27) + "="),
]

ORDINARY = [
    "Run mysql -p to be asked for the password; never put it on the command line.",
    "mysql -u root -p app < dump.sql",
    "mysql -h db -P 3306 -u app -p$MYSQL_PWD app",
    "sshpass -p \"$(cat ~/.deploy-pass)\" ssh deploy@host",
    "sshpass -p $SSHPASS ssh host",
    "docker login --password-stdin ghcr.io < token.txt",
    "docker login -u ci -p $CI_REGISTRY_PASSWORD $CI_REGISTRY",
    "curl -u $USER:$TOKEN https://api.internal",
    "curl --user-agent am/1.0 https://example.com",
    "The password is stored in 1Password under Ops.",
    "The admin password was rotated yesterday.",
    "The password is required for every login.",
    "Your password is incorrect: try again.",
    "The password for the test account is in the team vault.",
    "password is 12345678 in the docs' example, do not use it",
    "Prices are $5$ and $6$ per seat (the table's markup).",
    "The PGPASSWORD variable is read by psql; set it in the CI secret store.",
    "Set PGPASSWORD=$DB_PASSWORD before running psql.",
    "compass=north",
]


@pytest.mark.parametrize(("kind", "template", "secret"), SHAPES, ids=[t[:24] for _, t, _ in SHAPES])
def test_the_shape_is_caught_and_masked(kind: str, template: str, secret: str) -> None:
    text = template.format(secret)
    assert [f.kind for f in scan_text(text)] == [kind], text
    line = json.dumps({"type": "user", "message": {"role": "user", "content": text}}).encode() + b"\n"
    out = redact_log(line)
    masked = json.loads(out.data)["message"]["content"]
    assert secret not in masked and f"[redacted:{kind}]" in masked and out.counts == {kind: 1}, masked


@pytest.mark.parametrize("text", ORDINARY)
def test_the_same_commands_and_sentences_without_a_password_pass(text: str) -> None:
    assert scan_text(text) == [], text
    assert redact_log(json.dumps({"text": text}).encode() + b"\n").counts == {}


def test_a_write_refuses_each_shape(alpha: Vault) -> None:
    for kind, template, secret in SHAPES:
        with pytest.raises(SecretError) as err:
            alpha.add_fact(f"Deploy note: {template.format(secret)}", topics=["project-alpha"])
        assert kind in err.value.message and secret not in err.value.message
