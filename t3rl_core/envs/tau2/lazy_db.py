"""An episode's private tau2 database, copied record by record as the episode reads it, and its hash.

A tau2 database is a few tables (retail: products, users, orders; airline: flights, users,
reservations), each a dict from id to a pydantic record; an episode reads a handful of records out of
thousands. `lazy_copy` gives each episode a database whose tables are `LazyTable`s: a record is
deep-copied from the domain's shared database the first time Python code reads it (by key, `get`,
`values`, `items`, `pop`…), so the shared records are never handed out and so never changed (but to
the tau2 functions declared to scan a table only reading it: `read_only_scans`); the
records not read stay the shared ones, which only serialisers (pydantic's `model_dump`, reading the
dict directly) see.

`TableFragments` hashes such a database exactly as tau2 does (`get_dict_hash(db.model_dump())`: the
sha256 of `json.dumps(..., sort_keys=True, default=str)`), without serialising it whole: the JSON text
of each shared record is made once per process, and a copied record is serialised again only when it
differs from its shared one (equal as Python values and as orjson text: what can make two values'
`json.dumps` texts differ also makes one of those differ). The text hashed is byte for byte tau2's
(tests/envs/tau2/test_lazy_db.py compares them on pristine and changed databases of every domain).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import orjson
from pydantic import BaseModel

from t3rl_core.envs.tau2.db_copy import copy_model, copy_tree
from t3rl_core.envs.tau2.read_only_scans import reads_only


class LazyTable(dict):  # type: ignore[type-arg]
    """A table (id → record) whose records are copied from a shared table on their first read."""

    __slots__ = ("copied", "origin")

    def __init__(self, shared: dict[str, Any]) -> None:
        super().__init__(shared)
        self.origin = shared  # the domain's table, never changed
        self.copied: set[Any] = set()

    def _own(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if key not in self.copied and value is self.origin.get(key):
            value = copy_tree(value)
            dict.__setitem__(self, key, value)
            self.copied.add(key)
        return value

    def _own_all(self) -> None:
        for key in list(dict.keys(self)):
            self._own(key)

    def __getitem__(self, key: Any) -> Any:
        return self._own(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._own(key) if key in self else default

    def setdefault(self, key: Any, default: Any = None) -> Any:
        return self._own(key) if key in self else dict.setdefault(self, key, default)

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self:
            self._own(key)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        self._own_all()
        return dict.popitem(self)

    def _scan(self, caller: Any) -> None:
        """Before a scan: copy every record unless the scanning function only reads them
        (t3rl_core.envs.tau2.read_only_scans)."""
        if not reads_only(caller.f_code, caller.f_globals.get("__name__")):
            self._own_all()

    def values(self) -> Any:
        self._scan(sys._getframe(1))
        return dict.values(self)

    def items(self) -> Any:
        self._scan(sys._getframe(1))
        return dict.items(self)

    def copy(self) -> dict[Any, Any]:
        self._own_all()
        return dict(dict.items(self))

    # Defined so that dict(table), {**table} and table | other go through keys() and __getitem__ (a
    # dict subclass with dict's own iterator would be copied raw, shared records included).
    def __iter__(self) -> Iterator[Any]:
        return iter(dict.keys(self))

    def __or__(self, other: Any) -> Any:
        return self.copy() | other

    def __ror__(self, other: Any) -> Any:
        return other | self.copy()

    def __reduce__(self) -> Any:
        return dict, (self.copy(),)


def _is_table(value: Any) -> bool:
    return type(value) is dict and all(isinstance(record, BaseModel) for record in value.values())


def lazy_copy(database: BaseModel) -> BaseModel:
    """A private copy of a database whose tables copy their records on first read; everything else
    is copied at once (`copy_tree`)."""
    fields = {
        name: LazyTable(value) if _is_table(value) else copy_tree(value)
        for name, value in database.__dict__.items()
    }
    return copy_model(database, fields)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _orjson(value: Any) -> bytes | None:
    """orjson's sorted text of a value of JSON's own types; None for anything else (then the record
    counts as changed and json serialises it)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None


def _part(number: int, key: Any, text: str) -> bytes:
    """The hashed text of a table's `number`th record (in key order): `json.dumps`'s `, "id": {…}`."""
    return f"{', ' if number else ''}{json.dumps(key)}: {text}".encode()


class _TableText:
    """A shared table's hashed text: each record's part (`, "id": {…}`) in key order, their place by
    key, and the whole table's text, hashed in one call when no record differs from the shared one (a
    hash per record took most of an airline episode's scoring: its flights table holds thousands)."""

    __slots__ = ("joined", "parts", "place")

    def __init__(self, parts: list[bytes], place: dict[Any, int]) -> None:
        self.parts, self.place = parts, place
        self.joined = b"{" + b"".join(parts) + b"}"


class TableFragments:
    """One shared database's tables as JSON texts per record, made on the first hash (per process)."""

    def __init__(self, database: BaseModel) -> None:
        self.database = database
        self.tables = [name for name, value in database.__dict__.items() if _is_table(value)]
        # The class of each table's records: one of another class is serialised by the table's schema,
        # not by its own, and then the whole database is (see `hash`).
        self.record_types = {
            name: {type(record) for record in database.__dict__[name].values()} for name in self.tables
        }
        dumped = database.model_dump(include=set(self.tables))
        # per table: record id → (its dump, its orjson text, its json text)
        self.records: dict[str, dict[Any, tuple[Any, bytes | None, str]]] = {
            name: {key: (dump, _orjson(dump), _json(dump)) for key, dump in dumped[name].items()}
            for name in self.tables
        }
        self._texts: dict[str, _TableText] = {}

    def hash(self, database: BaseModel) -> str:
        """tau2's `get_dict_hash(database.model_dump())` of a `lazy_copy` of this database."""
        fields = database.__dict__
        lazy = [
            name
            for name in self.tables
            if type(fields.get(name)) is LazyTable and fields[name].origin is self.database.__dict__[name]
        ]
        if not all(self._plain(name, fields[name]) for name in lazy):
            return hashlib.sha256(_json(database.model_dump()).encode()).hexdigest()
        rest = database.model_dump(exclude=set(lazy))
        digest = hashlib.sha256(b"{")
        for number, name in enumerate(sorted([*rest, *lazy])):
            digest.update(f"{', ' if number else ''}{json.dumps(name)}: ".encode())
            if name in rest:
                digest.update(_json(rest[name]).encode())
            else:
                self._update_table(digest, name, fields[name])
        digest.update(b"}")
        return digest.hexdigest()

    def _plain(self, name: str, table: LazyTable) -> bool:
        """Whether the table's keys are strings and its copied records of the shared ones' class."""
        types = self.record_types[name]
        return all(type(key) is str for key in dict.keys(table)) and all(
            type(dict.__getitem__(table, key)) in types
            for key in dict.keys(table)
            if key in table.copied or key not in table.origin
        )

    def _update_table(self, digest: Any, name: str, table: LazyTable) -> None:
        origin = table.origin
        if dict.keys(table) == origin.keys():  # the usual case: records changed, none added or removed
            text = self._table_text(name)
            changed = [key for key, record in dict.items(table) if record is not origin[key]]
            if not changed:
                digest.update(text.joined)
                return
            parts = list(text.parts)
            for key in changed:
                at = text.place[key]
                record = self._record_text(name, key, dict.__getitem__(table, key))
                parts[at] = _part(at, key, record)
            digest.update(b"{" + b"".join(parts) + b"}")
            return
        shared = self.records[name]
        digest.update(b"{")
        for number, key in enumerate(sorted(dict.keys(table))):
            record = dict.__getitem__(table, key)
            text = shared[key][2] if key in shared and record is table.origin.get(key) else None
            if text is None:
                text = self._record_text(name, key, record)
            digest.update(_part(number, key, text))
        digest.update(b"}")

    def _table_text(self, name: str) -> _TableText:
        """The shared table's hashed text, by record in key order (made on its first use)."""
        known = self._texts.get(name)
        if known is None:
            shared = self.records[name]
            keys = sorted(shared)
            parts = [_part(number, key, shared[key][2]) for number, key in enumerate(keys)]
            known = self._texts[name] = _TableText(parts, {key: at for at, key in enumerate(keys)})
        return known

    def _record_text(self, name: str, key: Any, record: Any) -> str:
        dump = record.model_dump()
        known = self.records[name].get(key)
        if known is not None and dump == known[0]:
            text = _orjson(dump)
            if text is not None and text == known[1]:
                return known[2]
        return _json(dump)
