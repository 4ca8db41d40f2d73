"""The declared domain of every config field: what a number may be, what a string denotes.

Numbers: every float is finite (`StrictModel` sets `allow_inf_nan=False`, which also refuses the
strings "inf" and "nan"), and every numeric field states its bound or range where it is defined, with
pydantic's constraints (`Field(gt=…)`) or one of the named domains below; an order between two fields
of one model is declared on the later one (`AtLeast`, `AtMost`, `Above`, `Below`).

Strings: a str field says what it denotes by its type, one of the kinds below (or a Literal, a declared
choice). Each kind carries a `StrKind` marker, which the schema audit and the docs read, and a cheap
syntactic check: no I/O and no imports, since resolving what a value names is pre-flight's work. A
value stays a plain `str` once validated (consumers join, quote and print them as text), so the check
is an after-validator (`Check`) and its error pydantic's `value_error` with the reason. A check that knows the
value that was meant raises `Corrected`: launch prints it as the fix, `set <key>=<corrected>`.
"""

from __future__ import annotations

import math
import operator
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic_core import core_schema

from t3rl_core.counts import counted
from t3rl_core.records import Record

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler, ValidationInfo


# The markers are immutable records (t3rl_core.records) rather than frozen dataclasses: a command imports
# this module at start-up, and a frozen dataclass's methods are compiled from text when its class is
# created (~3 M instructions each, a Record ~0.15 M). They are told apart by isinstance, never compared.
class Domain(Record):
    """The name of a numeric domain; its bounds are the constraints beside it in the type, and values
    inside them that mean nothing are `excluded` (refused by `refuse_excluded`)."""

    name: str
    description: str
    excluded: tuple[float, ...] = ()

    def refuse_excluded(self, value: float) -> float:
        if value in self.excluded:
            raise ValueError(f"{value} means nothing here: {self.description}")
        return value


class Usual(Record):
    """Values of a numeric domain above `most` are valid but almost never meant (50 typed for 0.5):
    pre-flight warns about them (`launch/checks/rules/usual.py`), proposing `typical`; it refuses only
    what a domain's bounds exclude. A type may declare a floor too: a value below `least` (a timeout of
    1 ms) is warned about, with `least` as the fix and `least_why` as the reason."""

    most: float
    typical: float
    why: str
    # A value above `most` is likeliest this many times the one meant (1000: milliseconds typed for
    # seconds): the fix divides by it when that lands in the usual range. None: the fix is `typical`.
    scale: float | None = None
    # None: no floor declared (every timeout declares one: tests/launch/test_preflight_hunt_wave4.py).
    least: float | None = None
    least_why: str = ""


class Distinct(Record):
    """A list that is a set: each item once. A repeat is never needed, and more likely a typo for another
    item; pre-flight refuses it with the list of distinct items (`launch/checks/rules/distinct.py`), unless
    `by` names the check that refuses a repeat with a fix knowing more (the ledger's, for a server's GPUs).
    Two items are one when their `identity` is (`what` names it): an sbatch option given twice with two
    values (sbatch keeps the last), two mounts onto one destination (the last hides the first)."""

    by: str | None = None
    identity: Callable[[Any], Any] | None = None
    what: str = ""


class Repeats(Record):
    """A list whose items may repeat, and `why` a repeat means something (a command line's tokens, a
    script's lines, one entry per layer): every other list field of a config declares itself a set
    (`Distinct`), or is a list of choices, which pre-flight refuses repeated (launch/checks/rules/kinds.py).
    The schema audit (tests/launch/test_preflight_unlisted_kinds_twelve.py) holds every list field to one."""

    why: str


class TokensOf(Record):
    """A budget of tokens per call of the model a sibling field names (`served`: a served model name, a
    hub id). Pre-flight compares it with that model's context where a model option of t3rl declares the
    model (launch/checks/rules/served_context.py): a budget the context cannot hold with a prompt makes the
    server refuse every request."""

    served: str


class ReadWhen(Record):
    """A field read only while a sibling field of its model holds one of `values` (none given: any value
    but None): otherwise nothing reads it, and a value set there does nothing. Pre-flight warns about
    one typed on the command line, and points of a sweep that differ only there are one run
    (`launch/checks/rules/unread.py`). `why` completes "… is set, but <sibling> is <value>: ".
    """

    sibling: str
    values: tuple[Any, ...]
    why: str

    def reads(self, sibling_value: Any) -> bool:
        return sibling_value is not None if not self.values else sibling_value in self.values


class DockerRun(Record):
    """An image the Docker daemon of the machine that builds the world runs (`docker run`): pre-flight
    probes that daemon over its local socket when the stages start here (launch/checks/docker_probe.py).
    `instead`: sibling settings that replace the image (its server given by URL), the fix when no daemon
    answers; `port`: the port the image serves on, for the `docker run -p` the fix explains."""

    instead: tuple[tuple[str, str], ...]
    port: int


class StrKind(Record):
    """What a str field denotes (a path, a URL, an env-var name, …), for the schema audit and the docs."""

    name: str
    description: str


class Check(Record):
    """`check(value)` after the type's own validation: pydantic's AfterValidator for a check that takes
    the value alone, said so here rather than found out by pydantic, which reads the signature of an
    AfterValidator's function at every field that uses it (~70 K instructions each, ~100 fields in a
    run's validator, built by every cold plan and validate)."""

    check: Callable[[Any], Any]

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))


class Corrected(ValueError):
    """A refused value whose intended form is known: `value` is what the field should be set to."""

    def __init__(self, message: str, value: str) -> None:
        super().__init__(f"{message}; use {value}")
        self.value = value


class Reread(Corrected):
    """A refused value that says what was meant in another form (`2h` for a SLURM time): `value` is the
    same value as the field takes it, so it is the first fix (a spelling cleaned up may name another)."""


# ------------------------------------------------------------------------------------------ numbers


PositiveInt = Annotated[int, Domain("positive integer", "a whole number >= 1"), Ge(1)]
NonNegativeInt = Annotated[int, Domain("non-negative integer", "a whole number >= 0"), Ge(0)]
PositiveFloat = Annotated[float, Domain("positive real", "a finite number > 0"), Gt(0)]
NonNegativeFloat = Annotated[float, Domain("non-negative real", "a finite number >= 0"), Ge(0)]
Probability = Annotated[float, Domain("probability", "a number in [0, 1]"), Ge(0), Le(1)]
# numpy, torch and datasets take seeds in [0, 2**32).
Seed = Annotated[int, Domain("seed", "a whole number in [0, 2**32)"), Ge(0), Lt(2**32)]
Port = Annotated[int, Domain("port", "a TCP port in [1, 65535]"), Ge(1), Le(65535)]
# The longest wait Python's clock takes (threading.TIMEOUT_MAX: int64 nanoseconds, ~292 years): a longer
# timeout or delay raises OverflowError at the first sleep, lock or socket wait that is given it.
MAX_WAIT_S = 9_223_372_036.0
# A timeout of more than a day is milliseconds typed for seconds (600000 for 600), never a plan; one of
# less than a second (0.001) is a limit nothing t3rl waits for meets: a generation, a code cell (its
# interpreter's start and imports alone take tens of milliseconds, a loaded machine's more), a reply.
_A_DAY = "a day: no request, start-up or code cell is waited for longer"
SECONDS_USUAL = Usual(
    86400.0,
    600.0,
    _A_DAY,
    scale=1000.0,
    least=1.0,
    least_why="no request or code cell answers surely sooner: it is cut off before it ends",
)
Seconds = Annotated[
    float, Domain("seconds", "a duration > 0 (a timeout or a limit)"), Gt(0), Le(MAX_WAIT_S), SECONDS_USUAL
]
# A wait for something to start: a server loading a model's weights and capturing CUDA graphs, a Ray
# cluster's GPUs registering, a container booting. Under 10 s it is cut off while it starts.
STARTUP_USUAL = SECONDS_USUAL._replace(
    least=10.0,
    least_why="a server, container or Ray cluster takes longer to start (weights, CUDA graphs): cut off",
)
StartupSeconds = Annotated[
    float, Domain("seconds", "a duration > 0 (a timeout or a limit)"), Gt(0), Le(MAX_WAIT_S), STARTUP_USUAL
]
# Tokens one model call may generate (its max_new_tokens): fewer than 16 hold neither a tool call's tags
# and name nor a sentence of a reply, so every call is cut before it ends (an RL stage trains on cut-off
# calls alone, an eval scores none); 8 is likelier 8k typed short. A tiny random model's smoke run keeps
# 16 (quickstart). The ceiling is no model's context; each model's own is compared by the length rules.
CALL_TOKENS = Usual(
    16_777_216.0,
    4096.0,
    "no model's context holds 16M tokens",
    least=16.0,
    least_why="a tool call's tags and name, or a sentence of a reply, take more: each call is cut short",
)
Delay = Annotated[
    float,
    Domain("delay", "a wait in seconds >= 0 (0 = none)"),
    Ge(0),
    Le(MAX_WAIT_S),
    # no floor: any wait down to none is a choice (a retry at once, a kill without grace)
    Usual(86400.0, 1.0, "a day: no retry or shutdown waits longer", scale=1000.0, least=0.0),
]
# GPUs of one node (what a node has, a server's TP ranks, which run on one node): NCCL, which joins a
# node's ranks (a server's TP, a node's training ranks), takes at most 72 of one host (its
# NCCL_MAX_LOCAL_RANKS, an NVL72 rack's NVLink domain; 64 in older NCCL), so more is no node anything
# runs on. Above 16 is valid but warned about (NODE_GPUS): no server board holds more.
MOST_NODE_GPUS = 72
NODE_GPUS = Usual(16, 8, "no server board holds more than 16 GPUs (DGX-2, HGX-2); most hold 8")
NodeGpus = Annotated[
    int,
    Domain("GPUs of one node", f"a count of one node's GPUs in [1, {MOST_NODE_GPUS}]"),
    Ge(1),
    Le(MOST_NODE_GPUS),
    NODE_GPUS,
]
# A CUDA device index of one node: below the most GPUs a node has.
GpuId = Annotated[
    int, Domain("GPU id", f"a CUDA device index in [0, {MOST_NODE_GPUS})"), Ge(0), Lt(MOST_NODE_GPUS)
]
# A POSIX user or group id a process drops its privileges to (not root's 0): uid_t and gid_t are 32-bit
# unsigned, and 2**32 - 1 is (uid_t) -1, which setresuid/setresgid read as "leave unchanged": a cell
# given it, or anything larger, would fail to drop its privileges at start-up, after the run began.
UnprivilegedId = Annotated[
    int, Domain("POSIX id", "a uid or gid in [1, 2**32 - 1), not root's 0"), Ge(1), Lt(2**32 - 1)
]
# slime's and SGLang's spelling of "off" for a size: -1, never 0.
_OFF_OR_POSITIVE = Domain("-1 or positive", "-1 turns it off, else a whole number >= 1", excluded=(0,))
OffOrPositiveInt = Annotated[int, _OFF_OR_POSITIVE, Ge(-1), Check(_OFF_OR_POSITIVE.refuse_excluded)]
# SGLang's top_k: -1 (off) reads as 1 << 30, the whole vocabulary, and a batch holds top_k in an int32
# tensor: more than 2**30 is no top-k a sampler has (past 2**31 - 1 the batch fails to build).
TopK = Annotated[int, _OFF_OR_POSITIVE, Ge(-1), Le(2**30), Check(_OFF_OR_POSITIVE.refuse_excluded)]
# A sampling temperature: SGLang and vLLM take any value >= 0; OpenAI's chat API refuses more than 2.
Temperature = Annotated[
    float,
    Domain("temperature", "a sampling temperature >= 0 (0 = greedy)"),
    Ge(0),
    Usual(
        2.0,
        1.0,
        "OpenAI's chat API refuses more than 2, and above it an LLM's next-token distribution flattens "
        "toward noise over the whole vocabulary",
    ),
]
# A learning rate: an Adam step moves each weight by about lr, and an LLM's weights are ~1e-2, so 1 or more
# is a typo (1e6 for 1e-6), never a schedule; and below 1e-10 a step is under half the float32 spacing of
# such a weight (2**-31, 4.7e-10), which Megatron's float32 main weights round away: nothing would train.
# Above 1e-2 no LLM trains (RL fine-tunes at ~1e-6, SFT at ~1e-5, pre-training at most a few 1e-3): valid
# for Adam, so a warning with the typical value as the fix.
LearningRate = Annotated[
    float,
    Domain("learning rate", "a step size in [1e-10, 1)"),
    Ge(1e-10),
    Lt(1),
    Usual(
        1e-2, 1e-6, "an LLM's weights diverge above it: RL fine-tunes at ~1e-6, pre-training at a few 1e-3"
    ),
]
# AdamW's decoupled weight decay is a fraction of lr × weight taken off a step, 0.01 to 0.1 for LLMs: above
# 1 it is a percent typed for a fraction (10 for 0.1).
WEIGHT_DECAY = Usual(1.0, 0.01, "AdamW's decay of LLMs is 0.01 to 0.1, a fraction not a percent", scale=100.0)
# The smallest normal float32 (bfloat16 has the same exponent range), the formats the trainer and SGLang
# compute in: a nonzero setting smaller in size is 0 (or a subnormal) there, so it is 0 in disguise or a
# typo (1e-300, 5e-324), never a value meant. Every float of every config is judged against it where the
# numbers written are (launch/config/schema_errors.numbers_misread), as every float is finite.
FLOAT32_TINY = 2.0**-126
# A real with no natural bound, deliberately (e.g. a reward's range); finite like every float.
FiniteReal = Annotated[float, Domain("real", "any finite number (deliberately unbounded)")]

Relation = Literal[">=", ">", "<=", "<", "!="]
HOLDS: dict[str, Callable[[Any, Any], bool]] = {
    "!=": operator.ne,
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}


class OutOfOrder(ValueError):
    """A field breaks its declared order with an earlier field of the same model."""

    def __init__(self, relation: Relation, other: str, other_value: object) -> None:
        super().__init__(f"must be {relation} {other} ({other_value})")
        self.relation, self.other, self.other_value = relation, other, other_value


class Ordered(Record):
    """This field stands in `relation` to the earlier field `other` of its model (when both are set).

    Declared on the later of the two fields, which is the one validated with the other's value at
    hand; the schema audit checks that `other` comes first."""

    relation: Relation
    other: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.with_info_after_validator_function(self._check, handler(source))

    def _check(self, value: Any, info: ValidationInfo) -> Any:
        other = info.data.get(self.other)
        if value is None or other is None or HOLDS[self.relation](value, other):
            return value
        raise OutOfOrder(self.relation, self.other, other)


def AtLeast(other: str) -> Ordered:
    return Ordered(">=", other)


def AtMost(other: str) -> Ordered:
    return Ordered("<=", other)


def Above(other: str) -> Ordered:
    return Ordered(">", other)


def Below(other: str) -> Ordered:
    return Ordered("<", other)


def Differs(other: str) -> Ordered:
    """Not the value of `other`: two settings naming one thing where two are meant (the column of the
    questions given as that of the answers, which would hand the model its answer)."""
    return Ordered("!=", other)


class NamesNothing(ValueError):
    """A field names no item of the earlier list field it refers to."""

    def __init__(self, other: str, attr: str, names: list[Any]) -> None:
        super().__init__(f"names none of the {other}' {attr}s: {names}")
        self.other, self.attr, self.names = other, attr, names


class NamesItem(Record):
    """This field names one item of the earlier list field `other` by that item's `attr` (when set): a
    reference inside one section (a published target is one result's label). Two files may set the two
    (an experiment its target, a `published` option the results), so the reference is declared on the
    field and judged where the section is validated, the blame going to the one set last."""

    other: str
    attr: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.with_info_after_validator_function(self._check, handler(source))

    def _check(self, value: Any, info: ValidationInfo) -> Any:
        items = info.data.get(self.other)
        if value is None or items is None:  # unset, or the list itself refused
            return value
        names = [getattr(item, self.attr) for item in items]
        if value in names:
            return value
        raise NamesNothing(self.other, self.attr, names)


# ------------------------------------------------------------------------------------------ strings
# Patterns are compiled on first use (re's own cache), not at import: most kinds a command never checks.


def _matching(pattern: str, message: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not re.match(pattern, value):
            raise ValueError(message)
        return value

    return check


def _trimmed(what: str) -> Callable[[str], str]:
    """Non-empty, no white space at either end (a pasted value's stray space is never meant)."""

    def check(value: str) -> str:
        if not value.strip():
            raise ValueError(f"{what} must not be empty")
        if value != value.strip():
            raise Corrected(f"{what} has white space at an end", value.strip())
        return value

    return check


def _no_space(what: str, example: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not value or any(c.isspace() for c in value):
            raise ValueError(f"{what} is one word without white space, e.g. {example}")
        return value

    return check


def _no_nul(what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if "\0" in value:
            raise ValueError(f"{what} cannot contain a NUL character")
        return value

    return check


_trimmed_path = _trimmed("a path")
# Bytes of one name and of a whole path the kernel takes (Linux's NAME_MAX, and PATH_MAX with its NUL): a
# longer value names no file anywhere, and probing it (os.stat) raised ENAMETOOLONG out of the pre-flight.
_NAME_MAX, _PATH_MAX = 255, 4095


def _fits_file_systems(what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        size = len(value.encode())
        if size > _PATH_MAX:
            raise ValueError(f"{what} of {size} bytes: no file system takes a path longer than {_PATH_MAX}")
        name = max(value.split("/"), key=lambda part: len(part.encode()))
        if len(name.encode()) > _NAME_MAX:
            raise ValueError(
                f"{what} with a name of {counted(len(name.encode()), 'byte')} ({name[:24]}…): no file "
                "system takes a "
                f"name longer than {_NAME_MAX}"
            )
        return value

    return check


_path_fits = _fits_file_systems("a path")


# A shell variable in a path: nothing between the config and the file system expands it (no shell reads
# a config file, and t3rl passes paths quoted), so `$SCRATCH/runs` would be a directory named `$SCRATCH`.
_SHELL_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def _expanded(value: str) -> str:
    if _SHELL_VARIABLE.search(value):
        raise Corrected(
            "holds a shell variable, which nothing expands here: the config reads the environment with "
            "${oc.env:NAME}",
            _SHELL_VARIABLE.sub(lambda m: "${oc.env:" + (m[1] or m[2]) + "}", value),
        )
    return value


def _path(value: str) -> str:
    return _path_fits(_trimmed_path(_expanded(_no_nul("a path")(value))))


def _absolute(value: str) -> str:
    if not _expanded(value).startswith("/"):
        raise ValueError("must be an absolute path on the cluster (it is read there, not here)")
    return _path(value)


_PATH_COMPONENT = r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$"


# Bytes of a name t3rl makes a directory of: file systems take 255, and t3rl adds to some names
# (`<model.name>_torch_dist`, `.<dir>.partial-XXXXXXXX`). A longer name validated, then `t3rl plan` failed
# with "File name too long".
_MAX_COMPONENT = 200


def _path_component(value: str) -> str:
    if not re.match(_PATH_COMPONENT, value) or value in (".", ".."):
        # Accents folded first (`café` → `cafe`, not `caf`); letters of other scripts become `_`.
        folded = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode()
        safe = re.sub(r"[^A-Za-z0-9_.+-]+", "_", folded).strip("._-+")[:_MAX_COMPONENT] or "run"
        raise Corrected(
            "becomes a directory name: use ASCII letters, digits, '_', '-', '+' and '.' only "
            "(no '/', no leading '.' or '-', not empty)",
            safe,
        )
    if len(value.encode()) > _MAX_COMPONENT:
        raise Corrected(
            f"becomes a directory name: at most {_MAX_COMPONENT} characters (this one has {len(value)}; "
            "file systems take 255, and t3rl adds suffixes to some names)",
            value[:_MAX_COMPONENT].rstrip("._-+"),
        )
    return value


# The file a prepared split is written to: `<split>.jsonl` in the prepare_data stage's directory.
SPLIT_FILE_SUFFIX = ".jsonl"


def _split_name(value: str) -> str:
    """A split's name; its prepared file's path (`data/bfcl_train.jsonl`) names the split its stem is: the
    env's check then judges that name (was: the path made a safe directory name, `data_bfcl_train.jsonl`,
    no split's)."""
    stem = value.rpartition("/")[2].removesuffix(SPLIT_FILE_SUFFIX)
    if ("/" in value or value.endswith(SPLIT_FILE_SUFFIX)) and stem and stem != value:
        try:
            _path_component(stem)
        except ValueError:
            return _path_component(value)
        raise Reread(f"a split is named, not its prepared file ({stem}{SPLIT_FILE_SUFFIX})", stem)
    return _path_component(value)


def _stage_ref(value: str) -> str:
    if "/" in value or ":" in value:  # another run's stage (run:<dir>:<stage>) or a directory
        return _path(value)
    return _path_component(value)


def _interpreter(value: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise ValueError("not an interpreter path: a command name or an absolute path, without spaces")
    if "/" in value and not value.startswith("/"):
        raise ValueError(
            "a command name or an absolute path: a relative path would resolve against each node's "
            "working directory"
        )
    return value


_DEVICE = r"^(cpu|cuda|cuda:\d+|mps)$"


def _device(value: str) -> str:
    if not re.match(_DEVICE, value):
        raise ValueError("a torch device is 'cpu', 'cuda', 'cuda:N' or 'mps'")
    return value


# SLURM's --time forms (sbatch(1), "-t, --time"): M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, read as SLURM's
# time_str2secs reads them: each field of any number of digits, the fields added up whatever their size
# (99:99:99 is 4-04:40:39, a warning of launch/checks/rules/slurm_time.py), the sum in a C int of seconds.
_SLURM_TIME = r"(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?|(\d+)(?::(\d+)(?::(\d+))?)?"
# The forms above as a user reads them: the kind's description and every refusal of one say this, once.
SLURM_TIME_FORMS = "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"
# Days written as a fourth clock field (`25:00:00:00`, D:HH:MM:SS), which SLURM does not read.
_DAYS_AS_A_FIELD = r"(\d+):(\d+):(\d+):(\d+)"
# SLURM's spellings of no limit, compared without case (xstrcasecmp).
SLURM_NO_LIMIT = ("infinite", "unlimited", "-1")
# time_str2secs sums days, hours, minutes and seconds in an int: a longer limit wraps round.
SLURM_MOST_SECONDS = 2**31 - 1


class SlurmFields(Record):
    """The fields of a SLURM time limit as written (None: not written): `M:S` has minutes and seconds,
    `D-H` days and hours."""

    days: int | None
    hours: int | None
    minutes: int | None
    seconds: int | None

    @property
    def total_seconds(self) -> int:
        return (
            ((self.days or 0) * 24 + (self.hours or 0)) * 3600
            + (self.minutes or 0) * 60
            + (self.seconds or 0)
        )


def slurm_fields(value: str) -> SlurmFields | None:
    """The fields of a SLURM time limit SLURM reads, or None (no limit, or not a SLURM time)."""
    found = re.fullmatch(_SLURM_TIME, value)
    if found is None:
        return None
    d, h, m, s, first, second, third = (None if g is None else int(g) for g in found.groups())
    if first is None:
        return SlurmFields(d, h, m, s)
    if third is None:  # minutes[:seconds]
        return SlurmFields(None, None, first, second)
    return SlurmFields(None, first, second, third)


def slurm_clock(seconds: int) -> str:
    """A duration as SLURM writes one: [D-]HH:MM:SS."""
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


# A duration typed with a unit (`2h`, `90min`, `1.5 days`), which SLURM does not read: its seconds per unit.
_DURATION = r"(\d+(?:\.\d+)?) ?(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)"
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _slurm_time(value: str) -> str:
    if value.lower() in SLURM_NO_LIMIT:
        return value
    fields = slurm_fields(value)
    if fields is not None:
        if fields.total_seconds > SLURM_MOST_SECONDS:
            raise ValueError(
                f"{value} is {fields.total_seconds} seconds, past the {SLURM_MOST_SECONDS} SLURM sums a time "
                "limit in (a C int): it wraps round; no limit is 'infinite'"
            )
        return value
    why = f"a SLURM time limit is {SLURM_TIME_FORMS}"
    typed = re.fullmatch(_DURATION, value.strip().lower())
    if typed:  # `2h`: the same duration as SLURM writes it (a bare number would be minutes)
        raise Reread(f"{why}, not a unit", slurm_clock(round(float(typed[1]) * _UNIT_SECONDS[typed[2][0]])))
    days = re.fullmatch(_DAYS_AS_A_FIELD, value.strip())
    if days:  # `25:00:00:00`: the days SLURM writes before a '-'
        raise Reread(f"{why}: days are joined by '-'", _slurm_time("{}-{}:{}:{}".format(*days.groups())))
    raise ValueError(why)


_SBATCH_OPTION = r"^--[A-Za-z][A-Za-z0-9-]*(=.*)?$"


def _sbatch_option(value: str) -> str:
    if value.startswith("#SBATCH"):
        raise Corrected("t3rl writes the #SBATCH prefix itself", _sbatch_option(value[7:].strip()))
    if not re.match(_SBATCH_OPTION, value):
        raise ValueError("an sbatch option --name or --name=value, e.g. --qos=high")
    return value


_HOST = r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$"
# An IPv6 literal has at least two colons (one colon is host:port).
_IPV6 = r"^[0-9A-Fa-f.]*:[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*$"


def _host(value: str) -> str:
    if "://" in value or (":" in value.strip("[]") and not re.match(_IPV6, value.strip("[]"))):
        bare = value.partition("://")[2] or value
        raise Corrected(
            "a host name or IP address only (no scheme, no port: the port is its own key)",
            bare.split("/", 1)[0].rsplit(":", 1)[0] or "127.0.0.1",
        )
    if not (re.match(_HOST, value) or re.match(_IPV6, value.strip("[]"))):
        raise ValueError("a host name or IP address, e.g. 127.0.0.1 or node-1.cluster")
    _no_malformed_address(value)
    return value


def _no_malformed_address(host: str) -> None:
    """Refuse a host that can only be an address and is not one. No DNS name ends in a number (a top-level
    domain is never all digits), so `256.1.1.1`, `0.0.0.0.0` and `192.168.1` are addresses: the first two
    no resolver reads (the server fails to bind, the client to connect, after the stages before them
    ran), and inet_aton reads the short form as another address (`192.168.1` is 192.168.0.1). An IPv6
    literal is read the same way (`::1::`)."""
    bare = host.strip("[]").partition("%")[0]  # a scope (fe80::1%eth0) is the interface's, not the address's
    if ":" in bare:
        kind, example = "an IPv6 address", "::1"
    elif bare.rpartition(".")[2].isdigit():
        kind, example = "an IPv4 address (four numbers 0-255 without leading zeros)", "127.0.0.1"
    else:
        return
    import ipaddress  # lazy: only a host that is an address

    try:
        ipaddress.ip_address(bare)
    except ValueError:
        raise ValueError(
            f"{host} can only be an address (no host name ends in a number or holds ':'), but it is not "
            f"{kind}, e.g. {example}"
        ) from None


_no_nul_token = _no_nul("an argv token")


def _argv_token(value: str) -> str:
    flag = _no_nul_token(value).split("=", 1)[0]
    if value[:1] and value[0] in "‐‑‒–—−－﹣":
        # an editor's dash: the program reads no flag there, but a value it does not expect
        raise ValueError(f"starts with '{value[0]}', not the '-' of a flag")
    if value.startswith("-") and any(c.isspace() for c in flag):
        raise ValueError(f"one argv token per list item: write {value.split()} as separate items")
    return value


_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_dotted_function = _matching(
    rf"^{_IDENT}(\.{_IDENT})+$", "a dotted path module.function, e.g. pkg.filters.keep"
)


def _hook_path(value: str) -> str:
    if ":" in value:
        module, _, attr = value.partition(":")
        raise Corrected(
            "slime imports hooks by a dotted path (module.function), not module:function", f"{module}.{attr}"
        )
    return _dotted_function(value)


# Letters of other scripts drawn as ASCII ones, and an editor's typographic dashes and quotes. NFKC comes
# first (fullwidth forms, ligatures); these are what it leaves.
_LOOKALIKES = (
    "аеорсухіјѕԁԛԝһӏАВЕКМНОРСТХУІЈЅαονρυικΑΒΕΖΗΙΚΜΝΟΡΤΥΧ‐‑‒–—−‘’‚‛“”„",
    "aeopcyxijsdqwhlABEKMHOPCTXYIJSaovpuikABEZHIKMNOPTYX------''''\"\"\"",
)


def ascii_lookalike(value: str) -> str | None:
    """`value` with each character that looks like an ASCII one replaced by it; None when `value` is ASCII
    or keeps a character that looks like none (`café`)."""
    if value.isascii():
        return None
    # An editor makes one dash of a flag's two (`--tp` → `—tp`, `–tp`): a dash before a word that starts
    # the value or a list item is the two.
    value = re.sub(r"(^|[\[,\s'\"=])[–—](?=[A-Za-z])", r"\1--", unicodedata.normalize("NFKC", value))
    folded = value.translate(str.maketrans(*_LOOKALIKES))
    return folded if folded.isascii() else None


def _lookalikes_read(check: Callable[[str], str]) -> Callable[[str], str]:
    """`check`, and a value it refuses that it takes once its look-alikes are ASCII (`qwеn3` with a
    Cyrillic е, `Ｈ100`, `–-tp`) was meant as that ASCII: the first fix, not a name made safe or the key's
    old value."""

    def read(value: str) -> str:
        try:
            return check(value)
        except ValueError as error:
            meant = ascii_lookalike(value)
            if meant is None:
                raise
            try:
                check(meant)
            except ValueError:
                raise error from None
            odd = next(c for c in value if not c.isascii())
            name = unicodedata.name(odd, f"U+{ord(odd):04X}")
            raise Reread(f"'{odd}' ({name}) only looks like an ASCII character", meant) from None

    return read


def _kind(name: str, description: str, check: Callable[[str], str] | None = None) -> Any:
    """`str` of the kind `name`: its marker, and its check when it has one."""
    marker = StrKind(name, description)
    return Annotated[str, marker, Check(_lookalikes_read(check))] if check else Annotated[str, marker]


# Free text, shown or sent as is (prompts, canned replies, prefixes); may be empty.
Text = _kind("text", "free text, used as is")
Label = _kind(
    "label",
    "a non-empty name on one line, used as is (a project, a served model, a data source)",
    _matching(r"^\S(.*\S)?$", "a non-empty name without line breaks or white space at its ends"),
)
Name = _kind(
    "name",
    "a short name without white space (a family, a parser, a GPU type, a partition)",
    _matching(r"^[A-Za-z0-9_][A-Za-z0-9_.:+@/-]*$", "a name: letters, digits and _ . : + @ / -"),
)
# A Python identifier: a template variable, a JSON field, a key of an overlay of a config section.
Identifier = _kind(
    "identifier",
    "letters, digits and '_', not starting with a digit",
    _matching(rf"^{_IDENT}$", "an identifier: letters, digits and '_', not starting with a digit"),
)
# A name t3rl looks up in a registry: built in, an entry point, or a plugin's import path.
RegistryName = _kind(
    "registry name",
    "a built-in name, an entry-point name or a plugin's import path pkg.module:Object",
    _matching(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]*$", "a registry name or an import path pkg.module:Object"),
)
StageName = _kind("stage name", "the name of a stage of the run (a key of `stages`)", _path_component)
# Where a stage takes something from: an earlier stage of this run, another run's (run:<run dir>:<stage>),
# or a directory.
StageRef = _kind(
    "stage reference", "an earlier stage's name, run:<run dir>:<stage>, or a directory", _stage_ref
)
# A user string that becomes one directory or file name.
PathComponent = _kind("path component", "becomes one directory or file name", _path_component)
# The name of a split an env's data preparation writes (its file is <name>.jsonl).
SplitName = _kind("split name", "one name; its prepared file is <name>.jsonl", _split_name)
# A path read where the stage runs (relative ones against its working directory; ~ is expanded).
LocalPath = _kind("path", "a file or directory path", _path)
# A directory t3rl writes into (created with its parents when missing): pre-flight checks that it can be.
OutputDir = _kind("output dir", "a directory t3rl writes into, created when missing", _path)
# A local directory (or .zip) the launcher uploads to the cluster, or a remote URI the cluster fetches:
# pre-flight checks that a local one is there.
UploadDir = _kind("upload dir", "a local directory or .zip uploaded to the cluster, or a remote URI", _path)
# A path read on the GPU machines, where the launcher's working directory means nothing.
ClusterPath = _kind("cluster path", "an absolute path on the GPU machines", _absolute)
# A directory this machine writes into and the GPU machines read (submitit's folder of job scripts): an
# output dir judged here like OutputDir, and absolute like a ClusterPath.
SharedOutputDir = _kind(
    "output dir", "an absolute directory written from here and read on the GPU machines", _absolute
)
Interpreter = _kind(
    "interpreter", "a Python interpreter: a command name looked up on PATH, or an absolute path", _interpreter
)
EnvVarName = _kind(
    "env-var name",
    "an environment variable's name",
    _matching(rf"^{_IDENT}$", "an environment variable name: letters, digits, '_'"),
)
ModuleName = _kind(
    "module name",
    "a dotted Python module name (e.g. numpy.linalg)",
    _matching(rf"^{_IDENT}(\.{_IDENT})*$", "a dotted Python module name, e.g. numpy.linalg"),
)
# A function slime imports by its dotted path (slime's load_function splits at the last dot).
HookPath = _kind("hook path", "a dotted path module.function", _hook_path)
DottedKey = _kind(
    "dotted key",
    "a key path into a mapping, parts joined by '.' (e.g. overall.accuracy)",
    _matching(r"^[^.\s]+(\.[^.\s]+)*$", "a dotted key like overall.accuracy (no empty parts)"),
)
HfHubId = _kind(
    "HF hub id",
    "a Hugging Face hub id org/name",
    # ASCII, as the hub's names are (re's \w takes any script's letters: `Qwеn/…` with a Cyrillic е)
    _matching(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$", "a Hugging Face hub id org/name"),
)
# A local HF model directory (config.json, tokenizer, weights) a stage loads: pre-flight probes one that is
# here (a file given for it, a config.json that does not read) wherever the field is (launch/checks/probes).
ModelDir = _kind("model dir", "a local HF model directory: config.json, tokenizer and weights", _path)
# A model or tokenizer: a local HF directory, or a hub id where the hub is reachable.
ModelRef = _kind("model reference", "a local HF model directory, or a hub id org/name", _path)
# Chat templates: a shipped name, a .jinja file, a plugin's import path or an entry-point name.
_template_fits = _fits_file_systems("a chat template")
_trimmed_template = _trimmed("a chat template")
TemplateRef = _kind(
    "chat template",
    "a shipped template name, a .jinja file, or a template plugin",
    lambda value: _template_fits(_trimmed_template(value)),
)
ChatTag = _kind(
    "chat tag", "a control token or tag of a chat format (e.g. <tool_call>)", _trimmed("a chat tag")
)
ArgvToken = _kind("argv token", "one command-line token", _argv_token)
ShellLine = _kind("shell line", "a line of bash", _no_nul("a shell line"))
# A command line: each token's place gives its meaning, and one value may follow two flags (`--a 1 --b 1`).
Argv = Annotated[list[ArgvToken], Repeats("a command line: each token's place gives its meaning")]
# Lines run in order: one run twice may do more than once (`shift`, `cd ..`).
ShellScript = Annotated[list[ShellLine], Repeats("a script: a line run twice may do more than once")]
SbatchOption = _kind("sbatch option", "an #SBATCH option --name[=value]", _sbatch_option)


class CommaList:
    """Marks a kind whose one value is a list its reader splits at ',' (sbatch's partitions): a command
    line's `key=a,b` is then that value, which Hydra's grammar reads as a sweep unless quoted."""


# sbatch --partition takes a comma-separated list: the job starts in whichever partition has room first.
SlurmPartitions = Annotated[
    _kind(
        "SLURM partitions",
        "a partition, or several separated by ',' (sbatch --partition: the first with room runs the job)",
        _matching(
            r"^[A-Za-z0-9_][A-Za-z0-9_.:+@/-]*(,[A-Za-z0-9_][A-Za-z0-9_.:+@/-]*)*$",
            "partition names (letters, digits and _ . : + @ / -) separated by ','",
        ),
    ),
    CommaList(),
]


def sbatch_option_name(option: str) -> str:
    """The option an #SBATCH line sets (`--qos` of `--qos=high`)."""
    return option.partition("=")[0]


def mount_destination(mount: str) -> str:
    """Where a pyxis mount SRC[:DST[:FLAGS]] appears in the container (DST, else SRC)."""
    return mount_parts(mount)[1]


ContainerImage = _kind(
    "container image",
    "an image reference or a squashfs file (pyxis --container-image)",
    _no_space("a container image", "nvcr.io/nvidia/pytorch:24.07-py3"),
)
_mount_form = _matching(r"^[^\s,:]+(:[^\s,:]+){0,2}$", "a mount SRC[:DST[:FLAGS]], without ',' or spaces")
# The mount options enroot applies (NVIDIA/enroot bin/enroot-mount.c's table; pyxis joins them with '+'):
# any other word goes to mount(2) as file-system data, which a bind mount does not take.
MOUNT_OPTIONS = frozenset(
    {
        *("async", "atime", "bind", "dev", "diratime", "dirsync", "exec", "iversion", "loud", "mand"),
        *("noatime", "nodev", "nodiratime", "noexec", "noiversion", "nomand", "norelatime", "nostrictatime"),
        *("nosuid", "private", "rbind", "relatime", "remount", "ro", "rprivate", "rshared", "rslave"),
        *("runbindable", "rw", "shared", "silent", "slave", "strictatime", "suid", "sync", "unbindable"),
        *("lazytime", "nolazytime", "auto", "defaults", "group", "noauto", "nofail", "nogroup", "noowner"),
        *("nouser", "nousers", "owner", "user", "users", "x-create=dir", "x-create=file", "x-create=auto"),
        *("x-move", "x-detach"),
    }
)


def mount_parts(mount: str) -> tuple[str, str, list[str]]:
    """(SRC, DST, FLAGS) of a pyxis mount SRC[:DST[:FLAGS]] (DST defaults to SRC)."""
    parts = mount.split(":")
    return parts[0], parts[1] if len(parts) > 1 else parts[0], parts[2].split("+") if len(parts) > 2 else []


def _container_mount(value: str) -> str:
    """What pyxis (args.c) and enroot take of one mount: a source that is a path ('/' or '.' first),
    `tmpfs` or `umount`; a target path in the container that neither is its root (covering the image's
    whole file system: its interpreter, its libraries) nor climbs out of it (enroot refuses '..'); flags
    enroot knows."""
    source, target, flags = mount_parts(_mount_form(value))
    if source[0] not in "./" and source not in ("tmpfs", "umount"):
        import os  # lazy: only a refused mount

        raise Corrected(
            f"pyxis takes a mount source that is a path ('/' or '.' first), tmpfs or umount, not {source!r}",
            value.replace(source, os.path.abspath(source), 1),
        )
    if target[0] not in "./":
        raise Corrected(
            f"pyxis takes a mount target that is a path, not {target!r}",
            f"{source}:/{value[len(source) + 1 :]}",
        )
    if re.fullmatch(r"[/.]+", target) and ".." not in target:
        raise ValueError(f"target {target} is the container's root: the mount would hide the whole image")
    if ".." in target.split("/"):
        raise ValueError(f"target {target} climbs out of the container ('..'): enroot refuses it")
    for flag in flags:
        if flag not in MOUNT_OPTIONS:
            import difflib  # lazy: only a refused flag

            near = difflib.get_close_matches(flag, sorted(MOUNT_OPTIONS), n=1)
            if not near:
                raise ValueError(
                    f"{flag!r} is no mount option enroot knows (ro, rw, nosuid, x-create=dir, …)"
                )
            raise Corrected(f"{flag!r} is no mount option enroot knows", value.replace(flag, near[0]))
    return value


ContainerMount = _kind(
    "container mount", "SRC[:DST[:FLAGS]] (pyxis --container-mounts, joined by ',')", _container_mount
)
Hostname = _kind("host", "a host name or IP address", _host)
UrlPath = _kind(
    "URL path",
    "the path part of a URL, from its leading '/'",
    _matching(r"^(/[^/\s?#]+)*/?$", "a URL path starting with '/', e.g. /v1"),
)
# A torch device string.
Device = _kind("device", "a torch device: cpu, cuda, cuda:N or mps", _device)
# A SLURM `--time` value.
SlurmDuration = _kind("SLURM duration", SLURM_TIME_FORMS, _slurm_time)


# ---------------------------------------------------------------------------------------------- URLs

_HTTP = ("http", "https")


def _authority(rest: str) -> tuple[str, str | None]:
    """(host, port or None) of the part of a URL after `scheme://`."""
    authority = rest.split("/", 1)[0].rpartition("@")[2]
    if authority.startswith("["):  # [IPv6]:port
        host, closed, tail = authority[1:].partition("]")
        if not closed:  # `http://[::1`: no host a client could connect to
            return "", None
        return host, tail[1:] if tail.startswith(":") else None
    host, sep, port = authority.partition(":")
    return host, port if sep else None


def _url(
    schemes: tuple[str, ...],
    appended: dict[str, str] | None = None,
    ports: Callable[[str, str, str | None], None] | None = None,
) -> Callable[[str], str]:
    """A URL check: a scheme of `schemes` and a host; no path the client appends itself (suffix → why);
    `ports(scheme, host, port)` refuses ports of another service."""

    def check(value: str) -> str:
        if value != value.strip():
            raise Corrected("a URL has no white space at its ends", check(value.strip()))
        scheme, sep, rest = value.partition("://")
        if not sep:
            raise Corrected(
                f"a URL needs a scheme ({'://, '.join(schemes)}://)", check(f"{schemes[0]}://{value}")
            )
        if scheme.lower() in schemes and scheme not in schemes:
            # A scheme is case-insensitive (RFC 3986 3.1): `HTTP://host` is the same URL, written as
            # clients and the records write it (was: refused as having no scheme).
            return check(scheme.lower() + value[len(scheme) :])
        host, port = _authority(rest)
        if scheme not in schemes:
            taken = ", ".join(f"{s}://" for s in schemes)
            raise ValueError(
                f"the scheme {scheme}:// is not one this URL takes ({taken}), e.g. {schemes[0]}://host:port"
            )
        if not host or any(c.isspace() for c in value):
            raise ValueError(f"a URL with a host and no white space is needed, e.g. {schemes[0]}://host:port")
        if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"port {port!r} is not a number in 1..65535")
        _no_malformed_address(host)
        path = "/" + rest.partition("/")[2].split("?", 1)[0].rstrip("/")
        for suffix, why in (appended or {}).items():
            if path.endswith(suffix):
                raise Corrected(why, check(value.rstrip("/")[: -len(suffix)] or value))
        if ports is not None:
            ports(scheme, host, port)
        return value

    return check


def _ray_ports(scheme: str, host: str, port: str | None) -> None:
    if port == "6379":
        raise Corrected(
            "6379 is the Ray head's GCS port (ray start --port); jobs are submitted to its dashboard "
            "(default port 8265)",
            f"http://{host}:8265",
        )
    if scheme == "ray" and port == "8265":
        raise Corrected(
            "8265 is the dashboard, which speaks http; ray:// is the Ray Client server (10001)",
            f"http://{host}:8265",
        )
    if scheme != "ray" and port == "10001":
        raise Corrected("10001 is the Ray Client server, which speaks ray://", f"ray://{host}:10001")


_GENERATE = "the client appends /generate itself"
_NATIVE = "the sglang engine speaks SGLang's native API at the server's root, not the OpenAI-compatible /v1"

_OPENAI = "the OpenAI client appends /chat/completions itself"

# An http(s) URL with a host (a plugin's own endpoint; t3rl's clients have the kinds below).
HttpUrl = _kind("URL", "an http(s) URL with a host", _url(_HTTP))
# The root of an SGLang server or slime's router: the engine POSTs to <url>/generate.
SGLangUrl = _kind(
    "SGLang URL",
    "an SGLang server's root URL (the client appends /generate)",
    _url(
        _HTTP,
        {"/generate": _GENERATE, "/v1/chat/completions": _NATIVE, "/v1/completions": _NATIVE, "/v1": _NATIVE},
    ),
)
# The base URL of an OpenAI-compatible API (…/v1): the openai client POSTs to <url>/chat/completions.
OpenAIBaseUrl = _kind(
    "OpenAI base URL",
    "an OpenAI-compatible API's base URL, e.g. http://host:30001/v1",
    _url(_HTTP, {"/chat/completions": _OPENAI, "/completions": _OPENAI}),
)
# A SandboxFusion server's root: the client POSTs to <url>/run_code.
SandboxFusionUrl = _kind(
    "SandboxFusion URL",
    "a SandboxFusion server's root URL (the client appends /run_code)",
    _url(_HTTP, {"/run_code": "the client appends /run_code itself"}),
)
# A Ray cluster for the Job Submission SDK: its dashboard (http://head:8265) or a Ray Client address
# (ray://head:10001), never the GCS port 6379 that `ray start --address` takes.
_ray_url = _url(
    ("http", "https", "ray"),
    {"/api/jobs": "the Job Submission client appends /api/jobs/ itself"},
    _ray_ports,
)


def _ray_address(value: str) -> str:
    """`auto` is Ray's word (ray.init, RAY_ADDRESS) for the cluster this machine runs, found through its
    GCS; t3rl submits to a dashboard URL and resolves no word, so `http://auto` (a host named auto) was
    the nearest reading offered. The cluster here is its dashboard's default address."""
    if value.strip().lower() == "auto":
        raise Corrected(
            "'auto' is Ray's word for the cluster this machine runs; t3rl submits jobs to a dashboard URL "
            "(ray start's default: http://127.0.0.1:8265)",
            "http://127.0.0.1:8265",
        )
    return _ray_url(value)


RayAddress = _kind(
    "Ray address",
    "a Ray dashboard URL http://head:8265 or a Ray Client address ray://head:10001",
    _ray_address,
)


# sglang.srt.sampling.sampling_params.SamplingParams.verify: the values of a request's sampling SGLang
# accepts (any other fails the request, so the rollout, mid-run). Checked against SGLang itself by
# tests/launch/test_preflight_sglang_kinds.py; t3rl's own sampling fields have exactly these domains,
# and the runtime's SamplingParams holds its fields to them (t3rl_core.engines.base).
SAMPLING_DOMAINS: dict[str, tuple[Callable[[float], bool], str]] = {
    "temperature": (lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0 (0 = greedy)"),
    "top_p": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "top_k": (lambda v: v == -1 or v >= 1, "-1 (off) or a whole number >= 1"),
    "min_p": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "frequency_penalty": (lambda v: -2 <= v <= 2, "in [-2, 2]"),
    "presence_penalty": (lambda v: -2 <= v <= 2, "in [-2, 2]"),
    "repetition_penalty": (lambda v: 0 < v <= 2, "in (0, 2] (1 = none)"),
    "min_new_tokens": (lambda v: v >= 0, "a whole number >= 0"),
    "max_new_tokens": (lambda v: v >= 0, "a whole number >= 0"),
}


# slime's rollout options whose values become a field of the runtime's SamplingParams (slime's
# sampling_params, read by t3rl_core.hooks.slime.to_sampling): the pre-flight holds each value to that
# field's kind (launch.plan.slime_options), so `--rollout-stop ""` is refused at plan time, not at the
# first episode.
SLIME_SAMPLING_OPTIONS = {"--rollout-stop": "stop"}


def refused_stops(stop: Iterable[object]) -> list[object]:
    """The stop strings SGLang cannot take (empty, or not text): its stop check finds "" in every text,
    so each call would end after its first token."""
    return [text for text in stop if not isinstance(text, str) or not text]


def stop_problem(stop: object) -> str:
    """Why `stop`, one of `refused_stops`, is no stop string: said of None or a number, "an empty stop
    string" blamed a value that is none."""
    if isinstance(stop, str):
        return "SGLang finds an empty stop string in every text and ends each call after its first token"
    return f"a stop string is text, and this is {type(stop).__name__}"
