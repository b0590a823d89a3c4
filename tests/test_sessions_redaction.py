"""Masking credentials in session logs: what secrets.py finds is masked, everything else is kept byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest

from am.records.secrets import _FAMILIES, scan_text
from am.sessions import redaction
from am.sessions.redaction import redact_log

GITHUB = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
SLACK = "xoxb-2048-1234567890-Zq8rT5mW2xHq7zz9Lm"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")


def test_every_token_family_of_secrets_py_has_a_literal_that_starts_it() -> None:
    kinds = {f.kind for f in _FAMILIES} - {"GCP service-account private key"}  # found by the private key block's
    assert kinds <= {kind for _, _, kind in redaction._LITERALS}


@pytest.mark.parametrize("secret, kind", [
    ("AKIAQ7R3XW5TZB2KJ4NP", "AWS access key id"),
    (GITHUB, "GitHub token"),
    (SLACK, "Slack token"),
    (JWT, "JSON Web Token"),
    ("postgres://admin:Wq9xZ7pL2mQ@db.internal:5432/app", "password in URL"),
])
def test_a_secret_anywhere_in_a_json_string_is_masked_and_the_line_stays_json(secret: str, kind: str) -> None:
    for text in (f"use {secret} now", f"line one\n{secret}", f"tab\t{secret}\tend", f"quoted \"{secret}\""):
        line = json.dumps({"type": "user", "message": {"role": "user", "content": text}})
        out = redact_log(line.encode() + b"\n")
        masked = json.loads(out.data)["message"]["content"]
        assert f"[redacted:{kind}]" in masked and not scan_text(masked)
        assert out.counts == {kind: 1}


def _through_codex_output(inner: str) -> tuple[Any, str]:
    """Redact a Codex function_call_output line whose output (JSON in a JSON string) is ``inner``; return the
    result and the output text as it was stored."""
    output = json.dumps({"output": inner, "metadata": {"exit_code": 0}})
    line = json.dumps({"type": "response_item", "payload": {"type": "function_call_output",
                                                             "call_id": "call_1", "output": output}})
    out = redact_log(line.encode() + b"\n")
    return out, json.loads(json.loads(out.data)["payload"]["output"])["output"]


def test_a_secret_in_json_inside_a_json_string_is_masked() -> None:
    """Codex writes a shell call's output (and arguments) as JSON inside a JSON string: a newline or tab before
    a key is `\\\\n` or `\\\\t` in the log, and the key after it is still a key."""
    for secret, kind in (("AKIAQ7R3XW5TZB2KJ4NP", "AWS access key id"), (GITHUB, "GitHub token")):
        for inner in (f"line one\n{secret}\n", f"ACCESSKEY\t{secret}\tActive", f"x\r\n{secret}"):
            out, masked = _through_codex_output(inner)
            assert secret.encode() not in out.data, inner
            assert f"[redacted:{kind}]" in masked and out.counts == {kind: 1}


def test_assignments_in_code_and_json_keys_are_masked_names_without_values_are_not() -> None:
    lines = [
        json.dumps({"content": "config:\n  password = \"Zq8#rT5!mW2x\"\n  api_token: aB3dE5fG7hJ9kL1mN3pQ5rS7tU9v"}),
        json.dumps({"password": "Hq7!zz9#Lm2p", "note": "self.tokens = burst; key ideas; token bucket"}),
        json.dumps({"content": "reset the password = see the docs"}),
    ]
    out = redact_log(("\n".join(lines) + "\n").encode())
    got = out.data.decode().splitlines()
    first = json.loads(got[0])["content"]
    assert "Zq8#rT5!mW2x" not in first and "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9v" not in first
    assert json.loads(got[1])["password"] == "[redacted:password assignment]"
    assert json.loads(got[1])["note"] == "self.tokens = burst; key ideas; token bucket"
    assert got[2] == lines[2]
    assert sum(out.counts.values()) == 3


def test_a_log_without_secrets_comes_back_as_the_same_object_and_bytes_outside_json_survive() -> None:
    data = "\n".join(json.dumps({"i": i, "text": "token bucket 令牌桶 ✓"}, ensure_ascii=False)
                     for i in range(500)).encode() + b"\n\xff\xfe not utf-8\n"
    assert redact_log(data).data is data
    broken = b"not json " + GITHUB.encode() + b" \xff\n"
    out = redact_log(broken)
    assert out.data == b"not json [redacted:GitHub token] \xff\n"


def test_a_private_key_block_is_masked_to_its_end_marker() -> None:
    body = "\\n".join(["MIIEowIBAAKCAQEA1b2c3d4e5f6g7h8i9j0kLmNoPqRsTuVwXyZ"] * 20)
    pem = f"-----BEGIN RSA PRIVATE KEY-----\\n{body}\\n-----END RSA PRIVATE KEY-----"
    line = '{"content":"here: ' + pem + ' done"}'
    out = redact_log(line.encode())
    assert json.loads(out.data) == {"content": "here: [redacted:private key block] done"}


def test_the_pure_python_finder_gives_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    data = (json.dumps({"c": f"key {GITHUB} and password=Zq8#rT5!mW2x"}) + "\n").encode() * 3
    fast = redact_log(data)
    finder = redaction._Finder()
    finder._ac = None
    monkeypatch.setattr(redaction, "_FINDER", finder)
    slow = redact_log(data)
    assert slow.data == fast.data and slow.counts == fast.counts == {"GitHub token": 3, "password assignment": 3}


def test_a_json_key_inside_a_json_string_is_an_assignment_too() -> None:
    """A config file read by a tool, or pasted by a person, is JSON inside the log's JSON string: its keys are
    written `\\"password\\": \\"...\\"` there, and the credential after one must be masked as any other."""
    for text, secret, kind in (
        ('{"user": "app", "password": "Zq8#rT5!mW2x"}', "Zq8#rT5!mW2x", "password assignment"),
        ('use "password" : "Hq7!zz9#Lm2p" please', "Hq7!zz9#Lm2p", "password assignment"),
        ('{\n  "api_token": "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9v"\n}', "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9v",
         "high-entropy secret assignment"),
    ):
        line = json.dumps({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": text}]}})
        out = redact_log(line.encode() + b"\n")
        assert secret.encode() not in out.data, text
        masked = json.loads(out.data)["message"]["content"][0]["content"]
        assert f"[redacted:{kind}]" in masked and out.counts == {kind: 1}


def test_a_json_key_in_json_inside_a_json_string_is_an_assignment_too() -> None:
    """Codex writes a shell call's output as JSON inside a JSON string: `cat config.json` there is JSON a level
    further down, its quotes `\\\\\\"`, and a password in it (or assigned in code) is masked all the same."""
    for inner, secret in (('{\n  "db_password": "Zq8#rT5!mW2x"\n}\n', "Zq8#rT5!mW2x"),
                          ('password = "Hq7!zz9#Lm2p"\n', "Hq7!zz9#Lm2p")):
        out, masked = _through_codex_output(inner)
        assert secret.encode() not in out.data, inner
        assert "[redacted:password assignment]" in masked and out.counts == {"password assignment": 1}
