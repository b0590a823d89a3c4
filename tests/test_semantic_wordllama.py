"""The real model of the am[semantic] extra: WordLlama, loaded from its wheel's files with no network.

Marked ``semantic``: deselected by default (the default suite runs without the
extra, as CI's first step installs only ``.[test]``); CI installs the extra and
runs ``pytest -m semantic`` (.ci/run). Without the extra they are skipped with
the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from am.cache import vectors
from am.packs.embedding import semantic_installed, wordllama
from am.vault import Vault
from tests.conftest import PYTHON, subprocess_env

pytestmark = [
    pytest.mark.semantic,
    pytest.mark.skipif(not semantic_installed(),
                       reason="the am[semantic] extra is not installed: pip install -e '.[semantic]'"),
]

# Loaded into every child process: any attempt to reach the network is written down and refused.
NO_NETWORK = textwrap.dedent('''
    import os
    import socket

    def _refuse(*args, **kwargs):
        with open(os.environ["NET_LOG"], "a") as handle:
            handle.write(repr(args)[:200] + "\\n")
        raise OSError("network blocked by the test")

    socket.socket.connect = _refuse
    socket.socket.connect_ex = _refuse
    socket.create_connection = _refuse
    socket.getaddrinfo = _refuse
''')


@pytest.fixture(scope="module")
def recall_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from am.demo import materialise_demo
    from tests.recall_set import records

    root = tmp_path_factory.mktemp("semantic")
    old = os.environ.get("AM_HOME")
    os.environ["AM_HOME"] = str(root / "home")
    try:
        vault = materialise_demo(root / "demo", register=False)
        vault.import_records(records(), source="recall set")
        vault.close()
    finally:
        if old is None:
            os.environ.pop("AM_HOME", None)
        else:
            os.environ["AM_HOME"] = old
    return root / "demo"


def test_the_embedder_matches_wordllamas_own(tmp_path: Path) -> None:
    """am reads the packaged files itself; the vectors are WordLlama's (``embed(norm=True)``)."""
    import numpy as np
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    from am.packs.embedding import wordllama
    from tests.recall_set import records

    ours = wordllama()
    theirs = WordLlamaInference(np.asarray(ours.table), Tokenizer.from_file(
        str(ours.folder / "tokenizers/l2_supercat_tokenizer_config.json")))
    texts = ["Alpha keeps user sessions in Redis with a 30-minute TTL.", "限流策略：每个 API key 一个令牌桶",
             "rate limiting policy", "x", "  two  spaces\tand a tab\nand a line ", "emoji 🙂 and <s> and é",
             *(r.body for r in records() if getattr(r, "body", ""))]
    assert np.allclose(ours.embed(texts), theirs.embed(texts, norm=True), atol=1e-5)
    # A text longer than 256 tokens: its first 256, as the tokenizer truncates.
    long = " ".join(f"word{n}" for n in range(400))
    first = Tokenizer.from_file(str(ours.folder / "tokenizers/l2_supercat_tokenizer_config.json"))
    ids = first.encode(long, add_special_tokens=False).ids[:256]
    expected = np.asarray(ours.table)[ids].astype(np.float32).mean(axis=0)
    assert np.allclose(ours.embed([long])[0], expected / np.linalg.norm(expected), atol=1e-5)
    assert ours.name.startswith("wordllama l2_supercat_256 ")
    assert ours.embed([""]).tolist() == [[0.0] * 256]


def _offline_env(tmp_path: Path) -> dict[str, str]:
    guard = tmp_path / "guard"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(NO_NETWORK)
    empty_home = tmp_path / "home"  # no ~/.cache/wordllama to fall back on
    empty_home.mkdir(exist_ok=True)
    return subprocess_env(PYTHONPATH=f"{guard}:{subprocess_env()['PYTHONPATH']}", NET_LOG=str(tmp_path / "net.log"),
                          HOME=str(empty_home), AM_EMBEDDINGS="")


def _run(vault: Path, tmp_path: Path, *args: str) -> tuple[dict[str, Any], str]:
    env = _offline_env(tmp_path)
    log = Path(env["NET_LOG"])
    log.unlink(missing_ok=True)
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault), *args, "--format", "json"],
                          capture_output=True, text=True, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), log.read_text() if log.exists() else ""


def test_the_network_guard_catches_a_connection(tmp_path: Path) -> None:
    env = _offline_env(tmp_path)
    probe = "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9))\nexcept OSError:\n    pass\n"
    subprocess.run([PYTHON, "-c", probe], check=True, env=env)
    assert "127.0.0.1" in Path(env["NET_LOG"]).read_text()


def test_loads_and_searches_with_the_network_blocked(recall_vault: Path, tmp_path: Path) -> None:
    """The default backend (nothing configured, the extra installed) never opens a connection."""
    rebuilt, attempts = _run(recall_vault, tmp_path, "index", "rebuild")
    assert attempts == "" and rebuilt["vectors"] >= 360 and rebuilt["vector"].startswith("vector: wordllama")
    found, attempts = _run(recall_vault, tmp_path, "search", "fetch many accounts at once")
    assert attempts == ""
    assert found["retrieval"]["levels"][0].startswith("vector: wordllama l2_supercat_256")
    assert "f-20261002-0915-c4f1a5" in [h["id"] for h in found["hits"][:5]]
    pack, attempts = _run(recall_vault, tmp_path, "slice", "--query", "fetch many accounts at once",
                          "--repo", "project-alpha", "--branch", "feat-batch")
    assert attempts == "" and "vector" in pack["scope"]["retrieval"]["level"]


def test_top5_recall_is_higher_with_vectors_and_loses_nothing(recall_vault: Path) -> None:
    """The acceptance figures: the recall set plus the questions that share no word with their answers."""
    from am.cache.search import search
    from am.packs.embedding import wordllama
    from am.vault import Vault
    from tests.recall_set import QUESTIONS
    from tests.semantic_set import SEMANTIC_QUESTIONS

    model = wordllama()
    figures: dict[str, dict[str, int]] = {"full text": {}, "with vectors": {}, "am search (vector file)": {}}
    with Vault.open(recall_vault) as vault:
        index = vault.cache()
        assert index is not None
        for label, embedder in (("full text", None), ("with vectors", model), ("am search (vector file)", model)):
            once = label.startswith("am search")  # a one-shot process: no numpy, ranked from vectors.f16
            for question, answers in [*QUESTIONS, *SEMANTIC_QUESTIONS]:
                hits = {h.id for h in search(index, question, types=("fact",), limit=5, embedder=embedder,
                                             vector_once=once).hits}
                figures[label][question] = len(set(answers) & hits)
    total = sum(len(a) for _, a in [*QUESTIONS, *SEMANTIC_QUESTIONS])
    semantic = {q for q, _ in SEMANTIC_QUESTIONS}
    for label, found in figures.items():
        words = sum(n for q, n in found.items() if q not in semantic)
        meaning = sum(n for q, n in found.items() if q in semantic)
        print(f"\n{label}: top-5 recall {sum(found.values()) / total:.3f} ({sum(found.values())} of {total}); "
              f"recall set {words}, no-shared-word questions {meaning}")
    assert figures["am search (vector file)"] == figures["with vectors"]
    lost = [q for q, n in figures["full text"].items() if figures["with vectors"][q] < n]
    assert lost == []
    assert sum(figures["with vectors"].values()) > sum(figures["full text"].values())


def test_a_query_of_known_words_reads_no_tokenizer_and_ranks_the_same(recall_vault: Path, tmp_path: Path) -> None:
    """The cache keeps the token ids of its texts' pieces: a fresh process's query of known words is taught them."""
    import numpy as np

    from am.cache import vectors
    from am.packs.embedding import wordllama
    from am.vault import Vault

    copy = tmp_path / "vault"
    shutil.copytree(recall_vault, copy, symlinks=True)
    with Vault.open(copy) as vault:
        index = vault.cache()
        assert index is not None
        index.rebuild()
        vectors.ensure(index, wordllama())
        kept = dict(index.conn.execute("SELECT piece, ids FROM vector_pieces").fetchall())
        words = sorted(p[1:] for p in kept if p[1:].isascii() and p[1:].isalpha() and p.startswith("\u2581"))
        assert len(words) > 100 and "\u2581zyxqwv" not in kept
        query, unknown = " ".join(words[::len(words) // 5][:5]), f"zyxqwv {words[0]}"
        fresh = wordllama()  # as a new process has it: nothing learned
        taught = vectors.search(index, fresh, query, limit=10)
        assert fresh._pieces is None  # every piece taught from the cache
        reference = wordllama()
        reference.embed([query])  # learned through the tokenizer
        assert reference._pieces is not None
        assert np.array_equal(fresh.embed([query]), reference.embed([query]))
        assert [(h.id, round(s, 6)) for h, s in taught] == \
               [(h.id, round(s, 6)) for h, s in vectors.search(index, reference, query, limit=10)]
        # A word no record has: read by the tokenizer once, then kept for the next process.
        vectors.search(index, fresh, unknown, limit=10)
        assert fresh._pieces is not None
        later = wordllama()
        vectors.search(index, later, unknown, limit=10)
        assert later._pieces is None


def test_a_search_after_a_write_embeds_the_new_fact_without_the_tokenizer(recall_vault: Path, tmp_path: Path) -> None:
    """A fact written in words the vault's records already use: the next search embeds it from the kept token ids."""
    copy = tmp_path / "vault"
    shutil.copytree(recall_vault, copy, symlinks=True)
    _run(copy, tmp_path, "index", "rebuild")
    query = "how long are logins remembered"
    _run(copy, tmp_path, "search", query)  # the query's own words are kept from here on
    with Vault.open(copy) as vault:
        known = next(f for f in vault.list_facts() if len(f.body.split()) >= 6)
        added = vault.add_fact(known.body.strip(), topics=list(known.topics)[:1]).record  # a restatement: no new word
    code = ("import json, sys; from am.cli.main import main\n"
            "sys.argv = ['am', '--vault', sys.argv[1], 'search', sys.argv[2], '--format', 'json']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(json.dumps([m in sys.modules for m in ('numpy', 'tokenizers')]), file=sys.stderr)")
    proc = subprocess.run([PYTHON, "-c", code, str(copy), query], capture_output=True, text=True, check=True,
                          env=_offline_env(tmp_path))
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == [True, False]  # numpy embeds it; no tokenizer read
    with Vault.open(copy) as vault:
        index = vault.cache()
        assert index is not None
        assert index.conn.execute("SELECT count(*) FROM vector_todo").fetchone()[0] == 0  # the new fact has its vector
        near = vectors.search(index, wordllama(), added.body, limit=2)
        assert {hit.id for hit, _ in near} == {known.id, added.id}  # the same words, the same vector


def test_vector_without_numpy_is_embeds_row(recall_vault: Path) -> None:
    """``vector`` (read token rows from the weights file, no numpy) gives ``embed``'s row to float32 precision."""
    import numpy as np

    from am.packs.embedding import wordllama

    model = wordllama()
    long = " ".join(["the session cache expires after thirty minutes, 限流策略"] * 40)  # past 256 tokens
    for text in ("how long are logins remembered", "限流策略：每个 API key 一个令牌桶", long, "<s> odd </s> text"):
        assert np.allclose(model.vector(text), model.embed([text])[0], atol=2e-7)
    assert model.vector("") == [0.0] * 256


def test_a_search_process_ranks_from_the_vector_file_without_numpy(recall_vault: Path, tmp_path: Path) -> None:
    """`am index rebuild` writes .am/cache/vectors.f16; `am search` then imports neither numpy nor the tokenizer."""
    copy = tmp_path / "vault"
    shutil.copytree(recall_vault, copy, symlinks=True)
    rebuilt, _ = _run(copy, tmp_path, "index", "rebuild")
    assert rebuilt["vectors"] >= 360 and (copy / ".am" / "cache" / "vectors.f16").is_file()
    code = ("import json, sys; from am.cli.main import main\n"
            "sys.argv = ['am', '--vault', sys.argv[1], 'search', 'fetch many accounts at once', '--format', 'json']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(json.dumps([m in sys.modules for m in ('numpy', 'tokenizers', 'simsimd')]), file=sys.stderr)")
    runs = [subprocess.run([PYTHON, "-c", code, str(copy)], capture_output=True, text=True, check=True,
                           env=_offline_env(tmp_path)) for _ in range(2)]
    # The first reads the tokenizer for a word no record has ("fetch") and keeps its pieces: the second does not.
    assert [json.loads(p.stderr.strip().splitlines()[-1]) for p in runs] == [[False, True, True], [False, False, True]]
    proc = runs[1]
    found = json.loads(proc.stdout)
    assert "f-20261002-0915-c4f1a5" in [h["id"] for h in found["hits"][:5]]
    assert found["retrieval"]["served"] in ("vector", "vector+full-text")
