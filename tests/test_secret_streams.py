"""A credential split across streamed lines, or masked once and repeated later, is masked everywhere in a log.

A model's output saved as a stream (one JSON event a line: Anthropic's
``content_block_delta``, OpenAI's ``choices[].delta`` or ``response.output_text.delta``,
raw or as server-sent ``data:`` lines) carries a key in pieces: ``sk-ant-api03-AbC`` in one
line, the rest in the next. Each line alone holds no whole key, so the per-line
scan kept both halves. And a secret caught once by its context (``PGPASSWORD=...``)
was left wherever the bare value came back later (an error message echoing it).
Now the stream's text is joined and scanned across its lines, and every value
masked once is masked wherever it occurs in the same log. Lines stay JSON.
Secret-shaped values are assembled at run time so this file holds none.
"""

from __future__ import annotations

import json
import random
import string

from am.sessions.redaction import redact_log

_rng = random.Random(3605)


def _tail(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _anthropic_key() -> str:
    return "sk-" + "ant-api03-" + _tail(80) + "AA"


def _github_token() -> str:
    return "gh" + "p_" + _tail(36)


def _aws_key() -> str:
    return "AK" + "IA" + _tail(16, string.ascii_uppercase + string.digits)


def _anthropic_event(text: str) -> str:
    return json.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})


def _openai_event(text: str) -> str:
    return json.dumps({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": text},
                                                        "finish_reason": None}]})


def _responses_event(text: str) -> str:
    return json.dumps({"type": "response.output_text.delta", "item_id": "msg_1", "delta": text})


def _no_piece_left(out: bytes, secret: str) -> None:
    for n in range(8, len(secret) - 7, 4):  # no run of 8 characters of the key survives anywhere
        assert secret[n - 8:n].encode() not in out, secret[n - 8:n]


def _texts(out: bytes, pick: object) -> str:
    lines = [line.removeprefix(b"data: ") for line in out.splitlines() if line.strip()]
    return "".join(pick(json.loads(line)) for line in lines)  # type: ignore[operator]


def test_a_key_split_across_two_anthropic_deltas_is_masked() -> None:
    for secret, kind in ((_anthropic_key(), "Anthropic API key"), (_github_token(), "GitHub token"),
                         (_aws_key(), "AWS access key id")):
        cut = len(secret) // 2
        lines = [_anthropic_event("Set the key to "), _anthropic_event(secret[:cut]),
                 _anthropic_event(secret[cut:]), _anthropic_event(" and restart.")]
        out = redact_log(("\n".join(lines) + "\n").encode())
        _no_piece_left(out.data, secret)
        text = _texts(out.data, lambda e: e["delta"]["text"])
        assert text == f"Set the key to [redacted:{kind}] and restart.", text
        assert out.counts == {kind: 1}


def test_a_key_split_across_many_openai_deltas_and_sse_lines_is_masked() -> None:
    secret = _github_token()
    pieces = [secret[i:i + 5] for i in range(0, len(secret), 5)]  # a model streams a key token by token
    chat = "\n".join(_openai_event(p) for p in ["export GH_TOKEN=", *pieces, "\n"]) + "\n"
    out = redact_log(chat.encode())
    _no_piece_left(out.data, secret)
    assert "[redacted:GitHub token]" in _texts(out.data, lambda e: e["choices"][0]["delta"]["content"])
    sse = "".join(f"event: response.output_text.delta\ndata: {_responses_event(p)}\n\n" for p in pieces)
    out = redact_log(sse.encode())
    _no_piece_left(out.data, secret)
    assert b"data: " in out.data and b"event: response.output_text.delta" in out.data


def test_a_stream_without_a_split_key_is_kept_byte_for_byte() -> None:
    lines = [_anthropic_event(w) for w in ("The ", "sk", "-ant", "i", "pattern ", "is a ", "prefix.")]
    data = ("\n".join(lines) + "\n").encode()
    assert redact_log(data).data is data


def test_a_secret_masked_once_is_masked_where_it_comes_back_later_in_the_log() -> None:
    password = _tail(14) + "7q"
    lines = [
        json.dumps({"type": "user", "message": {"content": f"run PGPASSWORD={password} psql -h db -U app"}}),
        json.dumps({"type": "assistant", "message": {"content": "Connecting."}}),
        json.dumps({"type": "tool_result", "content": f"psql: FATAL: password \"{password}\" rejected"}),
        f"plain text line echoing {password} again",
    ]
    out = redact_log(("\n".join(lines) + "\n").encode())
    assert password.encode() not in out.data
    assert out.counts["password assignment"] + out.counts.get("password in prose", 0) >= 1
    assert out.total == 3
    for line in out.data.splitlines()[:3]:
        json.loads(line)


def test_a_value_too_short_to_be_a_secret_is_not_hunted_through_the_log() -> None:
    # A masked value is searched for again only from 8 characters: "hunter2" elsewhere is not a secret's echo.
    data = b'{"content": "password = hunter2"}\n{"content": "hunter2 is a famous joke"}\n'
    out = redact_log(data)
    assert b"hunter2 is a famous joke" in out.data


def test_every_token_family_runs_only_where_its_literal_is_and_redaction_knows_each_literal() -> None:
    """The write scanner's prefilter and the log scanner's Aho-Corasick pass look for the same literals."""
    from am.records.secrets import _FAMILIES
    from am.sessions.redaction import _LITERALS

    by_kind: dict[str, set[str]] = {}
    for literal, _, kind in _LITERALS:
        by_kind.setdefault(kind, set()).add(literal.decode())
    for family in _FAMILIES:
        assert family.needs, family.kind
        if family.kind == "GCP service-account private key":
            continue  # found by the private key block's literal
        assert set(family.needs) <= by_kind[family.kind] | {"login", "pass", "$"}, family.kind
