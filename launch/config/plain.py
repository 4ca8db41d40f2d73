"""A composed config as the validators take it (`Plain`), and what its composition read besides its
files (`Reads`): what the direct composition, Hydra's and the composition cache each give."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from launch.config.provenance import Provenance
from t3rl_core.records import Record


class Plain(Record):
    """A composed config with interpolations resolved, as the validators take it."""

    data: dict[str, Any]
    provenance: Provenance
    # Hydra's own node (sweeper settings); empty unless hydra/* or hparams_search was used (or the
    # primary config sets it). A `DeferredHydra` where the direct composition left it out.
    hydra: Mapping[str, Any]


class Reads:
    """What a composition read besides its files: environment variables, and any impure resolver."""

    # A plain class, not a dataclass: every cold command imports this module, and a dataclass compiles
    # its methods from text as its class is created (~2 M instructions).
    def __init__(self) -> None:
        self.env: dict[str, str | None] = {}
        self.impure: set[str] = set()
        # Composed by Hydra (not `launch.config.direct`): its entry is stored at once (see `first_sight`).
        self.by_hydra = False
