"""Scans of an episode's tables (`values()`, `items()`): the tau2 functions declared to only read what
they scan copy nothing, every other scan hands out private copies, and the hash stays tau2's."""

from __future__ import annotations

import importlib

import pytest

from t3rl_core.envs.tau2 import read_only_scans
from t3rl_core.envs.tau2.evaluation import domain_world
from t3rl_core.envs.tau2.lazy_db import LazyTable, TableFragments
from t3rl_core.envs.tau2.read_only_scans import READ_ONLY_SCANS, source_fingerprint


def _tau2_hash(database) -> str:
    from tau2.utils import get_dict_hash

    return get_dict_hash(database.model_dump())


def _plain_environment(domain: str):
    """tau2's own environment over a plain deep copy of the shared database (no LazyTable)."""
    world = domain_world(domain)
    return world._constructor(solo_mode=False, db=world._databases[0].model_copy(deep=True))


def test_airline_flight_searches_copy_no_flight_and_answer_as_tau2():
    world = domain_world("airline")
    shared = world._databases[0]
    pristine = _tau2_hash(shared)
    flight, date = next(
        (flight, date)
        for flight in shared.flights.values()
        for date, status in flight.dates.items()
        if status.status == "available"
    )
    environment, plain = world.environment(), _plain_environment("airline")
    onestop = next(  # a trip with connections, found on tau2's own environment
        arguments
        for destination in sorted({flight.destination for flight in shared.flights.values()})
        for arguments in [{"origin": flight.origin, "destination": destination, "date": date}]
        if plain.tools.use_tool("search_onestop_flight", **arguments)
    )
    searches = [
        ("search_direct_flight", {"origin": flight.origin, "destination": flight.destination, "date": date}),
        ("search_onestop_flight", onestop),
    ]
    for name, arguments in searches:
        ours = environment.tools.use_tool(name, **arguments)
        assert ours and ours == plain.tools.use_tool(name, **arguments)
    flights: LazyTable = environment.tools.db.flights
    assert flights.copied == set()
    assert all(dict.__getitem__(flights, key) is record for key, record in shared.flights.items())
    assert _tau2_hash(shared) == pristine
    assert world.database_hashes(environment)[0] == environment.get_db_hash() == pristine


def test_retail_user_and_product_scans_copy_nothing():
    world = domain_world("retail")
    shared = world._databases[0]
    user = next(iter(shared.users.values()))
    environment, plain = world.environment(), _plain_environment("retail")
    calls = [
        ("find_user_id_by_email", {"email": user.email}),
        ("find_user_id_by_name_zip", {"first_name": "x", "last_name": "y", "zip": "0"}),
        ("list_all_product_types", {}),
    ]
    db = environment.tools.db
    for name, arguments in calls:
        try:
            ours = environment.tools.use_tool(name, **arguments)
        except ValueError as error:  # tau2 raises for a user not found: the same error both ways
            ours = str(error)
        try:
            theirs = plain.tools.use_tool(name, **arguments)
        except ValueError as error:
            theirs = str(error)
        assert ours == theirs
    assert db.users.copied == set() and db.products.copied == set()


def test_a_scan_from_other_code_hands_out_private_copies_hashed_as_tau2():
    world = domain_world("airline")
    shared = world._databases[0]
    fragments = TableFragments(shared)
    pristine = _tau2_hash(shared)
    environment = world.environment()
    flights: LazyTable = environment.tools.db.flights
    for flight in flights.values():
        assert flight is not shared.flights[flight.flight_number]
    _, record = next(iter(flights.items()))
    record.scheduled_departure_time_est = "23:59:00"
    assert _tau2_hash(shared) == pristine  # the shared database is as parsed
    assert fragments.hash(environment.tools.db) == _tau2_hash(environment.tools.db) != pristine


def _scan_all(table: LazyTable) -> list:
    return list(table.values()) + [record for _, record in table.items()]


@pytest.mark.parametrize("fingerprint_matches", [True, False])
def test_only_a_declared_function_whose_source_is_the_one_read_skips_the_copies(
    monkeypatch, fingerprint_matches
):
    code = _scan_all.__code__
    fingerprint = source_fingerprint(code) if fingerprint_matches else "0" * 16
    monkeypatch.setattr(read_only_scans, "_verdicts", {})
    monkeypatch.setitem(READ_ONLY_SCANS, (__name__, code.co_qualname), fingerprint)
    shared = domain_world("retail")._databases[0]
    table = LazyTable(shared.users)
    kept = {id(record) for record in shared.users.values()}  # alive as long as the shared database
    handed_shared = [id(record) in kept for record in _scan_all(table)]
    assert len(handed_shared) == 2 * len(shared.users)
    if fingerprint_matches:
        assert table.copied == set() and all(handed_shared)
    else:
        assert table.copied == set(shared.users) and not any(handed_shared)


@pytest.mark.parametrize(("module", "qualname"), sorted(READ_ONLY_SCANS))
def test_every_declared_scan_is_the_installed_tau2s(module, qualname):
    """A tau2 upgrade that changes a declared function makes its scans copy again; this says so."""
    target = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    assert source_fingerprint(target.__code__) == READ_ONLY_SCANS[module, qualname], (
        f"{module}.{qualname} differs from the source read for read_only_scans.READ_ONLY_SCANS: "
        "read it again and renew its fingerprint, or drop the entry"
    )
