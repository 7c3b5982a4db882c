"""Run an experiment: every arm over the same examples, on LangSmith's evaluation API
(``langsmith.evaluate``), then the paired comparison of each arm with the baseline.

Without a LangSmith key everything runs here (``upload_results=False``); with one
(``LANGSMITH_API_KEY``, ``LANGSMITH_ENDPOINT``) the dataset is uploaded once and every arm
is an experiment on it, side by side in LangSmith. The paired statistics are computed here
either way (LangSmith's comparative mode needs its server).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langsmith import Client, evaluate

from groupmind.experiment.arm import ArmRun
from groupmind.experiment.dataset import Dataset, load_dataset, rebased
from groupmind.experiment.evaluators import Metric, evaluators, metrics
from groupmind.experiment.spec import Arm, ExperimentSpec, arm_settings, flatten
from groupmind.settings import Settings
from nodes.variants import registry
from state.validation import InputError

log = logging.getLogger("groupmind.experiment")
Say = Callable[[str], None]


@dataclass
class ArmResult:
    arm: Arm
    variants: dict[str, str]  # every slot's variant as the arm ran it
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # key -> example -> score
    examples: list[dict[str, Any]] = field(default_factory=list)
    experiment: str = ""  # its LangSmith experiment's name


@contextlib.contextmanager
def quiet_langsmith() -> Iterator[None]:
    """``evaluate`` prints its own progress to stdout (ours is for results, ``--json``) and
    warns that running locally is in beta; we show progress ourselves. A degraded memory
    is scored (``degraded``), not logged once per job."""
    loggers = [logging.getLogger(n) for n in ("langsmith.client", "groupmind.memory")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    previous = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*upload_results.* is in beta")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
        if previous is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = previous


def offline_client() -> Client:
    """A client that never calls out: ``evaluate`` with ``upload_results=False`` still builds
    one, and would ask a server for its settings."""
    return Client(api_url="http://127.0.0.1:9", api_key="offline", info={"version": "offline"})


def langsmith_client() -> Client | None:
    """The configured LangSmith (a key in the environment), or None: run locally."""
    if not (os.environ.get("LANGSMITH_API_KEY") or os.environ.get("LANGCHAIN_API_KEY")):
        return None
    return Client()


def check_arms(spec: ExperimentSpec, base: Settings, work: Path) -> None:
    """Every arm's slots, variants and settings exist, and what it asks can run (``llm``
    needs a model in its settings), before any arm runs: a typo in the last arm does not
    cost the first arm's run."""
    spec.baseline_arm  # noqa: B018 - raises for an unknown baseline
    for arm in spec.arms:
        settings = arm_settings(base, arm, work / arm.name)
        try:
            registry().check(arm.variants, has_model=bool(settings.chat_model))
        except ValueError as exc:
            raise InputError(f"arm {arm.name}", str(exc)) from None


def upload(client: Client, dataset: Dataset, say: Say) -> Dataset:
    """The dataset on the LangSmith server (created once: a second run finds it)."""
    if client.has_dataset(dataset_name=dataset.name):
        found = client.read_dataset(dataset_name=dataset.name)
        say(f"dataset {dataset.name} is on LangSmith already")
        return rebased(dataset, found.id)
    made = client.create_dataset(dataset.name, description="groupmind experiment dataset")
    ours = rebased(dataset, made.id)
    client.create_examples(
        dataset_id=made.id,
        examples=[
            {"id": e.id, "inputs": e.inputs, "reference_outputs": e.outputs, "metadata": e.metadata}
            for e in ours.examples
        ],
    )
    say(f"dataset {dataset.name} uploaded: {len(ours.examples)} examples")
    return ours


def run_arm(
    spec: ExperimentSpec,
    arm: Arm,
    dataset: Dataset,
    base: Settings,
    work: Path,
    client: Client | None,
    say: Say,
    tick: Callable[[], None] = lambda: None,
) -> ArmResult:
    chosen = evaluators(spec.evaluators, spec.ks)
    data = work / arm.name / "data"
    with ArmRun(
        base, arm, data, spec.mode, top_k=max(spec.ks), traced=client is not None, tick=tick
    ) as target:
        result = ArmResult(arm, target.variants)
        say(f"arm {arm.name} ({arm.label()}): {len(dataset.examples)} examples")
        with quiet_langsmith():
            rows = evaluate(
                target,
                data=dataset.examples,
                evaluators=chosen,
                client=client or offline_client(),
                upload_results=client is not None,
                experiment_prefix=f"{spec.name}-{arm.name}",
                description=f"{spec.name}: arm {arm.name} ({arm.label()})",
                metadata={
                    "arm": arm.name,
                    "variants": target.variants,
                    "settings": flatten(arm.settings),
                    "dataset": dataset.name,
                    "mode": spec.mode,
                    "experiment": spec.name,
                },
                max_concurrency=0,  # in order: a message's memory is there for later questions
            )
            result.experiment = rows.experiment_name if client else f"{spec.name}-{arm.name}"
            for row in rows:
                example, run = row["example"], row["run"]
                scores = {}
                for ev in row["evaluation_results"]["results"]:
                    if ev.score is not None:
                        scores[ev.key] = float(ev.score)
                        result.scores.setdefault(ev.key, {})[str(example.id)] = float(ev.score)
                line = (example.metadata or {}).get("line")
                outputs, error = run.outputs or {}, run.error
                result.examples.append(
                    {
                        "id": str(example.id),
                        "line": line,
                        "scores": scores,
                        "outputs": outputs,
                        "error": error,
                    }
                )
    return result


def metric_table(spec: ExperimentSpec, results: list[ArmResult]) -> dict[str, Metric]:
    """The built-in metrics any arm was scored on, then user evaluators' keys (mean,
    higher is better unless ``lower_is_better`` names them)."""
    known = metrics(spec.ks)
    seen = {key for r in results for key in r.scores}
    # model costs of arms that call no model say nothing
    seen -= {
        k for k in ("tokens", "cost") if not any(any(r.scores.get(k, {}).values()) for r in results)
    }
    table = {name: m for name, m in known.items() if m.key in seen}
    for key in sorted(seen - {m.key for m in known.values()}):
        table[key] = Metric(key, "mean", "lower" if key in spec.lower_is_better else "higher")
    return table


def run_experiment(
    spec: ExperimentSpec,
    base: Settings,
    work: Path,
    *,
    client: Client | None = None,
    say: Say = lambda line: None,
    tick: Callable[[], None] = lambda: None,
) -> tuple[Dataset, list[ArmResult]]:
    """Every arm over the dataset, the baseline first. ``work`` holds each arm's data dir."""
    dataset = load_dataset(spec.dataset, spec.limit)
    check_arms(spec, base, work)
    if client is not None:
        dataset = upload(client, dataset, say)
    order = [spec.baseline_arm, *(a for a in spec.arms if a != spec.baseline_arm)]
    results = [run_arm(spec, arm, dataset, base, work, client, say, tick) for arm in order]
    if client is not None:
        client.flush()  # every run and score sent before the command ends
    return dataset, results
