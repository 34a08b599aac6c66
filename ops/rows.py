"""Model instances from one written-out statement that joins several tables, and one
row inserted or its fields updated by a written-out statement.

A read the ORM builds in several times the statement's own cost (a launch's rows, decision
58) is written out once, its columns named from the models (never ``*``: a prepared
statement whose columns change under it fails, decision 51), and each model's part of the
row becomes an instance with the same conversions the ORM applies to that column on this
database (SQLite's text dates and integer booleans, JSON), through ``Model.from_db``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class Part:
    """One model's columns in a statement, under a table alias."""

    model: type[Model]
    alias: str
    fields: tuple[Any, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.model._meta.concrete_fields))

    @property
    def table(self) -> str:
        return f"{connection.ops.quote_name(self.model._meta.db_table)} {self.alias}"

    def column(self, name: str) -> str:
        """A column of this part by its field's name, as the statement writes it."""
        return f"{self.alias}.{connection.ops.quote_name(self.model._meta.get_field(name).column)}"


def select_list(parts: Sequence[Part]) -> str:
    """Every column of every part, in the models' field order."""
    return ", ".join(
        f"{part.alias}.{connection.ops.quote_name(model_field.column)}"
        for part in parts
        for model_field in part.fields
    )


# Per part and database kind: each column's position with what converts it.
_converters: dict[tuple[type[Model], str, str], list[tuple[int, list[Any], Any]]] = {}


def _converters_of(part: Part) -> list[tuple[int, list[Any], Any]]:
    """What the ORM's compiler applies to each column it selected: the backend's converters,
    then the field's own (``from_db_value``); only the columns that have any."""
    key = (part.model, part.alias, connection.vendor)
    if key not in _converters:
        found = []
        for position, model_field in enumerate(part.fields):
            column = model_field.get_col(part.alias)
            converters = connection.ops.get_db_converters(column)
            converters += column.get_db_converters(connection)
            if converters:
                found.append((position, converters, column))
        _converters[key] = found
    return _converters[key]


def instances(row: Sequence[Any], parts: Sequence[Part]) -> list[Model | None]:
    """The row cut into one instance per part, in order; None for a part whose primary key
    is NULL (a LEFT JOIN that found nothing)."""
    found: list[Model | None] = []
    start = 0
    for part in parts:
        values = list(row[start : start + len(part.fields)])
        start += len(part.fields)
        primary_key = part.model._meta.pk
        if values[part.fields.index(primary_key)] is None:
            found.append(None)
            continue
        for position, converters, column in _converters_of(part):
            for converter in converters:
                values[position] = converter(values[position], column, connection)
        names = [model_field.attname for model_field in part.fields]
        found.append(part.model.from_db(connection.alias, names, values))
    return found


def update_row(model: type[Model], primary_key: Any, values: dict[str, Any]) -> int:
    """``UPDATE`` of one row's fields (``values``: field name to value), written out, the
    values prepared as the ORM prepares them for saving; the rows changed. ``QuerySet.update``
    and ``save(update_fields=…)`` spent twice the statement's cost building it (0.75 ms of CPU
    against 0.26, decision 76). Sends no signals, as ``QuerySet.update``."""
    meta = model._meta
    quote = connection.ops.quote_name
    fields = [(meta.get_field(name), value) for name, value in values.items()]
    assignments = ", ".join(f"{quote(model_field.column)} = %s" for model_field, _ in fields)
    parameters = [model_field.get_db_prep_save(value, connection) for model_field, value in fields]
    parameters.append(meta.pk.get_db_prep_save(primary_key, connection))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s",
            parameters,
        )
        return cursor.rowcount


def insert_row(instance: M) -> M:
    """``INSERT`` of a new instance's row, written out, its values prepared as the ORM
    prepares them for saving (``pre_save`` first: ``auto_now_add`` and the like), its
    primary key set from ``RETURNING``; the instance, now saved. ``Model.save`` and
    ``QuerySet.create`` spent twice the statement's cost building it (decision 78). Sends
    no signals: for models nothing listens to. For a plain model's row of plain values: a
    model that inherits a table, or a value that is an expression (``F()``, a
    ``db_default``), is refused; related objects must be saved first."""
    meta = instance._meta
    if meta.parents:
        raise TypeError(f"{meta.label} inherits a table: save it through the ORM")
    quote = connection.ops.quote_name
    fields = [
        model_field
        for model_field in meta.concrete_fields
        if not getattr(model_field, "generated", False)
        and not (model_field.primary_key and getattr(instance, model_field.attname) is None)
    ]
    values = [model_field.pre_save(instance, True) for model_field in fields]
    for model_field, value in zip(fields, values, strict=True):
        if hasattr(value, "as_sql"):  # F(), Now(), a db_default: SQL, not a value to bind
            raise TypeError(f"{meta.label}.{model_field.name} is an expression: use the ORM")
    parameters = [
        model_field.get_db_prep_save(value, connection)
        for model_field, value in zip(fields, values, strict=True)
    ]
    columns = ", ".join(quote(model_field.column) for model_field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({placeholders})"
            f" RETURNING {quote(meta.pk.column)}",
            parameters,
        )
        (primary_key,) = cursor.fetchone()
    instance.pk = meta.pk.to_python(primary_key)
    instance._state.adding = False
    instance._state.db = connection.alias
    return instance
