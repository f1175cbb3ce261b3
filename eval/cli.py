"""``ecgw eval tasks|run|acebench|report`` — wired into the gateway's CLI through ``register(subparsers)``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval.tasks import Task, TaskFormatError, load_tasks

DEFAULT_GATEWAY = "http://127.0.0.1:4000"


def _tasks(folder: Path, command: str) -> list[Task] | None:
    """The tasks under ``folder``, or None after saying on stderr why they cannot be read."""
    try:
        return load_tasks(folder)
    except (TaskFormatError, FileNotFoundError) as exc:
        print(f"ecgw eval {command}: {exc}", file=sys.stderr)
        return None


def cmd_tasks(args: argparse.Namespace) -> int:
    if (tasks := _tasks(Path(args.dir), "tasks")) is None:
        return 1
    for task in tasks:
        mark = "P" if task.privacy_annotated else "-"
        print(f"{mark} {task.timeout_seconds:>5}s  {task.agent_category:<32} {task.id}")
    print(f"{len(tasks)} tasks, {sum(t.privacy_annotated for t in tasks)} privacy-annotated")
    return 0


def _judge_env(args: argparse.Namespace) -> dict[str, str]:
    env = {}
    for name in ("OPENROUTER_BASE_URL", "OPENROUTER_API_KEY", "JUDGE_MODEL"):
        value = getattr(args, name.lower(), None)
        if value:
            env[name] = value
    return env


def cmd_run(args: argparse.Namespace) -> int:
    from eval.grid import GridSpec, run_grid
    from eval.harness import AgentHarness, HarnessConfig
    from eval.meter import GatewaySessionMeter, NullSessionMeter, SessionMeter
    from eval.report import markdown_table

    if (tasks := _tasks(Path(args.suite), "run")) is None:
        return 1
    if args.tasks:
        wanted = set(args.tasks.split(","))
        tasks = [t for t in tasks if t.id in wanted]
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if not policies or not tasks:
        print("ecgw eval run: nothing to run (no policies or no tasks selected)", file=sys.stderr)
        return 2
    gateway = args.gateway_url.rstrip("/")
    api_key = args.api_key or os.environ.get("ECGW_API_KEY") or "ecgw-eval"
    meter: SessionMeter = (NullSessionMeter() if args.no_metering
                           else GatewaySessionMeter(gateway, api_key=api_key, settle_timeout_s=args.settle_timeout))

    def harness_for(policy: str) -> AgentHarness:
        config = HarnessConfig(base_url=gateway + "/v1", api_key=api_key, model=args.model, policy=policy,
                               experiment=args.experiment, max_steps=args.max_steps,
                               timeout_cap_s=args.timeout_cap, grader_env=_judge_env(args),
                               temperature=args.temperature, max_tokens=args.max_tokens,
                               isolation=args.isolation)
        return AgentHarness(config, meter=meter)

    spec = GridSpec(policies=policies, repeat=args.repeat, parallel=args.parallel, out=Path(args.out))
    summaries = run_grid(spec, tasks, harness_for, suite=Path(args.suite), progress=not args.no_progress)
    sys.stdout.write(markdown_table(summaries))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from eval.grid import MANIFEST, summarize_dir
    from eval.report import write_report

    out = Path(args.dir)
    if not (out / MANIFEST).is_file():
        print(f"ecgw eval report: {out} has no {MANIFEST}; run `ecgw eval run --out {out}` first", file=sys.stderr)
        return 1
    summaries = summarize_dir(out)
    files = write_report(Path(args.to) if args.to else out, summaries, title=args.title, edge=args.edge_policy,
                         cloud=args.cloud_policy)
    print(files.markdown.read_text(encoding="utf-8"))
    for path in (files.html, files.cost_plot, files.exposure_plot):
        print(f"wrote {path}")
    return 0


def cmd_acebench(args: argparse.Namespace) -> int:
    import re

    from eval.acebench import AceBenchAdapter, session_id
    from eval.grid import run_dir, summarize_dir
    from eval.meter import GatewaySessionMeter, NullSessionMeter, SessionMeter
    from eval.report import markdown_table

    root = Path(args.acebench_dir)
    if not (root / "eval" / "run_batch.py").is_file() and not (args.join_only or args.dry_run):
        print(f"ecgw eval acebench: {root} has no eval/run_batch.py; pass the benchmark's checkout "
              "(git clone https://github.com/OpenBMB/AceBench)", file=sys.stderr)
        return 1
    if (tasks := _tasks(root, "acebench")) is None:
        return 1
    if args.tasks:
        wanted = set(args.tasks.split(","))
        tasks = [t for t in tasks if t.id in wanted]
    if args.task_filter:
        pattern = re.compile(args.task_filter)
        tasks = [t for t in tasks if pattern.search(t.path.name)]
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if not policies or not tasks:
        print("ecgw eval acebench: nothing to run (no policies or no tasks selected)", file=sys.stderr)
        return 2
    gateway = args.gateway_url.rstrip("/")
    api_key = args.api_key or os.environ.get("ECGW_API_KEY")
    meter: SessionMeter = NullSessionMeter() if args.dry_run else GatewaySessionMeter(gateway, api_key=api_key)
    container = (args.container_gateway_url or gateway).rstrip("/")
    adapter = AceBenchAdapter(root, meter, container if container.endswith("/v1") else container + "/v1",
                              experiment=args.experiment, api_key=api_key, python=args.python,
                              extra_args=tuple(args.run_batch_arg or ()), context_window=args.context_window,
                              max_tokens=args.max_tokens)
    out = Path(args.out)
    if args.dry_run:
        for policy in policies:
            for task in tasks:
                for run in range(args.repeat):
                    _, _, command = adapter.prepare(task, run, policy, out, dry_run=True)
                    print(f"# {session_id(args.experiment, policy, task.id, run)} "
                          f"({run_dir(out, policy, task.id, run)}/models.json)")
                    print(" ".join(command))
        return 0
    adapter.run_grid(tasks, policies, repeat=args.repeat, out=out, parallel=args.parallel, join_only=args.join_only)
    sys.stdout.write(markdown_table(summarize_dir(out)))
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("eval", help="run agent benchmarks through the gateway and report the paper's table")
    commands = p.add_subparsers(dest="eval_command", required=True)

    t = commands.add_parser("tasks", help="load and list a suite's task files (checks that every file parses)")
    t.add_argument("dir", help="a suite directory (with tasks/) or a tasks directory")
    t.set_defaults(func=cmd_tasks)

    r = commands.add_parser("run", help="run every task under every policy, N times, through the gateway")
    r.add_argument("--suite", required=True, help="suite directory (tasks/ and workspace/)")
    r.add_argument("--policies", required=True, help="comma-separated policy names, e.g. edge-only,cloud-only")
    r.add_argument("--repeat", type=int, default=3, help="runs per task (default 3, as Pass^3 needs)")
    r.add_argument("--parallel", type=int, default=1, help="runs at the same time (default 1)")
    r.add_argument("--out", required=True, help="output directory; finished runs there are skipped")
    r.add_argument("--tasks", default=None, help="comma-separated task ids to run (default: all)")
    r.add_argument("--gateway-url", default=DEFAULT_GATEWAY, help=f"gateway root URL (default {DEFAULT_GATEWAY})")
    r.add_argument("--api-key", default=None, help="gateway key (default: $ECGW_API_KEY)")
    r.add_argument("--model", default="ecgw", help="model name sent to the gateway")
    r.add_argument("--experiment", default="eval", help="experiment name, part of every session id")
    r.add_argument("--max-steps", type=int, default=40, help="agent steps per run (default 40)")
    r.add_argument("--timeout-cap", type=float, default=None, help="cap on each task's timeout_seconds")
    r.add_argument("--max-tokens", type=int, default=None, help="max_tokens of every model call (default: unset)")
    r.add_argument("--temperature", type=float, default=None, help="temperature of every model call (default: unset)")
    r.add_argument("--isolation", choices=["auto", "namespace", "rewrite"], default="auto",
                   help="per-run workspace at /tmp_workspace: a mount namespace per run (needs root/CAP_SYS_ADMIN), "
                        "or rewriting /tmp_workspace to the run's directory; auto picks the first that works")
    r.add_argument("--no-metering", action="store_true", help="don't read usage or register units at the gateway")
    r.add_argument("--settle-timeout", type=float, default=60.0,
                   help="seconds to wait for the gateway to have recorded every request of a run before its usage "
                        "is read; what is still missing then marks the run incomplete (default: %(default)s)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    for name in ("OPENROUTER_BASE_URL", "OPENROUTER_API_KEY", "JUDGE_MODEL"):
        r.add_argument("--" + name.lower().replace("_", "-"), dest=name.lower(), default=os.environ.get(name),
                       help=f"grader judge setting (default: ${name})")
    r.set_defaults(func=cmd_run)

    a = commands.add_parser("acebench", help="run the benchmark's official harness (Docker + OpenClaw) with the "
                                             "gateway as its only model, then join the gateway's metering and audit")
    a.add_argument("--acebench-dir", required=True, help="the benchmark's checkout (eval/run_batch.py, tasks/, "
                                                         "workspace/ from its separate download)")
    a.add_argument("--policies", required=True, help="comma-separated policy names; each is the model ecgw/<policy>")
    a.add_argument("--out", required=True, help="output directory (the same layout as `ecgw eval run`)")
    a.add_argument("--repeat", type=int, default=3, help="runs per task (default 3)")
    a.add_argument("--parallel", type=int, default=1, help="run_batch.py processes at the same time (default 1)")
    a.add_argument("--tasks", default=None, help="comma-separated task ids (default: all)")
    a.add_argument("--task-filter", default=None, help="regex on task file names, e.g. 'task_9_|task_10_'")
    a.add_argument("--gateway-url", default=DEFAULT_GATEWAY, help=f"gateway root URL for metering and units "
                                                                  f"(default {DEFAULT_GATEWAY})")
    a.add_argument("--container-gateway-url", default=None,
                   help="the gateway as the task containers reach it, e.g. http://172.17.0.1:4000 "
                        "(default: --gateway-url)")
    a.add_argument("--api-key", default=None, help="gateway key (default: $ECGW_API_KEY); given to run_batch.py as "
                                                   "$MY_PROXY_API_KEY, never written into the models config")
    a.add_argument("--experiment", default="acebench", help="experiment name, part of every session id")
    a.add_argument("--python", default=sys.executable, help="python that runs run_batch.py (the benchmark's venv)")
    a.add_argument("--run-batch-arg", action="append", default=None,
                   help="extra argument for run_batch.py (repeatable), e.g. --run-batch-arg=--privacy-judge-mode=off")
    a.add_argument("--context-window", type=int, default=None, help="contextWindow of the model in OpenClaw's config")
    a.add_argument("--max-tokens", type=int, default=None, help="maxTokens of the model in OpenClaw's config")
    a.add_argument("--dry-run", action="store_true", help="write the models configs and print the commands only")
    a.add_argument("--join-only", action="store_true",
                   help="don't run; re-join benchmark outputs already under --out with the gateway's figures")
    a.set_defaults(func=cmd_acebench)

    rep = commands.add_parser("report", help="the table (Markdown, HTML) and plots (PNG) of a run directory")
    rep.add_argument("dir", help="the --out directory of `ecgw eval run`")
    rep.add_argument("--to", default=None, help="where to write the report (default: the run directory)")
    rep.add_argument("--title", default="ecgw evaluation", help="the report's title")
    rep.add_argument("--edge-policy", default="edge-only", help="left end of the interpolation line")
    rep.add_argument("--cloud-policy", default="cloud-only", help="right end of the interpolation line")
    rep.set_defaults(func=cmd_report)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m eval.cli ...`` until the gateway's CLI lists this module."""
    parser = argparse.ArgumentParser(prog="ecgw")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
