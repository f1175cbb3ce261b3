"""``ecgw router fit`` (learn a router from the labelled step records) and ``ecgw router replay`` (evaluate a fitted
router on sessions it never saw). Registered by ``gateway.cli.main``; the learning itself is ``router.learning``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from accounting.reports import BadReportRequest, parse_since
from accounting.steps import labelled_steps
from accounting.store import UsageStore
from gateway.config.settings import ConfigError, load_settings
from router.learning.fit import fit
from router.learning.model import ModelFileError, load_model
from router.learning.replay import replay


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("router", help="learn the step router from shadow-labelled steps and replay it "
                                             "before it serves")
    commands = p.add_subparsers(dest="router_command", required=True)
    f = commands.add_parser("fit", help="fit a logistic router predicting the edge's disagreement with the cloud, "
                                        "cross-validated by session; prints AUC and calibration")
    f.add_argument("--since", default="7d", help="learn from steps since this (7d, 24h, unix seconds, ISO date)")
    f.add_argument("--until", default=None, help="and before this (default: now)")
    f.add_argument("--out", required=True, help="the model file to write (JSON)")
    f.add_argument("--folds", type=int, default=5, help="cross-validation folds (by session)")
    _common(f)
    f.set_defaults(func=cmd_fit)
    r = commands.add_parser("replay", help="on sessions after the model's fitted_until: cloud-call rate against "
                                           "agreement with the cloud, for the model, entropy alone and random")
    r.add_argument("file", help="a model file from `ecgw router fit`")
    r.add_argument("--since", default=None, help="replay steps since this instead of after the model's fitted_until")
    r.add_argument("--at", type=float, default=0.25, help="the cloud rate the lead over entropy is reported at")
    _common(r)
    r.set_defaults(func=cmd_replay)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, help="YAML config file (for database_url)")
    p.add_argument("--database-url", default=None, help="overrides the config's database_url")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")


def _rows(args: argparse.Namespace, since: float | None, until: float | None) -> list[dict[str, Any]]:
    url = args.database_url or load_settings(args.config).database_url
    store = UsageStore.from_url(url)
    try:
        return labelled_steps(store, since=since, until=until)
    finally:
        store.dispose()


def _moment(text: str | None, option: str) -> float | None:
    try:
        return parse_since(text, now=time.time())
    except BadReportRequest as exc:
        raise ConfigError(str(exc).replace("--since", option)) from None


def cmd_fit(args: argparse.Namespace) -> int:
    rows = _rows(args, _moment(args.since, "--since"), _moment(args.until, "--until"))
    try:
        fitted = fit(rows, folds=args.folds)
    except ValueError as exc:
        print(f"ecgw router fit: {exc}", file=sys.stderr)
        return 1
    fitted.model.write(Path(args.out))
    report = {**fitted.report, "out": args.out, "fitted_until": fitted.model.fitted_until,
              "coefficients": dict(zip(fitted.model.features, fitted.model.coefficients, strict=True))}
    if args.format == "json":
        print(json.dumps(report, indent=2))
        return 0
    print(f"fitted on {report['steps']} steps of {report['sessions']} sessions (disagreement "
          f"{report['disagreement_rate']:.1%}); wrote {args.out}")
    print(f"AUC on held-out sessions ({report['folds']}-fold by session): {report['cv_auc']}  "
          f"(entropy alone: {report['entropy_auc']}); Brier {report['cv_brier']}")
    print("calibration (predicted → observed disagreement):")
    for row in report["calibration"]:
        print(f"  {row['bin']}: {row['predicted']:.3f} → {row['observed']:.3f}  ({row['steps']} steps)")
    print("coefficients (standardised features):")
    for name, value in sorted(report["coefficients"].items(), key=lambda kv: -abs(kv[1])):
        print(f"  {name:<20} {value:+.3f}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    try:
        model = load_model(args.file)
    except ModelFileError as exc:
        raise ConfigError(str(exc)) from None
    since = _moment(args.since, "--since") if args.since else model.fitted_until + 1e-6
    try:
        result = replay(model, _rows(args, since, None), at=args.at)
    except ValueError as exc:
        print(f"ecgw router replay: {exc}", file=sys.stderr)
        return 1
    result["since"] = since
    if args.format == "json":
        print(json.dumps(result, indent=2))
        return 0
    at = result["at"]
    print(f"replayed on {result['steps']} steps of {result['sessions']} sessions after {since:.0f} "
          f"(the edge agreed on {result['edge_agreement']:.1%})")
    print("cloud rate   learned   entropy   random")
    for learned, entropy, rand in zip(*(result["curves"][k] for k in ("learned", "entropy", "random")),
                                      strict=True):
        print(f"  {learned['cloud_rate']:>6.0%}   {learned['agreement']:>7.1%}   {entropy['agreement']:>7.1%}   "
              f"{rand['agreement']:>6.1%}")
    low, high = at["lead_ci95"] or (None, None)
    print(f"at {at['cloud_rate']:.0%} cloud: learned {at['learned']:.1%}, entropy {at['entropy']:.1%}, random "
          f"{at['random']:.1%}; lead over entropy {at['lead_over_entropy']:+.1%} (95% CI {low:+.1%} to {high:+.1%})")
    return 0
