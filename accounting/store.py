"""The metering store: open (migrate), append batches idempotently, aggregate for reports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Integer, Table, case, cast, distinct, func, null, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from accounting.builder import Row
from accounting.database import StoreUnavailable, make_engine, safe_url
from accounting.migrations import MIGRATIONS, Migration, SchemaTooNew, migrate
from accounting.records import RequestMark, UsageRecord

GROUPS: dict[str, str] = {
    "session": "session_id",
    "policy": "policy",
    "experiment": "experiment",
    "arm": "arm",
    "model": "model",
    "deployment": "deployment",
    "purpose": "purpose",
    "day": "day",
}


def time_bucket(column: Any, bucket_s: float, dialect: str) -> Any:
    """The start of ``column``'s time bucket: floor(t / bucket) · bucket (a cast truncates on SQLite, where floor
    may be missing; PostgreSQL's cast rounds, so it gets floor)."""
    if dialect == "postgresql":
        return func.floor(column / bucket_s) * bucket_s
    return cast(column / bucket_s, Integer) * bucket_s


def insert_new(target: Engine | Connection, table: Table, rows: Sequence[Row], *, key: str) -> None:
    """Append ``rows`` to ``table``, skipping any whose unique ``key`` is already stored (a retried batch); in the
    transaction of ``target`` when it is a connection, else in a transaction of its own."""
    if not rows:
        return
    dialect = target.dialect.name
    if dialect == "postgresql":
        statement: Any = postgresql.insert(table).on_conflict_do_nothing(index_elements=[key])
    elif dialect == "sqlite":
        statement = sqlite.insert(table).on_conflict_do_nothing(index_elements=[key])
    else:
        statement = table.insert()
    if isinstance(target, Connection):
        target.execute(statement, list(rows))
        return
    with target.begin() as conn:
        conn.execute(statement, list(rows))


def _table() -> Table:
    table: Table = UsageRecord.__table__  # type: ignore[attr-defined]
    return table


def _marks_table() -> Table:
    table: Table = RequestMark.__table__  # type: ignore[attr-defined]
    return table


def _sums(t: Table) -> list[Any]:
    """The raw sums of a report, over whatever rows a query selects."""
    cloud = t.c.side == "cloud"
    edge = t.c.side == "edge"

    def total(expr: Any, when: Any) -> Any:
        return func.coalesce(func.sum(case((when, expr), else_=0)), 0)

    return [
        func.count().label("calls"),
        func.count(distinct(t.c.request_id)).label("requests"),
        func.count(distinct(case((cloud, t.c.request_id), else_=None))).label("cloud_requests"),
        total(1, cloud).label("cloud_calls"),
        total(1, edge).label("edge_calls"),
        total(t.c.prompt_tokens, cloud).label("cloud_prompt_tokens"),
        total(t.c.raw_input_tokens, cloud).label("cloud_raw_input_tokens"),
        total(t.c.cache_read_tokens, cloud).label("cloud_cache_read_tokens"),
        total(t.c.cache_write_tokens, cloud).label("cloud_cache_write_tokens"),
        total(t.c.output_tokens, cloud).label("cloud_output_tokens"),
        func.coalesce(func.sum(case((cloud, t.c.cost_usd), else_=None)), 0.0).label("cloud_cost_usd"),
        total(1, cloud & t.c.cost_usd.is_(None)).label("cloud_unpriced_calls"),
        total(t.c.prompt_tokens, edge).label("edge_prompt_tokens"),
        total(t.c.output_tokens, edge).label("edge_output_tokens"),
        func.coalesce(func.sum(case((edge, t.c.edge_flops), else_=None)), 0.0).label("edge_flops"),
        total(1, t.c.usage_source == "estimated").label("estimated_calls"),
        func.min(t.c.flops_formula).label("flops_formula_min"),
        func.max(t.c.flops_formula).label("flops_formula_max"),
        func.min(t.c.price_version).label("price_version_min"),
        func.max(t.c.price_version).label("price_version_max"),
        func.avg(t.c.latency_s).label("mean_latency_s"),
        func.min(t.c.started_at).label("first_at"),
        func.max(t.c.started_at).label("last_at"),
    ]


class UsageStore:
    def __init__(self, engine: Engine, *, url: str | None = None) -> None:
        self.engine = engine
        self.url = safe_url(url) if url else engine.url.render_as_string(hide_password=True)

    @classmethod
    def from_url(cls, database_url: str) -> UsageStore:
        return cls(make_engine(database_url), url=database_url)

    def unavailable(self, exc: BaseException) -> StoreUnavailable:
        cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc  # the driver's own words
        reason = str(cause or exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        return StoreUnavailable(f"cannot use the metering database at {self.url}: {reason}. Check that it is "
                                "running and reachable, or set database_url (ECGW_DATABASE_URL).")

    def open(self, migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
        """Bring the schema up to date; raises ``StoreUnavailable`` with the URL (password hidden)."""
        try:
            return migrate(self.engine, migrations)
        except SchemaTooNew as exc:
            raise StoreUnavailable(f"metering database at {self.url}: {exc}") from None
        except (SQLAlchemyError, OSError) as exc:
            raise self.unavailable(exc) from None

    def insert(self, rows: Sequence[Row], *, conn: Connection | None = None) -> None:
        """Append rows; a row already stored (same ``record_id``, e.g. a retried batch) is skipped. ``conn``: in
        that connection's transaction."""
        insert_new(conn or self.engine, _table(), rows, key="record_id")

    def count(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(_table())).scalar_one())

    def rows(self, **where: Any) -> list[dict[str, Any]]:
        """Stored rows, oldest first, optionally filtered by equality on columns (for tests and exports)."""
        table = _table()
        query = select(table).order_by(table.c.id)
        for column, value in where.items():
            query = query.where(table.c[column] == value)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def aggregate(self, by: str, *, since: float | None = None, until: float | None = None,
                  where: Mapping[str, Any] | None = None,
                  session_prefix: str | None = None) -> list[dict[str, Any]]:
        """Raw sums per group (see ``accounting.reports`` for the derived figures) of the calls started at or after
        ``since`` and before ``until``; ``where``: equality filters on columns (e.g. ``{"experiment": "e1"}``);
        ``session_prefix``: only sessions whose id starts with it (an owner's namespace)."""
        if by not in GROUPS:
            raise ValueError(f"unknown grouping {by!r}; use one of {', '.join(GROUPS)}")
        t = _table()
        group: Any = t.c[GROUPS[by]]
        if by == "deployment":  # both sides' one-member shorthands are named "default": told apart by side
            group = case((group == "default", t.c.side + ":default"), else_=group)
        return self._grouped(group, since=since, until=until, where=where, session_prefix=session_prefix)

    def aggregate_buckets(self, bucket_s: float, *, since: float | None = None,
                          session_prefix: str | None = None) -> list[dict[str, Any]]:
        """The same sums per time bucket; ``group`` is the bucket's start (unix seconds)."""
        if bucket_s <= 0:
            raise ValueError("bucket_s must be positive")
        t = _table()
        return self._grouped(time_bucket(t.c.started_at, bucket_s, self.engine.dialect.name), since=since,
                             session_prefix=session_prefix)

    def _grouped(self, group: Any, *, since: float | None, until: float | None = None,
                 where: Mapping[str, Any] | None = None, session_prefix: str | None = None) -> list[dict[str, Any]]:
        t = _table()
        query = select(group.label("group"), *_sums(t)).group_by(group).order_by(group)
        if since is not None:
            query = query.where(t.c.started_at >= since)
        if until is not None:
            query = query.where(t.c.started_at < until)
        for column, value in (where or {}).items():
            query = query.where(t.c[column] == value)
        if session_prefix is not None:
            query = query.where(t.c.session_id.startswith(session_prefix, autoescape=True))
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def totals(self, request_ids: Sequence[str], *, session_prefix: str | None = None,
               session_id: str | None = None) -> dict[str, Any]:
        """The same raw sums as ``aggregate``, over the records of these requests, as one row (group None);
        ``session_prefix``: only records of sessions whose id starts with it; ``session_id``: of that session."""
        t = _table()
        query = select(null().label("group"), *_sums(t)).where(t.c.request_id.in_(list(request_ids)))
        if session_prefix is not None:
            query = query.where(t.c.session_id.startswith(session_prefix, autoescape=True))
        if session_id is not None:
            query = query.where(t.c.session_id == session_id)
        with self.engine.connect() as conn:
            return dict(conn.execute(query).one()._mapping)

    def insert_marks(self, marks: Sequence[Row], *, conn: Connection | None = None) -> None:
        """Append request marks (``accounting.records.RequestMark``); one already stored is skipped."""
        insert_new(conn or self.engine, _marks_table(), marks, key="request_id")

    def settlement(self, request_ids: Sequence[str], *, session_prefix: str | None = None,
                   session_id: str | None = None) -> dict[str, tuple[int | None, int]]:
        """Per request id: (upstream calls its mark says it caused — None while unmarked, records stored).
        ``session_prefix``: only marks and records of sessions whose id starts with it (``session_id``: of that
        one session); another owner's (or session's) request reads like an id never seen (unmarked, nothing
        recorded)."""
        ids = list(dict.fromkeys(request_ids))
        t, m = _table(), _marks_table()
        marks = select(m.c.request_id, m.c.upstream_calls).where(m.c.request_id.in_(ids))
        records = select(t.c.request_id, func.count()).where(t.c.request_id.in_(ids))
        if session_prefix is not None:
            marks = marks.where(m.c.session_id.startswith(session_prefix, autoescape=True))
            records = records.where(t.c.session_id.startswith(session_prefix, autoescape=True))
        if session_id is not None:
            marks = marks.where(m.c.session_id == session_id)
            records = records.where(t.c.session_id == session_id)
        with self.engine.connect() as conn:
            expected: dict[str, int] = {str(rid): int(n) for rid, n in conn.execute(marks)}
            stored: dict[str, int] = {str(rid): int(n) for rid, n in conn.execute(records.group_by(t.c.request_id))}
        return {i: (expected.get(i), int(stored.get(i, 0))) for i in ids}

    def dispose(self) -> None:
        self.engine.dispose()
