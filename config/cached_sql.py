"""Querysets built and compiled once, then run again with new parameter values.

Labeling's hot path (an answer that preloads the following question) runs the same few SELECTs
for every question; building and compiling each of them took 1-3 ms of Python per statement
(the ORM's query compiler), several times more than PostgreSQL needs to run them. A
``CachedQuery`` builds its queryset once per database connection vendor with sentinel values in
place of its parameters, keeps the SQL, and later substitutes the real values at the sentinels'
positions. It runs through Django's cursor, so statements are counted, logged and wrapped as any
other, and applies the columns' converters as the ORM does (SQLite datetimes and booleans).

Only for ``values_list`` querysets whose parameters are plain ints, strings, floats and aware
datetimes (each one a parameter of the SQL, as the ORM emits lookups); compiling raises when a
sentinel does not come out as a parameter value (the ORM folds some lookups, e.g. an integer past
its column's range; the sentinels avoid that, the check catches the rest). ``instances`` turns rows of
``concrete_attnames(Model)`` columns back into model instances (``Model.from_db``, what the ORM does);
``instances`` splits a row of several models' columns side by side.

``CachedUpdate`` does the same for the hot path's UPDATEs (``queryset.update(**values)`` and
``instance.save(update_fields=...)``, about 0.5 ms of Python each to build): single-table updates
only (no join in the filter, no related model's fields), values plain parameters or expressions of
constants and the row's own columns (``F("n") + 1``). No model signals are sent (as ``update()``).
``CachedSave`` is the common case: ``instance.save(update_fields=...)`` of a row by its pk.
``CachedInsert`` is ``Model.objects.create(...)`` of one row (its pk returned): every column is
given by the caller except those with a constant default; no ``pre_save`` (``auto_now_add`` columns
are the caller's to fill) and no model signals. ``CachedInsertOrNothing`` is the same as ``INSERT ... ON
CONFLICT DO NOTHING RETURNING`` the pk (SQLite: ``INSERT OR IGNORE``): its ``insert_or_nothing`` gives
the new row's pk, or None when a row with the same unique values exists (one statement where
``bulk_create(ignore_conflicts=True)`` and a read of the row are two).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet
from django.db.models.constants import OnConflict
from django.db.models.sql import InsertQuery, UpdateQuery

M = TypeVar("M", bound=models.Model)
KINDS = (int, str, float, datetime)


def concrete_attnames(model: type[models.Model], prefix: str = "") -> list[str]:
    """Every concrete column of ``model`` in the order ``Model.from_db`` expects (``prefix``:
    the relation's path, as in ``values_list("job__min_seconds")``)."""
    return [prefix + f.attname for f in model._meta.concrete_fields]


def instance(model: type[M], row: Sequence[Any], alias: str = DEFAULT_DB_ALIAS) -> M:
    """A model instance from the values of ``concrete_attnames(model)``, as the ORM builds it."""
    return model.from_db(alias, concrete_attnames(model), list(row))


def instances(row: Sequence[Any], *models: type[models.Model], alias: str = DEFAULT_DB_ALIAS) -> list[Any]:
    """One instance per model from a row of their ``concrete_attnames`` side by side (a query that
    reads a row with the rows it joins), in the order given."""
    out, start = [], 0
    for model in models:
        end = start + len(model._meta.concrete_fields)
        out.append(instance(model, row[start:end], alias))
        start = end
    return out


@dataclass(frozen=True)
class _Compiled:
    sql: str
    slots: tuple[tuple[str | None, Any], ...]  # (parameter name, its type) or (None, a constant value)
    converters: tuple[tuple[int, tuple[Any, ...], Any], ...]  # (column, converter functions, expression)


def _sentinel(kind: type, n: int) -> Any:
    if kind is int:  # within every integer column's range: the ORM drops a lookup on a value
        return 32_000 + n  # past it (IntegerFieldOverflow), e.g. smallint counters on PostgreSQL
    if kind is str:
        return f"cached-sql-parameter-{n}"
    if kind is float:
        return 7_300_000_000_000.5 + n
    if kind is datetime:
        return datetime(1901, 2, 3, 4, 5, 6, n + 1, tzinfo=UTC)
    raise TypeError(f"CachedQuery parameters are {', '.join(k.__name__ for k in KINDS)}, not {kind.__name__}")


class CachedQuery:
    """``build(**parameters)`` -> a ``values_list`` queryset; ``rows(**parameters)`` runs it."""

    def __init__(self, build: Callable[..., QuerySet[Any]], **kinds: type) -> None:
        self.build = build
        self.kinds = kinds
        self._compiled: dict[tuple[str, str], _Compiled] = {}
        self._lock = threading.Lock()

    def _sentinels(self) -> dict[str, Any]:
        return {name: _sentinel(kind, n) for n, (name, kind) in enumerate(self.kinds.items())}

    def _slots(self, conn: BaseDatabaseWrapper, sentinels: dict[str, Any], params: Sequence[Any]) -> tuple[tuple[str | None, Any], ...]:
        """Where each parameter of the compiled SQL comes from: a named parameter or a constant."""
        adapted = {
            name: conn.ops.adapt_datetimefield_value(value) if isinstance(value, datetime) else value
            for name, value in sentinels.items()
        }
        slots: list[tuple[str | None, Any]] = []
        for value in params:
            # isinstance: the PostgreSQL backend passes some integers as psycopg Int4 (kept below)
            names = [
                name
                for name, sentinel in adapted.items()
                if isinstance(value, type(sentinel)) and not isinstance(value, bool) and value == sentinel
            ]
            slots.append((names[0], type(value)) if names else (None, value))
        used = {name for name, _ in slots if name is not None}
        if used != set(self.kinds):
            raise ValueError(
                f"{type(self).__name__}: parameters {sorted(set(self.kinds) - used)} are not plain SQL parameters"
            )
        return tuple(slots)

    def _compile(self, conn: BaseDatabaseWrapper) -> _Compiled:
        sentinels = self._sentinels()
        compiler = self.build(**sentinels).query.get_compiler(connection=conn)
        sql, params = compiler.as_sql()
        columns = [col for col, _, _ in compiler.select[: compiler.col_count]]
        converters = tuple((i, tuple(funcs), expr) for i, (funcs, expr) in compiler.get_converters(columns).items())
        return _Compiled(sql, self._slots(conn, sentinels, params), converters)

    def _prepared(self, using: str, values: dict[str, Any]) -> tuple[BaseDatabaseWrapper, _Compiled, list[Any]]:
        conn = connections[using]
        key = (using, conn.vendor)
        compiled = self._compiled.get(key)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.setdefault(key, self._compile(conn))
        params = []
        for name, held in compiled.slots:
            if name is None:
                params.append(held)  # a constant of the query
                continue
            value = values[name]
            if isinstance(value, datetime):
                value = conn.ops.adapt_datetimefield_value(value)
            params.append(held(value) if held is not type(value) else value)  # e.g. psycopg's Int4 wrapper
        return conn, compiled, params

    def rows(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> list[tuple[Any, ...]]:
        conn, compiled, params = self._prepared(using, values)
        with conn.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        if not compiled.converters:
            return [tuple(row) for row in rows]
        out = []
        for row in rows:
            converted = list(row)
            for i, funcs, expr in compiled.converters:
                for func in funcs:
                    converted[i] = func(converted[i], expr, conn)
            out.append(tuple(converted))
        return out


class CachedUpdate(CachedQuery):
    """``build(**parameters)`` -> ``(queryset, values)``, what ``queryset.update(**values)`` would
    run; ``run(**parameters)`` runs it and returns the number of rows changed, as ``update`` does."""

    def __init__(self, build: Callable[..., tuple[QuerySet[Any], dict[str, Any]]], **kinds: type) -> None:
        super().__init__(build, **kinds)  # type: ignore[arg-type]

    def _compile(self, conn: BaseDatabaseWrapper) -> _Compiled:
        sentinels = self._sentinels()
        queryset, values = self.build(**sentinels)  # type: ignore[misc]
        query = queryset.query.chain(UpdateQuery)
        query.add_update_values(values)
        if query.related_updates or query.count_active_tables() != 1:
            # QuerySet.update would first SELECT the primary keys (its compiler's pre_sql_setup)
            raise ValueError("CachedUpdate: only single-table updates of the queryset's own model")
        sql, params = query.get_compiler(connection=conn).as_sql()
        return _Compiled(sql, self._slots(conn, sentinels, params), ())

    def run(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> int:
        conn, compiled, params = self._prepared(using, values)
        with conn.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            return int(cursor.rowcount)


class CachedSave(CachedUpdate):
    """``instance.save(update_fields=[...])`` compiled once: ``CachedSave(Model, field=type, ...)``,
    then ``.save(instance)`` writes those fields of the row with the instance's pk."""

    def __init__(self, model: type[models.Model], **kinds: type) -> None:
        super().__init__(lambda pk, **values: (model._default_manager.filter(pk=pk), values), pk=int, **kinds)
        self.fields = tuple(kinds)

    def save(self, obj: models.Model, using: str = DEFAULT_DB_ALIAS) -> int:
        return self.run(using, pk=obj.pk, **{f: getattr(obj, f) for f in self.fields})


class CachedInsert(CachedQuery):
    """``Model.objects.create(**values)`` compiled once: ``CachedInsert(Model, constants, column=type,
    ...)`` names every concrete column but the pk by its attname (``job_id``): as a parameter, or in
    ``constants`` (a value compiled in, e.g. None for an empty foreign key), or not at all when its
    default is a constant. ``insert(**values)`` runs it and returns the new row's pk."""

    on_conflict: OnConflict | None = None

    def __init__(self, model: type[models.Model], constants: dict[str, Any] | None = None, **kinds: type) -> None:
        meta = model._meta
        self.constants = dict(constants or {})
        given = set(kinds) | set(self.constants)
        columns = {f.attname for f in meta.concrete_fields if f is not meta.pk}
        missing = [
            f.attname
            for f in meta.concrete_fields
            if f is not meta.pk and f.attname not in given and (not f.has_default() or callable(f.default))
        ]
        if missing:  # a callable default (or auto_now_add) would be frozen at its compile-time value
            raise ValueError(f"CachedInsert({model.__name__}): give {', '.join(missing)} (no constant default)")
        if given - columns:
            raise ValueError(f"CachedInsert({model.__name__}): no column {', '.join(sorted(given - columns))}")
        super().__init__(lambda **values: model._default_manager.none(), **kinds)
        self.model = model

    def _compile(self, conn: BaseDatabaseWrapper) -> _Compiled:
        sentinels = self._sentinels()
        meta = self.model._meta
        row = self.model(**sentinels, **self.constants)
        query = InsertQuery(self.model, on_conflict=self.on_conflict)
        # raw: the values as given (no pre_save: an auto_now_add column keeps its sentinel)
        query.insert_values([f for f in meta.concrete_fields if f is not meta.pk], [row], raw=True)
        compiler = query.get_compiler(connection=conn)
        compiler.returning_fields = [meta.pk] if conn.features.can_return_columns_from_insert else None
        ((sql, params),) = compiler.as_sql()
        return _Compiled(sql, self._slots(conn, sentinels, params), ())

    def insert(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> int:
        pk = self._execute(using, values)
        assert pk is not None  # a plain INSERT inserts or raises
        return pk

    def _execute(self, using: str, values: dict[str, Any]) -> int | None:
        conn, compiled, params = self._prepared(using, values)
        with conn.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            if conn.features.can_return_columns_from_insert:
                row = cursor.fetchone()
                return None if row is None else int(row[0])
            if cursor.rowcount != 1:  # no RETURNING (SQLite before 3.35): the row count says whether it inserted
                return None
            pk = self.model._meta.pk
            assert pk is not None and pk.column is not None
            return int(conn.ops.last_insert_id(cursor, self.model._meta.db_table, pk.column))


class CachedInsertOrNothing(CachedInsert):
    """``CachedInsert`` as ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` the pk (SQLite: ``INSERT OR IGNORE``)."""

    on_conflict = OnConflict.IGNORE

    def insert_or_nothing(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> int | None:
        """The new row's pk, or None when the insert did nothing (a row with the same unique values exists, or
        a concurrent transaction inserted one and committed first: PostgreSQL waits for it)."""
        return self._execute(using, values)

    def insert(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> int:
        raise TypeError("an insert that may do nothing has no pk to return: use insert_or_nothing")
