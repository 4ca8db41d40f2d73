"""The tau2 functions whose scans of a table (`values()`, `items()`) only read the records they pass.

A `LazyTable` copies a record before handing it out, so an episode can never change the domain's
shared database. A scan hands out every record: tau2 airline's flight search scans all flights on
every call, and copying them all was most of a fresh airline episode's CPU. The functions below were
read (tau2's installed source) and only read what they scan: they compare fields and return strings
or new result models; airline's `DirectFlight` results hold the flight's shared `SeatPrices` and
`AvailableSeats` models, which tau2's `get_response` only serialises (`to_json_str`) and the gold
replay drops. A scan called from one of them yields the shared records as they are.

Each entry names the function by module and qualified name and holds the sha256 (first 16 hex digits)
of its source as read: a tau2 whose function differs from the one read is not trusted, and its scans
copy as every other scan does (`tests/envs/tau2/test_lazy_scans.py` checks the fingerprints still
match the installed tau2, so the gain is not lost silently either).
"""

from __future__ import annotations

import hashlib
import inspect
import threading
from types import CodeType

READ_ONLY_SCANS: dict[tuple[str, str], str] = {
    ("tau2.domains.airline.tools", "AirlineTools._search_direct_flight"): "0dbc9aa93c62546c",
    ("tau2.domains.retail.tools", "RetailTools.find_user_id_by_name_zip"): "a64f52ce7d521927",
    ("tau2.domains.retail.tools", "RetailTools.find_user_id_by_email"): "101f4db3a89e2e29",
    ("tau2.domains.retail.tools", "RetailTools.list_all_product_types"): "fc1a2e8be108af83",
}

_verdicts: dict[CodeType, bool] = {}  # per code object: whether it is a declared scan as read
_lock = threading.Lock()


def source_fingerprint(code: CodeType) -> str | None:
    """The first 16 hex digits of the sha256 of a function's source; None when it cannot be read."""
    try:
        source = inspect.getsource(code)
    except (OSError, TypeError):
        return None
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def reads_only(code: CodeType, module: str | None) -> bool:
    """Whether the function running `code` (defined in `module`) is a declared read-only scan whose
    source is the one read."""
    verdict = _verdicts.get(code)
    if verdict is None:
        expected = READ_ONLY_SCANS.get((module or "", code.co_qualname))
        verdict = expected is not None and source_fingerprint(code) == expected
        with _lock:
            _verdicts[code] = verdict
    return verdict
