"""``ecgw ab`` (compare an experiment's arms) and ``ecgw calibrate`` (a task-routing threshold for a target
cloud share). Registered by ``gateway.cli.main``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from gateway.config.settings import ConfigError, Settings, load_settings
from router.ab import as_json, compare, render_markdown
from router.scorers import Task, pick_threshold


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("ab", help="compare the arms of a policy experiment (cloud rate, tokens, cost, "
                                         "edge PFLOPs, exposure, completion with bootstrap CIs)")
    p.add_argument("--experiment", required=True, help="the experiment's name (experiments.definitions.<name>)")
    p.add_argument("--config", default=None, help="YAML config file (for database_url)")
    p.add_argument("--database-url", default=None, help="overrides the config's database_url")
    p.add_argument("--calls", default=None, help="read per-call rows from this JSONL file instead of the store")
    p.add_argument("--grades", default=None,
                   help="JSONL of {session_id, passed|score} from eval: adds completion with 95%% bootstrap CIs")
    p.add_argument("--by", choices=("arm", "policy"), default="arm", help="compare per arm or per policy")
    p.add_argument("--format", choices=("md", "json"), default="md", help="output format")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    p.set_defaults(func=ab)
    c = subparsers.add_parser("calibrate", help="pick the task-routing threshold that sends a target share of "
                                                "prompts to the cloud")
    c.add_argument("--prompts", required=True, help="a file of prompts: JSONL with 'prompt' or 'messages', or "
                                                    "one prompt per line")
    c.add_argument("--target-share", type=float, required=True, help="wanted cloud share, 0..1")
    c.add_argument("--config", default=None, help="YAML config file (edge server and task-routing knobs)")
    c.add_argument("--scorer", default=None, choices=("edge-judge", "rules", "table"),
                   help="overrides policy.knobs.task-routing.scorer")
    c.set_defaults(func=calibrate)


# ab ----------------------------------------------------------------------------------------------------
def _jsonl(path: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} line {number} is not JSON: {exc}") from None
        if isinstance(value, dict):
            rows.append(value)
    return rows


def _database_url(args: argparse.Namespace) -> str:
    if args.database_url:
        return str(args.database_url)
    settings: Settings = load_settings(args.config)
    return settings.database_url


def _store_rows(database_url: str, experiment: str, by: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The experiment's rows (sessions, purposes) and accounting's SQL sums per group (every figure)."""
    from accounting.store import UsageStore  # the metering store's public reader

    store = UsageStore.from_url(database_url)
    totals = {str(t["group"] or "-"): t for t in store.aggregate(by, where={"experiment": experiment})}
    return store.rows(experiment=experiment), totals


def _exposures(database_url: str, sessions: set[str]) -> dict[str, float] | None:
    """Per-session exposure from the privacy audit; None when it cannot be read (the column says n/a)."""
    try:
        from accounting.database import make_engine
        from privacy.audit import session_report

        engine = make_engine(database_url)
        return {s: float(session_report(engine, s)["exposure"]) for s in sorted(sessions)}
    except Exception as exc:  # the audit is optional for the comparison
        print(f"ecgw ab: no exposure figures ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None


def _grades(path: str) -> dict[str, float]:
    grades: dict[str, list[float]] = {}
    for row in _jsonl(path):
        session = row.get("session_id")
        value = next((row[k] for k in ("passed", "score", "completion") if k in row), None)
        if isinstance(session, str) and isinstance(value, bool | int | float):
            grades.setdefault(session, []).append(float(value))
    return {s: sum(v) / len(v) for s, v in grades.items()}


def ab(args: argparse.Namespace) -> int:
    database_url: str | None = None
    totals: dict[str, Any] | None = None
    if args.calls:
        rows = [r for r in _jsonl(args.calls) if r.get("experiment") in (None, args.experiment)]
    else:
        database_url = _database_url(args)
        rows, totals = _store_rows(database_url, args.experiment, args.by)
    if not rows:
        print(f"ecgw ab: no metered calls for experiment {args.experiment!r}; run sessions in it first "
              "(experiments.active, or the X-ECGW-Arm header)", file=sys.stderr)
        return 1
    exposures = None
    if database_url is not None:
        exposures = _exposures(database_url, {str(r.get("session_id")) for r in rows})
    grades = _grades(args.grades) if args.grades else None
    reports = compare(rows, by=args.by, exposures=exposures, grades=grades, resamples=args.resamples,
                      totals=totals)
    if args.format == "json":
        print(json.dumps(as_json(reports), indent=2))
    else:
        print(f"experiment {args.experiment}: {len(rows)} metered calls\n")
        print(render_markdown(reports, by=args.by), end="")
    return 0


# calibrate ---------------------------------------------------------------------------------------------
def _prompts(path: str) -> list[str]:
    texts = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            texts.append(line)
            continue
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            if isinstance(value.get("prompt"), str):
                texts.append(value["prompt"])
            elif isinstance(value.get("messages"), list):
                from router.policies._messages import first_user_text

                texts.append(first_user_text(value))
    return texts


async def _scores(settings: Settings, scorer_name: str | None, prompts: list[str]) -> list[float | None]:
    from accounting.calls import NullMeter
    from gateway.egress.transports.openai_http import OpenAIHTTPUpstream
    from router.channels import EdgeChannel
    from router.context import CallContext, RouteTracker
    from router.policies.task_routing import TaskRoutingKnobs, build_scorer
    from router.upstreams import Call, Single

    raw = dict(settings.policy.knobs.get("task-routing", {}))
    if scorer_name:
        raw["scorer"] = scorer_name
    knobs = TaskRoutingKnobs.model_validate(raw)
    scorer = build_scorer(knobs)
    upstream = OpenAIHTTPUpstream(settings.edge)
    try:
        out: list[float | None] = []
        for index, text in enumerate(prompts):
            context = CallContext(request_id=f"calibrate-{index}", session_id=f"calibrate-{index}",
                                  policy="task-routing")
            edge = EdgeChannel(Single(upstream), NullMeter(), context, RouteTracker(), Call(context.session_id))
            verdict = await scorer.score(Task(text, None, context.session_id), edge)
            out.append(verdict.score)
        return out
    finally:
        await upstream.aclose()


def calibrate(args: argparse.Namespace) -> int:
    if not 0.0 <= args.target_share <= 1.0:
        raise ConfigError(f"--target-share is {args.target_share}; expected a share between 0 and 1")
    settings = load_settings(args.config)
    prompts = _prompts(args.prompts)
    if not prompts:
        raise ConfigError(f"{args.prompts} holds no prompts")
    scores = asyncio.run(_scores(settings, args.scorer, prompts))
    usable = [s for s in scores if s is not None]
    if not usable:
        print("ecgw calibrate: the scorer scored none of the prompts", file=sys.stderr)
        return 1
    threshold, share = pick_threshold(usable, args.target_share)
    print(f"prompts {len(prompts)}, scored {len(usable)}, target cloud share {args.target_share:.3f}")
    print(f"threshold {threshold:.4f} sends {share:.3f} of scored prompts to the cloud")
    print(f"set policy.knobs.task-routing.threshold: {threshold:.4f}")
    return 0
