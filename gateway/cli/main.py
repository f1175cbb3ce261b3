"""``ecgw``: the command line. ``ecgw serve`` runs the gateway; other sub-commands come from the packages."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.cli.offline import prepare_offline_environment
from gateway.config.settings import (
    ConfigError,
    Settings,
    missing_cloud_key,
    parse_config,
    read_config,
    settings_from,
)
from gateway.http.errors import StartupError
from gateway.telemetry.logs import adopt_library_loggers, configure_logging, uvicorn_options

if TYPE_CHECKING:
    from gateway.launch.edge import LaunchedEdge

CONFIG_ENV = "ECGW_CONFIG_FILE"

# Packages that add sub-commands: each module has ``register(subparsers)``.
COMMAND_MODULES: tuple[str, ...] = ("accounting.cli", "gateway.cli.budget", "gateway.cli.privacy",
                                     "gateway.cli.policy", "gateway.cli.router", "gateway.cli.keys", "gateway.cli.audit",
                                     "eval.cli")


def config_path(given: str | None) -> str | None:
    """``--config``, else ``$ECGW_CONFIG_FILE``, else ``./config.yaml`` when there is one, else built-in defaults."""
    if given:
        return given
    if os.environ.get(CONFIG_ENV):
        return os.environ[CONFIG_ENV]
    return "config.yaml" if Path("config.yaml").is_file() else None


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    server: dict[str, Any] = {}
    if getattr(args, "host", None):
        server["host"] = args.host
    if getattr(args, "port", None):
        server["port"] = args.port
    if getattr(args, "workers", None):
        server["workers"] = args.workers
    return {"server": server} if server else {}


def _prefork(args: argparse.Namespace, settings: Settings, workers: int, launched: LaunchedEdge | None) -> int:
    """Several workers: the app built and the detectors' models loaded here, once, then forked
    (``gateway.launch.prefork``): every worker shares them, and a worker started again is forked from the same."""
    import asyncio

    from gateway.app import build_services, create_app
    from gateway.launch.prefork import Prefork, listening_socket, worker_server
    from gateway.live.reload import Seen, pass_sighup, stored_version
    from gateway.state.stores import build_session_store

    async def current() -> Seen:
        store = build_session_store(settings)
        try:
            return await stored_version(store)
        finally:
            await store.aclose()

    config = os.path.abspath(args.config) if args.config else None
    services = build_services(settings, config_path=config, overrides=_overrides(args),
                              reload_adopt_after=asyncio.run(current()))  # a reload since then: adopted at once
    app = create_app(settings, services=services, reload_on_sighup=True)
    adopt_library_loggers()  # litellm, imported by create_app, attached its own handler
    if settings.privacy.warm_at_start:  # else each worker loads what it needs when it needs it
        services.protector.load_models()
    log_format = settings.server.log_format
    configure_logging(log_format, threaded=False)  # the parent's own lines, written in place: no thread at the fork
    sock = listening_socket(settings.server.host, settings.server.port)
    options = {"host": settings.server.host, "port": settings.server.port, **uvicorn_options()}

    def worker(ready_fd: int) -> int:
        configure_logging(log_format)  # the worker's own log writer
        return worker_server(app, sock, ready_fd, options=options)

    print(f"ecgw listening on http://{settings.server.host}:{settings.server.port}/v1 with {workers} workers "
          f"(default policy {settings.policy.default}, {_fleet(settings)}, "
          f"sessions in {_store_name(settings)})", file=sys.stderr, flush=True)
    tolerated = {launched.supervisor.thread_name} if launched is not None else set()
    with contextlib.suppress(KeyboardInterrupt):
        Prefork(worker, workers=workers, on_hup=pass_sighup, tolerated=tolerated).run()
    sock.close()
    return 0


def _store_name(settings: Settings) -> str:
    if settings.sessions.redis_url and settings.sessions.store in ("auto", "redis"):
        from gateway.state.redis_sessions import where

        return where(settings.sessions.redis_url)
    if settings.sessions.store == "memory":
        return "memory (this worker only)"
    return f"sqlite {settings.sessions.sqlite_path}"


@contextmanager
def _multiprocess_metrics() -> Iterator[None]:
    """Prometheus multiprocess mode for the workers this command starts (they inherit the variable): a fresh
    directory of their own, removed afterwards; one the operator set is emptied first, as the client asks."""
    from gateway.telemetry.metrics import MULTIPROC_ENV, multiprocess_values

    given = os.environ.get(MULTIPROC_ENV)
    path = given or tempfile.mkdtemp(prefix="ecgw-metrics-")
    for stale in Path(path).glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_ENV] = path
    restore = multiprocess_values()
    try:
        yield
    finally:
        restore()
        if given is None:
            os.environ.pop(MULTIPROC_ENV, None)
        else:
            os.environ[MULTIPROC_ENV] = given
        if not given:
            shutil.rmtree(path, ignore_errors=True)


def _fleet(settings: Settings) -> str:
    """The banner's edge and cloud: the one URL and model, or the pool's deployments and the targets."""
    edge = settings.edge
    where = (f"edge {edge.base_url}" if not edge.deployments else
             "edge pool " + ", ".join(f"{d.name} {d.base_url}" for d in edge.deployments))
    cloud = settings.cloud
    targets = (f"cloud {cloud.model}" if not cloud.targets else
               "cloud targets " + ", ".join(f"{n} {t.model}" for n, t in cloud.targets.items()))
    return f"{where}, {targets}"


def serve(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # until it serves, there is nothing to reload
    args.config = config_path(args.config)
    text = read_config(args.config) if args.config else None
    settings = settings_from(parse_config(text, args.config) if text is not None else {}, args.config,
                             **_overrides(args))
    workers = settings.server.worker_count
    # several workers: their metrics in files they share
    with _multiprocess_metrics() if workers > 1 else contextlib.nullcontext():
        from gateway.app import preflight

        preflight(settings)  # fail here, once, with a message, not in every worker with a traceback
        configure_logging(settings.server.log_format)
        from gateway.launch.edge import launch_edge
        for target in settings.cloud.named_targets():
            if (missing := missing_cloud_key(settings.cloud.for_target(target))) is not None:
                print(f"ecgw: warning: {missing}", file=sys.stderr)
        launched = None
        try:
            settings, launched = launch_edge(settings, out=sys.stderr)  # only here: workers never launch
            if launched is not None:
                os.environ["ECGW_EDGE__BASE_URL"], os.environ["ECGW_EDGE__MODEL"] = launched.base_url, launched.model
            if workers > 1:
                return _prefork(args, settings, workers, launched)
            return _single(args, settings)
        finally:
            if launched is not None:
                launched.stop()


def _single(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from gateway.app import create_app

    app = create_app(settings, config_path=args.config, overrides=_overrides(args), reload_on_sighup=True)
    adopt_library_loggers()  # litellm, imported by create_app, attached its own handler
    print(f"ecgw listening on http://{settings.server.host}:{settings.server.port}/v1 "
          f"(default policy {settings.policy.default}, {_fleet(settings)})", file=sys.stderr)
    uvicorn.run(app, host=settings.server.host, port=settings.server.port, **uvicorn_options())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ecgw", description="edge–cloud gateway for LLM agents",
                                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", help="print the version and exit",
                        version=f"%(prog)s {importlib.metadata.version('edgecloud-gateway')}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     help="`ecgw COMMAND --help` for each")
    p = commands.add_parser("serve", help="run the OpenAI-compatible gateway",
                            description="Serve the gateway's OpenAI API. When no edge answers at edge.base_url, "
                                        "launch a local vLLM as the edge first (edge.launch in config.yaml).")
    p.add_argument("--config", default=None,
                   help=f"YAML config file (default: ${CONFIG_ENV}, else ./config.yaml if present, else built-in "
                        "defaults)")
    p.add_argument("--host", default=None, help="address to listen on (default: server.host, 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port to listen on (default: server.port, 4000)")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: server.workers, else one per core, at most 4)")
    p.set_defaults(func=serve)
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(commands)
    _format_all(parser)
    return parser


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, unless its help already says it or there is none to show."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS) or not action.option_strings:
            return text
        return super()._get_help_string(action)


def _format_all(parser: argparse.ArgumentParser) -> None:
    """Every sub-command (the packages register their own) gets the same help format."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _format_all(sub)


def main(argv: Sequence[str] | None = None) -> int:
    prepare_offline_environment()  # before any command imports litellm, tiktoken or presidio
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result: int = args.func(args)
        return result
    except ConfigError as exc:
        print(f"ecgw: {exc}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"ecgw: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
