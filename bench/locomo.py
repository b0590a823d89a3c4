"""Recall on LoCoMo (issue 35): am's search against a BM25 baseline, on a public benchmark.

LoCoMo (Maharana et al., ACL 2024; github.com/snap-research/locomo) holds 10 long
conversations (5,882 turns) and 1,986 questions whose evidence is named turn by turn.
The data is not in this repository: fetch ``data/locomo10.json`` (or ``locomo10.zip``)
from that repository and give its path, or a folder of one JSON file per conversation.

Each conversation becomes one vault, written through am's public import
(``Vault.import_records``, one commit a batch):

- one **fact per turn**, its body ``Speaker: text`` (a shared image adds
  ``[shares a photo: caption]``), created at its session's date-time plus one
  minute a turn (UTC), so turns keep their order and time phrases have a time to read;
- the **speaker as a topic** (``person-<name>``, title the name) that each of their
  turns is about: a question names a person, as an agent's vault names a subject, so
  topics compete with facts for the first places, as they do for a user. A topic is
  never evidence; it takes a place in the top k as it would on a screen.

Every question is asked as written, against its conversation's vault, "now" being a day
after the conversation's last session. Levels compared, in the same run:

- ``am search`` in process (``am.cache.search.search``), full text and, with the
  ``am[semantic]`` extra, hybrid; the MCP ``search`` tool in process (am.mcp.tools);
  ``slice --query`` (the pack's facts in their order) on a sample;
- a BM25 baseline (Okapi, k1 1.2, b 0.75; am's English stop words; Snowball stems) over the same turns;
- WordLlama alone (the vector level's own ranking);
- ``am search`` as a process on a sample, for latency.

Reported: turn-level R@1/5/10 (the share of a question's evidence turns in the top k,
averaged over questions with evidence), by category (1 multi-hop, 2 temporal, 3 open
domain, 4 single-hop, 5 adversarial), session-level S@5 (the share of the question's
evidence sessions that a top-5 hit comes from), and latency.

Usage: python bench/locomo.py PATH [--conversations 26,30,41,42,43] [--work DIR]
       [--slice-sample 200] [--process-sample 20] [--no-vectors] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TUNE = ("26", "30", "41", "42", "43")
KS = (1, 5, 10)
DEPTH = 10
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass
class Conversation:
    """One conversation: its turns (dia_id -> (speaker, text, moment)) and questions."""

    name: str
    speakers: tuple[str, str]
    turns: dict[str, tuple[str, str, datetime]]
    questions: list[dict[str, Any]]
    last: datetime


# ---------------------------------------------------------------------------------------------- data


def _read_json(data: bytes, origin: str) -> list[dict[str, Any]]:
    doc = json.loads(data)
    if isinstance(doc, dict):
        doc = [doc]
    out = []
    for n, item in enumerate(doc):
        conv = item.get("conversation", item)
        qa = item.get("qa", conv.get("qa", []))
        name = str(item.get("sample_id", origin if len(doc) == 1 else f"{origin}-{n}"))
        out.append({"name": name, "conversation": conv, "qa": qa})
    return out


def load(path: Path) -> list[dict[str, Any]]:
    """Read LoCoMo from locomo10.json, locomo10.zip, or a folder of one JSON per conversation."""
    if path.is_dir():
        out = []
        for file in sorted(path.glob("*.json")):
            out += _read_json(file.read_bytes(), file.stem)
        return out
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as z:
            out = []
            for name in sorted(z.namelist()):
                if name.endswith(".json"):
                    out += _read_json(z.read(name), Path(name).stem)
            return out
    return _read_json(path.read_bytes(), path.stem)


def _when(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> a UTC moment."""
    moment = datetime.strptime(text.strip().replace("  ", " "), "%I:%M %p on %d %B, %Y")
    return moment.replace(tzinfo=timezone.utc)


def conversation(raw: dict[str, Any]) -> Conversation:
    """Return the turns and questions of one raw conversation."""
    conv = raw["conversation"]
    turns: dict[str, tuple[str, str, datetime]] = {}
    last = None
    for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
        if not isinstance(conv[key], list) or not conv[key]:
            continue
        start = _when(conv[f"{key}_date_time"])
        for n, turn in enumerate(conv[key]):
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            moment = start + timedelta(minutes=n)
            turns[turn["dia_id"]] = (turn["speaker"], text, moment)
            last = moment
    assert last is not None
    return Conversation(raw["name"], (conv["speaker_a"], conv["speaker_b"]), turns, list(raw["qa"]), last)


def evidence(question: dict[str, Any], turns: dict[str, Any]) -> list[str]:
    """Return the question's evidence turns that exist ('D:11:26' and 'D30:05' read as LoCoMo meant them)."""
    out = []
    for item in question.get("evidence", []):
        for part in re.split(r"[\s;,]+", item):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part)
            if m and f"D{m[1]}:{m[2]}" in turns:
                out.append(f"D{m[1]}:{m[2]}")
    return list(dict.fromkeys(out))


def session_of(dia_id: str) -> str:
    return dia_id.split(":")[0]


# --------------------------------------------------------------------------------------------- vault


def fact_id(moment: datetime, n: int) -> str:
    return f"f-{moment:%Y%m%d-%H%M}-{n:06x}"


def build_vault(conv: Conversation, dest: Path) -> dict[str, str]:
    """Write the conversation's vault once (import, one commit a batch); return {fact id: dia_id}."""
    from am.records.ids import format_timestamp
    from am.records.model import Fact, Topic

    persons = {s: "person-" + re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-") for s in conv.speakers}
    ids = {}
    records: list[Any] = [Topic(id=tid, kind="person", title=name, created=format_timestamp(conv.last),
                                body=f"{name}, one of the two people in this conversation.\n")
                          for name, tid in persons.items()]
    for n, (dia, (speaker, text, moment)) in enumerate(conv.turns.items()):
        fid = fact_id(moment, n)
        ids[fid] = dia
        about = (persons[speaker],) if speaker in persons else ()
        records.append(Fact(id=fid, topics=about, body=f"{speaker}: {text}\n", provenance="human",
                            created=format_timestamp(moment)))
    if not (dest / ".am" / "vault.yml").is_file():
        from am.vault import Vault

        vault = Vault.init(dest, name=f"locomo-{conv.name}", actor="bench", register=False)
        vault.import_records(records, source=f"locomo {conv.name}", batch_size=1000, allow_secrets=True)
        vault.close()
    return ids


# ---------------------------------------------------------------------------------------------- BM25


class BM25:
    """Okapi BM25 over the turns: am's English stop words left out, Snowball English stems."""

    def __init__(self, docs: dict[str, str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = {d: Counter(self.tokens(t)) for d, t in docs.items()}
        self.len = {d: sum(c.values()) for d, c in self.tf.items()}
        self.avg = sum(self.len.values()) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for c in self.tf.values():
            df.update(c.keys())
        n = len(self.tf)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}

    @staticmethod
    def tokens(text: str) -> list[str]:
        from am.cache.terms import is_stop_word, stem

        return [stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if not is_stop_word(w)]

    def rank(self, query: str, k: int) -> list[str]:
        words = set(self.tokens(query))
        scores = {}
        for d, c in self.tf.items():
            s = 0.0
            for w in words:
                f = c.get(w)
                if f:
                    s += self.idf[w] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * self.len[d] / self.avg))
            if s:
                scores[d] = s
        return sorted(scores, key=lambda d: (-scores[d], d))[:k]


# ------------------------------------------------------------------------------------------- scoring


@dataclass
class Score:
    """Recall of one level, question by question."""

    recall: dict[int, list[tuple[int, float]]] = field(default_factory=lambda: {k: [] for k in KS})
    session5: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    def add(self, category: int, ranked: Sequence[str | None], wanted: Sequence[str], seconds: float) -> None:
        """``ranked``: dia_ids best first (None for a hit that is no turn: a topic)."""
        for k in KS:
            top = set(ranked[:k])
            self.recall[k].append((category, sum(w in top for w in wanted) / len(wanted)))
        sessions = {session_of(w) for w in wanted}
        got = {session_of(r) for r in ranked[:5] if r}
        self.session5.append(len(sessions & got) / len(sessions))
        self.times.append(seconds)

    def r(self, k: int, category: int | None = None) -> float:
        vals = [v for c, v in self.recall[k] if category is None or c == category]
        return 100 * sum(vals) / len(vals) if vals else float("nan")


def _hit_dias(hits: Iterable[str], ids: dict[str, str]) -> list[str | None]:
    return [ids.get(h) for h in hits]


# ------------------------------------------------------------------------------------------- running


def run_conversation(conv: Conversation, work: Path, levels: dict[str, Score], *, vectors: bool,
                     slice_every: int, process_every: int, limit: int) -> None:
    from am.cache.search import search
    from am.vault import Vault

    dest = work / f"locomo-{conv.name}"
    ids = build_vault(conv, dest)
    at = conv.last + timedelta(days=1)
    os.environ["AM_NOW"] = at.isoformat()
    bm25 = BM25({d: f"{s}: {t}" for d, (s, t, _) in conv.turns.items()})
    embedder = None
    if vectors:
        from am.packs.embedding import is_embedder, load_backend

        os.environ.pop("AM_EMBEDDINGS", None)
        backend, _ = load_backend()
        embedder = backend if is_embedder(backend) else None
    with Vault.open(dest) as vault:
        index = vault.cache()
        assert index is not None
        if embedder is not None:
            from am.cache import vectors as vec

            vec.ensure(index, embedder)
        tool, call = _mcp(vault)
        asked = 0
        for q in conv.questions:
            wanted = evidence(q, conv.turns)
            if not wanted:
                continue
            asked += 1
            cat, text = int(q["category"]), q["question"]

            def timed(level: str, fn: Callable[[], list[str | None]]) -> None:
                began = time.perf_counter()
                ranked = fn()
                levels.setdefault(level, Score()).add(cat, ranked, wanted, time.perf_counter() - began)

            timed("bm25", lambda: list(bm25.rank(text, DEPTH)))
            timed("am search, full text", lambda: _hit_dias(
                (h.id for h in search(index, text, limit=limit, at=at).hits), ids))
            if embedder is not None:
                timed("am search, hybrid", lambda: _hit_dias(
                    (h.id for h in search(index, text, limit=limit, at=at, embedder=embedder).hits), ids))
                timed("WordLlama alone", lambda: _hit_dias(_vector_only(index, embedder, text), ids))
                os.environ.pop("AM_EMBEDDINGS", None)
            else:
                os.environ["AM_EMBEDDINGS"] = "off"
            timed("MCP search tool", lambda: _hit_dias(
                (h["id"] for h in tool.run(call, {"query": text, "limit": limit}).data["hits"]), ids))
            if slice_every and asked % slice_every == 0:
                timed("slice --query (sample)", lambda: _hit_dias(_slice(vault, text), ids))
            if process_every and asked % process_every == 0:
                timed("am search, process (sample)", lambda: _hit_dias(_process(dest, text, limit), ids))


def _vector_only(index: Any, embedder: Any, text: str) -> list[str]:
    from am.cache import vectors as vec

    return [h.id for h, _ in vec.search(index, embedder, text, limit=DEPTH,
                                        statuses=("active", "contested", "pending-review"))]


def _mcp(vault: Any) -> tuple[Any, Any]:
    from am.mcp.tools import Call, tool_named

    tool = tool_named("search")
    assert tool is not None
    return tool, Call(vault, lambda: (None, None, None))


def _slice(vault: Any, text: str) -> list[str]:
    from am.packs.slice import SliceRequest, render_json, slice_vault

    pack = json.loads(render_json(slice_vault(vault, SliceRequest(query=text, max_tokens=4000))))
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("id"), str) and node["id"].startswith("f-"):
                out.append(node["id"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(pack)
    return list(dict.fromkeys(out))


def _process(dest: Path, text: str, limit: int) -> list[str]:
    am = Path(sys.executable).parent / "am"
    done = subprocess.run([str(am), "--vault", str(dest), "search", "--format", "json", "--limit", str(limit),
                           "--", text], capture_output=True, text=True, env=dict(os.environ))
    if done.returncode not in (0, 1):
        return []
    try:
        return [h["id"] for h in json.loads(done.stdout)["hits"]]
    except (ValueError, KeyError):
        return []


# -------------------------------------------------------------------------------------------- report


def report(levels: dict[str, Score], convs: Sequence[str]) -> str:
    lines = [f"conversations: {', '.join(convs)}; questions with evidence: "
             f"{len(next(iter(levels.values())).session5) if levels else 0}", ""]
    head = "| level | R@1 | R@5 | R@10 | S@5 | " + " | ".join(
        f"R@5 {n} | R@10 {n}" for n in CATEGORIES.values()) + " | p50 ms | n |"
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for name, s in levels.items():
        cells = [f"{s.r(k):.1f}" for k in KS] + [f"{100 * statistics.mean(s.session5):.1f}"]
        cells += [f"{s.r(k, c):.1f}" for c in CATEGORIES for k in (5, 10)]
        cells += [f"{1000 * statistics.median(s.times):.1f}", str(len(s.times))]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", type=Path, help="locomo10.json, locomo10.zip or a folder of per-conversation JSON")
    parser.add_argument("--conversations", default="", help="comma-separated names (sample ids or file stems); "
                        f"'tune' for {','.join(TUNE)}; default all")
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "am-locomo")
    parser.add_argument("--limit", type=int, default=10, help="--limit given to search (default 10)")
    parser.add_argument("--slice-sample", type=int, default=10, help="slice --query every Nth question (0: none)")
    parser.add_argument("--process-sample", type=int, default=25, help="am search as a process every Nth (0: none)")
    parser.add_argument("--no-vectors", action="store_true", help="full text only")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    raw = load(args.path)
    wanted = TUNE if args.conversations == "tune" else tuple(c for c in args.conversations.split(",") if c)
    chosen = [conversation(r) for r in raw if not wanted or r["name"] in wanted or r["name"].split("-")[-1] in wanted]
    if not chosen:
        sys.exit(f"no conversation named {wanted} in {args.path}")
    os.environ.setdefault("AM_HOME", str(args.work / "home"))
    args.work.mkdir(parents=True, exist_ok=True)
    levels: dict[str, Score] = {}
    for conv in chosen:
        began = time.perf_counter()
        run_conversation(conv, args.work, levels, vectors=not args.no_vectors, slice_every=args.slice_sample,
                         process_every=args.process_sample, limit=args.limit)
        print(f"  {conv.name}: {len(conv.turns)} turns, {len(conv.questions)} questions, "
              f"{time.perf_counter() - began:.1f} s", file=sys.stderr)
    text = report(levels, [c.name for c in chosen])
    print(text)
    if args.json:
        args.json.write_text(json.dumps({name: {"R@" + str(k): s.r(k) for k in KS} | {
            "S@5": 100 * statistics.mean(s.session5), "by_category": {
                CATEGORIES[c]: {f"R@{k}": s.r(k, c) for k in KS} for c in CATEGORIES}}
            for name, s in levels.items()}, indent=1))


if __name__ == "__main__":
    main()
