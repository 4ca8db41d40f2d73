"""A port this machine's processes hold already, that a holder of the run binds here (an eval stage's
SGLang server, the local Ray head's ports, a service): the holder's bind fails when it starts, hours into
a run (`Address already in use`), after the stages before it.

The ledger (`launch.checks.ledger`) judges the run's holders against each other; what else listens on the
machine is probed, as every input of this machine is (`launch.checks.probes`): a bind of the port now.
The answer depends on what runs at that moment, so it is a warning, with the next port up that binds
now and no holder of the run takes as the fix. A server the run calls (and does not start) is meant to
hold its port: not judged.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator, Sequence

from launch.checks.ledger import THIS_MACHINE, Claim
from launch.config.errors import Problem


def bound_port_problems(claims: Sequence[Claim]) -> Iterator[Problem]:
    """A warning per port a holder of the run binds on this machine that another process holds now."""
    taken = {int(c.item) for c in claims if c.kind == "port" and c.host == THIS_MACHINE}
    for claim in claims:
        here = claim.kind == "port" and claim.host == THIS_MACHINE
        if not here or claim.dormant or claim.called or not claim.key:
            continue
        port = int(claim.item)
        if _binds(port):
            continue
        yield Problem(
            claim.key,
            f"{claim.holder} would bind port {port} on this machine, which another process holds now "
            "(its bind fails when the holder starts, after the stages before it)",
            fix=f"set {claim.key}={_free_after(port, taken)}",
            severity="warning",
        )


def _binds(port: int) -> bool:
    """Whether a server could bind `port` on every interface now (SO_REUSEADDR, as servers set it, so a
    port whose last connection is in TIME_WAIT counts as free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError as error:
            return error.errno != errno.EADDRINUSE  # a port only root binds is the ledger's to say
    return True


def _free_after(port: int, taken: set[int]) -> int:
    """The next port up that binds now and no holder of the run takes."""
    candidate = port + 1
    while candidate <= 65535 and (candidate in taken or not _binds(candidate)):
        candidate += 1
    return candidate if candidate <= 65535 else port
