"""One ledger of what a run holds while it runs: ports, GPUs, Ray heads, directories, shared outputs.

Every holder — the local Ray head, an eval stage's SGLang server, a managed service, a stage's
GPUs, a directory t3rl lists or fills — claims its resources here with the config key that set
each one. A claim is held on a host (this machine, or the node of one stage's job) during a window:
one stage while it runs (with its services and its server), or the whole run. The ledger spans
everything that can be up at once: within a run, the claims of one window plus the run-wide ones;
across the points of a sweep run `executor.max_parallel` at a time, every claim of every point on a
host the points share. Two holders of one resource at once is a Problem that names both, blamed on
the key set last, with a free value as the fix. (Shared outputs need no claim: a conversion cache's
directory is keyed by everything that decides its content, and its builders take turns at run time,
`launch.run.pipeline`.)

The ledger counts, too: a GPU listed twice by one holder, or more GPUs than the host has.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from itertools import combinations
from pathlib import Path, PurePosixPath
from typing import Literal, Protocol
from urllib.parse import urlsplit

from launch.checks.declared import fields_declaring
from launch.checks.eval_configs import eval_config_of, eval_key
from launch.config.errors import Problem
from launch.config.schema import EvalStage, LocalExecutorConfig, RunConfig, ServiceConfig
from t3rl_core.eval.config import ServerConfig
from t3rl_core.fields import StrKind
from t3rl_core.records import Record

# Of several config keys, the one set last (`Context.latest`): the likeliest culprit.
Latest = Callable[..., str]
# The Ray head's ports when the executor sets none (the local executor's defaults).
_RAY_PORT = LocalExecutorConfig.model_fields["ray_port"].default
_DASHBOARD_PORT = LocalExecutorConfig.model_fields["dashboard_port"].default


class PlannedStage(Protocol):
    """What the ledger reads of a planned stage (`launch.plan.stages.Stage`; the checks step does not
    import the plan step, which comes after it)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def gpus(self) -> int: ...
    @property
    def needs_ray_head(self) -> bool: ...


class PlannedRun(Protocol):
    """What the ledger reads of a plan (`launch.plan.build.Plan`)."""

    @property
    def stages(self) -> Sequence[PlannedStage]: ...


ResourceKind = Literal["port", "gpus", "ray_head", "tree"]

THIS_MACHINE = "this machine"
# Ports `ray start --head` binds besides the two t3rl sets: the Ray client server's default.
_RAY_CLIENT_PORT = 10001
# Executors whose stages all run on the launcher's machine.
_LOCAL_EXECUTORS = ("local", "dry")


class Claim(Record):
    """One holder's hold on one resource."""

    kind: ResourceKind
    host: str
    # The port number, a GPU id, "" for a Ray head, or a path.
    item: int | str
    # Who holds it, as a person reads it ("the SGLang server of eval stage eval").
    holder: str
    # The config key that sets it; "" when no key does (the fix then moves the other holder).
    key: str
    # The stage during which it is held; None = the whole run.
    window: str | None = None
    # The sweep point holding it ("" in a single run), for messages.
    point: str = ""
    # The key's schema default: what a fix moving this holder proposes first, when it is free.
    default: int | None = None
    # Configured but never bound by this run (the local Ray head's ports in a run without train
    # stages): it still collides within the run, never with another sweep point.
    dormant: bool = False
    # A server the run calls at a URL of this machine, which it does not start: it holds the port for
    # the whole run, and its callers share it (several may call one server).
    called: bool = False

    def who(self) -> str:
        where = f" ({self.point})" if self.point else ""
        set_by = f" [{self.key}]" if self.key else ""
        return f"{self.holder}{where}{set_by}"


class Collision(Record):
    """Two claims that cannot both hold."""

    first: Claim
    second: Claim
    what: str


# ---------------------------------------------------------------------------------------------- claims


def claims_of(run: RunConfig, plan: PlannedRun, point: str = "") -> list[Claim]:
    """Every claim of one run: its Ray head, servers, services, GPU lists, outputs and directories."""
    claims: list[Claim] = []
    claims += _ray_head_claims(run, plan, point)
    for stage in plan.stages:
        host = _host_of(run, stage.kind, stage.name, point)
        spec = run.stages.get(stage.name)
        if isinstance(spec, EvalStage):
            claims += _eval_server_claims(run, stage.name, spec, host, point)
        for service_name, service in run.services.items():
            if service.serves(stage.name, stage.kind):
                claims += _service_claims(service_name, service, stage.name, host, point)
        if stage.gpus and host == THIS_MACHINE:
            claims.append(
                Claim(
                    "gpus",
                    host,
                    stage.gpus,
                    f"stage {stage.name} ({stage.gpus} GPUs)",
                    "",
                    stage.name,
                    point=point,
                )
            )
    claims += _tree_claims(run, point)
    claims += _called_servers(run, point)
    return claims


# The host names that mean the machine a URL is called from.
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "0.0.0.0")


def _called_servers(run: RunConfig, point: str) -> list[Claim]:
    """Every URL of a server the run calls on this machine (fields of a URL kind whose host is a loopback
    name, when every stage runs here): that server holds its port while the run calls it. The URL a
    managed service writes into the env is the service's own claim."""
    if run.executor.kind not in _LOCAL_EXECUTORS:
        return []
    written = {f"env.{s.env_url_key}" for s in run.services.values() if s.env_url_key}
    claims = []
    for key, value, kind in fields_declaring(run, StrKind, skip=frozenset({"executor"})):
        if not isinstance(value, str) or not (kind.name.endswith("URL") or key in written):
            continue
        url = urlsplit(value)
        if key in written or url.hostname not in _LOOPBACK:
            continue
        port = url.port or (443 if url.scheme == "https" else 80)
        claims.append(
            Claim(
                "port", THIS_MACHINE, port, f"the server {key} calls ({value})", key, point=point, called=True
            )
        )
    return claims


def _host_of(run: RunConfig, kind: str, stage: str, point: str) -> str:
    """Where a stage's commands (and its services and server) run."""
    executor = run.executor
    if executor.kind in _LOCAL_EXECUTORS:
        return THIS_MACHINE
    if executor.kind == "ray" and kind != "train" and executor.other_stages == "local":
        return THIS_MACHINE
    return f"the node of stage {stage}" + (f" of {point}" if point else "")


def _ray_head_claims(run: RunConfig, plan: PlannedRun, point: str) -> list[Claim]:
    """The local executor's Ray head, up around train stages on this machine: claimed run-wide and by
    every run of the executor, as a head left by a failed `ray stop`, or a user's own head on these
    ports, holds them all the same."""
    if run.executor.kind == "slurm":
        return _job_ray_head_claims(run, plan, point)
    if run.executor.kind not in _LOCAL_EXECUTORS:
        return []
    port = getattr(run.executor, "ray_port", _RAY_PORT)
    dashboard = getattr(run.executor, "dashboard_port", _DASHBOARD_PORT)
    holder = "the local Ray head"
    # Points that never start it do not share it (their ports stay claimed: see above).
    train = any(s.needs_ray_head for s in plan.stages)
    return [
        Claim(
            "port",
            THIS_MACHINE,
            port,
            f"{holder} (GCS)",
            "executor.ray_port",
            point=point,
            default=_RAY_PORT,
            dormant=not train,
        ),
        Claim(
            "port",
            THIS_MACHINE,
            dashboard,
            f"{holder} (dashboard, jobs API)",
            "executor.dashboard_port",
            point=point,
            default=_DASHBOARD_PORT,
            dormant=not train,
        ),
        Claim(
            "port",
            THIS_MACHINE,
            _RAY_CLIENT_PORT,
            f"{holder} (client server)",
            "",
            point=point,
            dormant=not train,
        ),
        *([Claim("ray_head", THIS_MACHINE, "", holder, "executor", point=point)] if train else []),
    ]


def _job_ray_head_claims(run: RunConfig, plan: PlannedRun, point: str) -> list[Claim]:
    """Under SLURM, each job that needs Ray starts a head on its first node while its stage runs."""
    executor = run.executor
    claims = []
    for stage in plan.stages:
        if not stage.needs_ray_head:
            continue
        host = _host_of(run, stage.kind, stage.name, point)
        holder = f"the Ray head of stage {stage.name}'s job"
        ports = (
            (getattr(executor, "ray_port", _RAY_PORT), "GCS", "executor.ray_port", _RAY_PORT),
            (
                getattr(executor, "dashboard_port", _DASHBOARD_PORT),
                "dashboard, jobs API",
                "executor.dashboard_port",
                _DASHBOARD_PORT,
            ),
            (_RAY_CLIENT_PORT, "client server", "", None),
        )
        claims += [
            Claim("port", host, port, f"{holder} ({what})", key, stage.name, point=point, default=default)
            for port, what, key, default in ports
        ]
    return claims


def _eval_server_claims(run: RunConfig, name: str, spec: EvalStage, host: str, point: str) -> list[Claim]:
    config = eval_config_of(run, spec)
    if config is None or config.engine.name != "sglang" or getattr(config.engine, "url", None) is not None:
        return []
    key = eval_key(name, spec.eval, "server.port")
    holder = f"the SGLang server of eval stage {name}"
    default = ServerConfig.model_fields["port"].default
    return [Claim("port", host, config.server.port, holder, key, name, point=point, default=default)]


def _service_claims(name: str, service: ServiceConfig, stage: str, host: str, point: str) -> list[Claim]:
    key = f"services.{name}"
    holder = f"service {name}"
    default = ServiceConfig.model_fields["port"].default
    return [Claim("port", host, service.port, holder, f"{key}.port", stage, point=point, default=default)]


def _tree_claims(run: RunConfig, point: str) -> list[Claim]:
    """Directories t3rl lists (each child a run or a plan): nothing else may live inside them. Every
    other directory t3rl writes (a field of the kind OutputDir something reads: tracking.dir, submitit's
    executor.folder) claims its tree too, so that its files are never taken for runs or plans."""
    # lazy: launch.checks.rules imports launch.checks.probes, which imports this module
    from launch.checks.rules.local_dirs import fields_of_kind

    paths = run.paths
    trees = {
        "paths.runs_dir": (paths.runs_dir, "the runs t3rl lists"),
        "paths.plans_dir": (paths.plans_dir, "the plans t3rl writes"),
        "paths.checkpoints_dir": (paths.checkpoints_dir, "the conversion cache"),
        "paths.models_dir": (paths.models_dir, "the HF models"),
        "paths.cache_dir": (paths.cache_dir, "the prepared-data and tiny-model cache"),
    }
    for key, value, _ in fields_of_kind(run, "output dir"):
        trees.setdefault(key, (value, f"the files {key} names"))
    return [Claim("tree", "", _normal(path), what, key, point=point) for key, (path, what) in trees.items()]


def _normal(path: str) -> str:
    return str(Path(path).expanduser().absolute())


# ------------------------------------------------------------------------------------------- collisions

# Trees whose every child t3rl takes for one of its own records: another tree may not overlap them.
_LISTED_TREES = ("paths.runs_dir", "paths.plans_dir")


def collisions(claims: Sequence[Claim], concurrent_points: bool = False) -> list[Collision]:
    """Pairs of claims that cannot hold at once. Claims of different sweep points overlap in time only
    when `concurrent_points` (they run at once); within one point, a stage's claims overlap those of
    the same stage and the run-wide ones."""
    found: list[Collision] = []
    for a, b in combinations(claims, 2):
        if a.point != b.point and (not concurrent_points or a.dormant or b.dormant):
            continue
        if a.kind != b.kind or a.host != b.host:
            continue
        if a.point == b.point and a.window is not None and b.window is not None and a.window != b.window:
            continue
        what = _conflict(a, b)
        if what:
            found.append(Collision(a, b, what))
    return found


def _conflict(a: Claim, b: Claim) -> str:
    if a.called and b.called:
        return ""
    if a.kind == "port" and a.item == b.item and (a.holder, a.key) != (b.holder, b.key):
        return f"port {a.item} of {a.host}"
    if a.kind == "port" and a.item == b.item and a.point != b.point:
        return f"port {a.item} of {a.host}"
    if a.kind in ("ray_head", "gpus") and a.point != b.point:
        return f"the {'GPUs' if a.kind == 'gpus' else 'Ray head'} of {a.host}"
    if a.kind == "tree" and a.point == b.point and (a.key in _LISTED_TREES or b.key in _LISTED_TREES):
        pa, pb = PurePosixPath(str(a.item)), PurePosixPath(str(b.item))
        if pa == pb or pa in pb.parents or pb in pa.parents:
            return f"the directory {a.item if len(str(a.item)) >= len(str(b.item)) else b.item}"
    return ""


def duplicate_gpus(run: RunConfig) -> Iterator[Problem]:
    """A GPU listed twice by one holder is one GPU counted twice."""
    for name, service in run.services.items():
        repeated = sorted({g for g in service.gpus if service.gpus.count(g) > 1})
        if repeated:
            unique = list(dict.fromkeys(service.gpus))
            # the next ids above those listed: below them are the ones the user moved the server off
            free = list(range(max(unique) + 1, max(unique) + 1 + len(service.gpus)))
            fixed = sorted(unique + free[: len(service.gpus) - len(unique)])
            yield Problem(
                f"services.{name}.gpus",
                f"GPU(s) {repeated} listed more than once: a tp {service.tp} server needs "
                f"{service.tp} distinct GPUs",
                fix=f"set services.{name}.gpus=[{','.join(map(str, fixed))}]",
            )


# -------------------------------------------------------------------------------------------- problems


def sweep_problems(
    points: Sequence[tuple[str, RunConfig, PlannedRun]], max_parallel: int | None
) -> list[Problem]:
    """What points of a sweep would hold at once on a host they share (`executor.max_parallel` at a time;
    None = all): one Problem naming the first two points that collide and everything they share."""
    if len(points) < 2 or max_parallel == 1:
        return []
    claims = [c for label, run, plan in points for c in claims_of(run, plan, point=label)]
    shared: dict[tuple[str, str], list[str]] = {}
    for collision in collisions(claims, concurrent_points=True):
        a, b = collision.first, collision.second
        if a.point != b.point and collision.what not in shared.setdefault((a.point, b.point), []):
            shared[(a.point, b.point)].append(collision.what)
    if not shared:
        return []
    (first, second), what = next(iter(shared.items()))
    more = f" ({len(shared) - 1} more pair(s) of points likewise)" if len(shared) > 1 else ""
    return [
        Problem(
            "executor.max_parallel",
            f"sweep points {first} and {second} would run at once and both hold {', '.join(what)}{more}",
            fix="set executor.max_parallel=1 (one point at a time on this machine), or executor=slurm "
            "(each point its own nodes)",
        )
    ]


def ledger_problems(
    claims: Sequence[Claim], latest: Latest, concurrent_points: bool = False
) -> list[Problem]:
    """Each collision as a Problem on the key set last, with a free value where a value moves it."""
    taken_ports = {(c.host, c.item) for c in claims if c.kind == "port"}
    return [_problem(c, latest, taken_ports) for c in collisions(claims, concurrent_points)]


def first_unprivileged_port() -> int:
    """The lowest port a process of this user may bind on this machine (0: any): root binds any, Linux
    keeps the ports below net.ipv4.ip_unprivileged_port_start (1024, or 0 in many containers) to
    root, other systems restrict none."""
    if os.geteuid() == 0 or not sys.platform.startswith("linux"):
        return 0
    try:
        return int(Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text())
    except (OSError, ValueError):
        return 1024


def privileged_port_problems(claims: Sequence[Claim], first_unprivileged: int) -> list[Problem]:
    """A port below `first_unprivileged` that a holder binds on this machine: the bind fails when the
    holder starts, hours into a run."""
    taken = {(c.host, c.item) for c in claims if c.kind == "port"}
    return [
        Problem(
            c.key,
            f"{c.holder} would bind port {c.item} on this machine, where only root may bind a port "
            f"below {first_unprivileged}",
            fix=f"set {c.key}={_free_port(_moved_up(c, first_unprivileged), taken)}",
        )
        for c in claims
        if c.kind == "port" and c.key and c.host == THIS_MACHINE and not c.dormant and not c.called
        and int(c.item) < first_unprivileged
    ]  # fmt: skip


def _moved_up(claim: Claim, first: int) -> Claim:
    """The claim at its default when that one may be bound, else at the first port that may."""
    default = claim.default if claim.default is not None and claim.default >= first else None
    return claim._replace(item=max(first, 1024), default=default)


def _problem(collision: Collision, latest: Latest, taken: set[tuple[str, int | str]]) -> Problem:
    a, b = collision.first, collision.second
    message = f"{collision.what} is held by both {a.who()} and {b.who()}"
    bound = [c for c in (a, b) if c.key and c.kind == "port" and not c.called]
    movable = [c for c in bound if not c.key.startswith("executor")]
    keyed = [c for c in (a, b) if c.key]
    if a.kind == "port":
        called = [c for c in (a, b) if c.called]
        # a server the run calls is not moved by a fix (the URL names a server that is up already): the
        # holder that binds moves, the Ray head's ports too; the problem is on the key set last
        candidates = (movable or bound) if called else (movable or keyed)
        blamed = _blame(candidates, latest) if candidates else b
        port = _free_port(blamed, taken)
        key = _blame(keyed, latest).key if called else blamed.key or b.key
        what = (
            "a server the run calls, and does not start, listens there, so the other cannot bind it"
            if called
            else "one of them would fail to bind it"
        )
        return Problem(
            key, f"{message}: {what}", fix=f"set {blamed.key}={port} (a port nothing else of the run holds)"
        )
    if a.kind == "tree":
        listed = a if a.key in _LISTED_TREES else b
        other = b if listed is a else a
        blamed = _blame([a, b], latest)
        fixed = _outside(other if blamed is other else listed, listed if blamed is other else other)
        return Problem(
            blamed.key,
            f"{message}: t3rl takes every entry of {listed.key} for one of its own records",
            fix=f"set {blamed.key}={fixed}",
        )
    return Problem(keyed[0].key if keyed else "", message, fix="make them differ")


def _blame(claims: Sequence[Claim], latest: Latest) -> Claim:
    by_key = {c.key: c for c in claims}
    return by_key[latest(*by_key)]


def _free_port(claim: Claim, taken: set[tuple[str, int | str]]) -> int:
    """The claim's default port when nothing holds it, else the next port up that nothing holds."""
    reserved = {_RAY_PORT, _DASHBOARD_PORT, _RAY_CLIENT_PORT}
    if claim.default is not None and (claim.host, claim.default) not in taken:
        return claim.default
    port = int(claim.item)
    while (claim.host, port) in taken or port in reserved:
        port = port + 1 if port < 65535 else 1024
    return port


def _outside(moved: Claim, fixed: Claim) -> str:
    """A directory for `moved` beside `fixed`'s tree, not inside or above it."""
    base = PurePosixPath(str(fixed.item))
    parts = moved.key.split(".")
    # `tracking.dir` is named by its section, `paths.cache_dir` by its field
    name = parts[-2] if parts[-1] == "dir" and len(parts) > 1 else parts[-1].removesuffix("_dir")
    return str(base.parent / f"{base.name}-{name}" if base.name else base / name)
