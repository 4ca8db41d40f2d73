"""Episode databases copied record by record on read, and hashed from the shared records' JSON texts:
the shared database never changes, and every hash is tau2's own, byte for byte."""

from __future__ import annotations

import pytest

from t3rl_core.envs.tau2.evaluation import domain_world
from t3rl_core.envs.tau2.lazy_db import LazyTable, TableFragments, lazy_copy


def _tau2_hash(database) -> str:
    from tau2.utils import get_dict_hash

    return get_dict_hash(database.model_dump())


@pytest.fixture(scope="module")
def retail():
    world = domain_world("retail")
    shared = world._databases[0]
    return shared, TableFragments(shared), _tau2_hash(shared)


def test_every_way_of_reading_a_record_hands_out_a_private_copy(retail):
    shared, _, pristine = retail
    db = lazy_copy(shared)
    orders: LazyTable = db.orders
    key = next(iter(orders))
    reads = [
        lambda: orders[key],
        lambda: orders.get(key),
        lambda: orders.setdefault(key, None),
        lambda: next(iter(orders.values())),
        lambda: next(iter(orders.items()))[1],
        lambda: dict(orders)[key],
        lambda: {**orders}[key],
        lambda: (orders | {})[key],
        lambda: orders.copy()[key],
        lambda: orders.pop(key),
    ]
    for read in reads:
        record = read()
        assert record is not shared.orders[key]
        record.status = "changed by the episode"
    assert _tau2_hash(shared) == pristine  # the shared database is as parsed


@pytest.mark.parametrize("domain", ["retail", "airline", "telecom"])
def test_hashes_are_tau2s_on_pristine_and_changed_databases(base_rows, factory, play, domain):
    world = domain_world(domain)
    for row in list(base_rows[domain].values())[:3]:
        env = factory(row, "eval")
        play(env, lambda env: env.oracle())
        environment = env._env
        hashes = world.database_hashes(environment)
        assert hashes == (environment.get_db_hash(), environment.get_user_db_hash())
    pristine = world.environment()
    assert world.database_hashes(pristine) == (pristine.get_db_hash(), pristine.get_user_db_hash())


def test_a_changed_record_is_serialised_again_even_when_it_compares_equal(retail):
    """533.0 becomes 533 (equal in Python, not in JSON): the hash follows tau2's text, not Python's ==."""
    shared, fragments, pristine = retail
    db = lazy_copy(shared)
    assert fragments.hash(db) == pristine
    key, index = next(
        (key, i)
        for key, order in shared.orders.items()
        for i, payment in enumerate(order.payment_history)
        if payment.amount.is_integer()
    )
    payment = db.orders[key].payment_history[index]
    payment.amount = int(payment.amount)
    assert db.orders[key] == shared.orders[key]  # pydantic's == cannot tell
    assert fragments.hash(db) == _tau2_hash(db) != pristine
    db.orders["#new"] = db.orders[key].model_copy(update={"order_id": "#new"})
    del db.orders[key]
    assert fragments.hash(db) == _tau2_hash(db)
