"""``groupmind experiment``: arms over one dataset, scored and compared (docs/experiments.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress

from groupmind.cli.common import err, invocation
from groupmind.copies import record
from state.validation import InputError


def experiment(
    dataset: Annotated[
        Path | None, typer.Argument(help="JSONL examples (or set it in --spec)")
    ] = None,
    arm: Annotated[
        list[str] | None,
        typer.Option(
            "--arm", help="NAME:SLOT=VARIANT,setting.path=VALUE,... (the first is the baseline)"
        ),
    ] = None,
    spec_file: Annotated[
        Path | None, typer.Option("--spec", help="an experiment TOML file")
    ] = None,
    name: Annotated[str | None, typer.Option(help="the experiment's name")] = None,
    mode: Annotated[str | None, typer.Option(help="reply (default) | rank")] = None,
    evaluator: Annotated[
        list[str] | None,
        typer.Option("--evaluator", help="builtin, a built-in's name, or module:function"),
    ] = None,
    baseline: Annotated[str | None, typer.Option(help="the arm others are compared with")] = None,
    limit: Annotated[int | None, typer.Option(help="the first N examples only")] = None,
    bootstrap: Annotated[int | None, typer.Option(help="bootstrap resamples (2000)")] = None,
    lower_is_better: Annotated[
        list[str] | None, typer.Option("--lower-is-better", help="a user metric where less wins")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="where the report goes")] = None,
    upload: Annotated[
        bool | None,
        typer.Option(
            "--upload/--local", help="to LangSmith (default: when LANGSMITH_API_KEY is set)"
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Run arms (variant sets and settings) over the same dataset, score every example with
    the evaluators and compare each arm with the baseline: the difference, its bootstrap
    confidence interval and the verdict, as a table, JSON and a plot. On LangSmith's
    evaluation API: with a key the arms are experiments side by side in LangSmith."""
    from groupmind.experiment.report import build_report, print_report, write_report
    from groupmind.experiment.runner import langsmith_client, run_experiment
    from groupmind.experiment.spec import ExperimentSpec, load_spec, parse_arm
    from state.slots import SLOTS

    here = invocation()
    settings = here.settings
    given = {
        "name": name,
        "mode": mode,
        "evaluators": evaluator,
        "baseline": baseline,
        "limit": limit,
        "bootstrap": bootstrap,
        "lower_is_better": lower_is_better,
    }
    given = {k: v for k, v in given.items() if v is not None}  # the file's, unless given
    try:
        arms = [parse_arm(a, SLOTS) for a in arm or []]
        if spec_file is not None:
            more: dict[str, Any] = {**given, **({"arms": arms} if arms else {})}
            if dataset is not None:
                more["dataset"] = dataset
            spec = load_spec(spec_file, more)
        else:
            if dataset is None or not arms:
                raise InputError("experiment", "give a dataset and at least one --arm (or --spec)")
            spec = ExperimentSpec.model_validate({**given, "dataset": dataset, "arms": arms})
    except InputError as exc:
        err.print(f"[red]{exc}[/red]", markup=True, highlight=False)
        raise typer.Exit(2) from None
    except ValueError as exc:  # pydantic's, from ExperimentSpec(...)
        err.print(f"[red]experiment: {exc}[/red]", highlight=False)
        raise typer.Exit(2) from None
    folder = out or settings.data_dir / "experiments" / spec.name
    client = langsmith_client() if upload is not False else None
    if upload and client is None:
        err.print("[red]--upload: no LangSmith key (LANGSMITH_API_KEY)[/red]")
        raise typer.Exit(2)
    try:
        with Progress(console=err, transient=True) as progress:

            def say(line: str) -> None:
                progress.console.print(line, highlight=False)
                if line.startswith("arm "):
                    progress.add_task(line.split(" (")[0], total=None)

            def tick() -> None:
                progress.advance(progress.task_ids[-1])

            dataset_, results = run_experiment(
                spec, settings, folder / "arms", client=client, say=say, tick=tick
            )
    except InputError as exc:
        err.print(f"[red]{exc}[/red]", highlight=False)
        raise typer.Exit(2) from None
    report = build_report(spec, dataset_, results)
    report["bot"] = here.bot  # whose console shows it
    paths = write_report(report, results, folder)
    record(settings.data_dir, bot=report["bot"], kind="experiment", path=folder)  # for forget
    if as_json:
        sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n")
    else:
        print_report(report, Console(soft_wrap=True))
    err.print(f"written: {', '.join(str(p) for p in paths.values())}")
