"""overrides → a validated RunConfig: compose, resolve interpolations, schema-validate, cross-check.

`resolve` is the one entry point of the config layer: `t3rl run`, `plan`, `validate`, `show` and sweeps
all call it, so every command sees the same config and the same errors. It never starts or writes
anything; a config that cannot run raises ConfigError listing every problem. Composition goes through
`launch.config.compose_cache` (a repeated command line skips Hydra), in a child forked at the start of
a plain command when there is one (`launch.config.compose_ahead`); validation always runs.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from launch.checks.context import EVERY_STAGE, Selection
from launch.checks.group_choice import with_group_fixes, with_package_keys
from launch.checks.undo import deletion_first, trims_first, with_undo_fixes
from launch.checks.validate import import_checks, validate_and_plan
from launch.config import compose_ahead
from launch.config.errors import QUOTED_ONLY, VALUES_QUOTED, WITH_PLUS, ConfigError, Problem
from launch.config.provenance import Provenance
from launch.config.resolved import composed_plain
from launch.config.schema import RunConfig, build_run_validator, build_validators
from launch.config.schema_errors import AS_TYPED, numbers_misread, problems_from_validation
from launch.config.secrets import remember_expanded, remember_overrides, remember_revealed
from launch.config.yaml_readings import misread, with_readings
from t3rl_core.home_paths import expand_home
from t3rl_core.records import Record

if TYPE_CHECKING:
    # Through validate, the one check that builds a plan (tests/architecture/test_import_graph.py).
    from launch.checks.validate import Plan, PlanContext

# How alike a T3RL_* name must be to one t3rl reads to be taken for its misspelling (difflib's ratio of the
# parts after T3RL_: RUN_DIR/RUNS_DIR 0.93; a test's TEST_SHARED_DIR is at most 0.48 to any).
_MISSPELT = 0.8


class Resolved(Record):
    """A run config that passed every check, and how it was built."""

    run: RunConfig
    # The resolved config as plain data (what RunConfig was validated from).
    config: dict[str, Any]
    # The overrides as given on the command line.
    overrides: list[str]
    provenance: Provenance
    # Problems that do not stop a run (severity "warning").
    warnings: list[Problem]
    # Hydra's own node (sweeper settings), for sweeps; empty unless hydra/* or hparams_search was used.
    hydra: dict[str, Any]
    # The plan the checks built in the context `resolve`'s `plan_in` gave; None without one.
    plan: Plan | None = None
    # The stages of the plan the checks built that ask for GPUs (none: the hardware section is unused).
    gpu_stages: tuple[str, ...] = ()


def _root_files(config_dirs: Sequence[str]) -> list[Problem]:
    """Warnings of files at the top of one's config dirs, which nothing reads."""
    if not config_dirs:
        return []
    from launch.config.root_files import root_file_warnings  # lazy: only with own config dirs

    return list(root_file_warnings(config_dirs))


def resolve(
    overrides: Sequence[str],
    config_dirs: Sequence[str] = (),
    plan_in: Callable[[RunConfig], PlanContext] | None = None,
    record_dir: str | None = None,
    *,
    plans: bool = False,
    selection: Selection = EVERY_STAGE,
) -> Resolved:
    """Compose, resolve and validate a run config; raises ConfigError with every problem found. With
    `plan_in`, the checks build the plan in the context it gives for the run, and `Resolved.plan` holds
    it (built once: `t3rl plan` writes the plan its checks judged). `record_dir`: the dir the command
    line names for the record (`Context.record_dir`); `plans`: a new record is a plan (`Context.plans`);
    `selection`: the stages the command runs, which the checks of this machine judge."""
    remember_overrides(overrides)
    if compose_ahead.composing(overrides, config_dirs):  # work that needs no config, done meanwhile
        build_validators()
        import_checks()
    try:
        plain = compose_ahead.take(overrides, config_dirs) or composed_plain(overrides, config_dirs)
    except ConfigError as error:
        from launch.checks.group_keys import group_key_problems  # lazy: only to explain a mistake

        problems = (
            _hollow_options(error.problems, overrides, config_dirs)
            or _deleted_groups(overrides, error.problems, config_dirs)
            or group_key_problems(overrides, config_dirs)
            or with_package_keys(error.problems, config_dirs)
        )
        if any(AS_TYPED in p.fix for p in problems):  # an override's look-alikes read as ASCII
            from launch.checks.fix_closure import completed  # lazy: only a fix that reads what was typed

            problems = completed(problems, overrides, config_dirs, _refusals)
        if any(QUOTED_ONLY in p.message or f"({VALUES_QUOTED}" in p.fix for p in problems):  # quoted, taken?
            from launch.checks.fix_closure import quoted_tried  # lazy: only a value Hydra reads quoted

            problems = quoted_tried(problems, overrides, config_dirs, _refusals)
        if any(p.fix.startswith(WITH_PLUS) for p in problems):  # `env_vars={a: 1}`: with '+', is it taken?
            from launch.checks.fix_closure import plus_tried  # lazy: only a mapping typed without '+'

            problems = plus_tried(problems, overrides, config_dirs, _refusals)
        if any("' is an option of " in p.fix for p in problems):  # `tracking=local`: which group takes it?
            from launch.checks.other_groups_tried import tried_elsewhere  # lazy: only an option misplaced

            problems = tried_elsewhere(problems, overrides, config_dirs, _refusals)
        raise ConfigError(problems) from None
    # `~/…` expanded here, once, after the composition cache (it reads $HOME every time).
    data, provenance = expand_home(plain.data), plain.provenance
    if config_dirs:
        from launch.config.hidden_options import hidden_option_problems  # lazy: only with own config dirs

        hidden = hidden_option_problems(config_dirs, (origin.source for _, origin in provenance.items()))
        if hidden:  # the config composed is not the one written: its every other problem would mislead
            raise ConfigError(hidden)
    remember_expanded(data, plain.data)  # only what expand_home changed is read again
    build_run_validator()  # a no-op when built already (build_validators)
    misreads = misread(provenance)  # a file's `12:00:00` that YAML 1.1 made 43200: the text is the truth
    try:
        run = RunConfig.model_validate(data)
    except ValidationError as error:
        from launch.checks.group_keys import group_key_problems  # lazy: only to explain a mistake
        from launch.checks.package_header import with_header_fixes  # lazy: only to explain a mistake

        problems = with_header_fixes(problems_from_validation(error, data, provenance), provenance)
        problems = with_readings(problems, misreads)
        hollow = _hollow_options(problems, overrides, config_dirs)
        if hollow:  # an option that gives its section nothing, or a file's entry removing it: the cause
            raise ConfigError(hollow) from None
        deleted = _deleted_groups(overrides, problems, config_dirs)
        if deleted:  # the cause, undone by dropping it: no other fix applies
            raise ConfigError(deleted) from None
        problems = (
            _renamed_sections(overrides, config_dirs, data, problems)
            or group_key_problems(overrides, config_dirs)
            or with_group_fixes(problems, config_dirs, overrides)
        )
        problems = with_undo_fixes(problems, overrides, config_dirs)
        if any(AS_TYPED in p.fix for p in problems):
            from launch.checks.fix_closure import completed  # lazy: only a fix that reads what was typed

            problems = completed(problems, overrides, config_dirs, _refusals)
        if any(trims_first(p) or deletion_first(p) for p in problems):
            from launch.checks.fix_closure import tried_trims  # lazy: only a fix that trims what was typed

            problems = tried_trims(problems, overrides, config_dirs, _refusals)
        raise ConfigError(problems) from None
    taken_otherwise = with_readings([], misreads)
    if taken_otherwise:  # values the schema took that their files' text says otherwise (`seed: 0123`)
        raise ConfigError(taken_otherwise)
    misread_numbers = list(numbers_misread(data, run))  # `num_rollout=2**63`, `seed=true`
    if misread_numbers:
        from launch.config.machine_ints import misread_number_problems  # lazy: only a number misread

        problems = misread_number_problems(misread_numbers, provenance, data)
        raise ConfigError(with_undo_fixes(problems, overrides, config_dirs))
    renamed = _renamed_sections(overrides, config_dirs, data)
    if renamed:  # a section renamed to another option: its every other check would judge the old one
        raise ConfigError(renamed)
    remember_revealed(run)  # masked wherever they show up, and refused in names (credentials rules)
    if provenance.shadowed:  # the cause of what the checks would blame on the base experiment's file
        from launch.checks.experiment_bases import bases_merged_after  # lazy: only when a value is lost

        bases = bases_merged_after(provenance)
        if bases:
            raise ConfigError(bases)
    checked, plan = validate_and_plan(
        run, data, provenance, config_dirs, plan_in, record_dir, plans=plans, selection=selection
    )
    problems = [
        *checked,
        *_override_warnings(overrides, data),
        *_variables_nothing_reads(),
        *_root_files(config_dirs),
        *_another_checkout(),
    ]
    if any(p.severity == "error" for p in problems):
        if any("; or " in p.fix or ".curriculum.mode=" in p.fix for p in problems):  # each alternative tried
            from launch.checks.offers_tried import tried_offers  # lazy: only alternatives offered

            problems = tried_offers(problems, overrides, config_dirs, _refusals)
        errors = [p for p in problems if p.severity == "error"]
        raise ConfigError(
            _deleted_groups(overrides, errors, config_dirs, _refusals)
            or with_undo_fixes(problems, overrides, config_dirs, prose_only=True)
        )
    return Resolved(
        run=run,
        config=data,
        overrides=list(overrides),
        provenance=provenance,
        warnings=list(problems),
        hydra=plain.hydra,
        plan=plan if plan_in is not None else None,
        gpu_stages=tuple(stage.name for stage in plan.stages if stage.gpus) if plan is not None else (),
    )


# The checks of what an override does, each imported only when a command line holds such an override: a
# cold command's line rarely does (tests/architecture/test_startup_imports.py counts its modules).


def _hollow_options(
    problems: Sequence[Problem], overrides: Sequence[str], config_dirs: Sequence[str]
) -> list[Problem] | None:
    if not any("=" in o and "." not in o.split("=", 1)[0].split("@")[0] for o in overrides):
        return None  # no group chosen on the line: no option file to read
    from launch.checks.hollow_options import hollow_option_problems  # lazy: only a group chosen, refused
    from launch.checks.mounted_packages import mounted_package_problems  # lazy: likewise
    from launch.checks.null_entries import null_entry_problems  # lazy: likewise

    return (
        hollow_option_problems(problems, overrides, config_dirs)
        or null_entry_problems(problems, overrides, config_dirs)
        or mounted_package_problems(problems, config_dirs)
    )


def _deleted_groups(
    overrides: Sequence[str],
    problems: Sequence[Problem],
    config_dirs: Sequence[str],
    refusals: Callable[[list[str], Sequence[str]], list[Problem]] | None = None,
) -> list[Problem]:
    """The `~` overrides the problems follow from. `refusals` (after the checks): also a deletion that a
    file's key needs, found by refusing the command line without it."""
    if not any(o.startswith("~") for o in overrides):
        return []
    # lazy: only for a `~` override
    from launch.checks.deleted_groups import deleted_entries_needed, deleted_group_problems

    found = deleted_group_problems(overrides, problems, config_dirs)
    if found or refusals is None:
        return found
    return deleted_entries_needed(overrides, problems, config_dirs, refusals)


def _renamed_sections(
    overrides: Sequence[str],
    config_dirs: Sequence[str],
    data: dict[str, Any],
    refused: Sequence[Problem] = (),
) -> list[Problem]:
    """`refused`: the schema's problems, when it refused the config (a stage's kind changed by its key)."""
    if not any(o.partition("=")[0].endswith((".name", ".kind")) for o in overrides):
        return []
    # lazy: only for `GROUP.name=` / `….kind=` overrides
    from launch.checks.identity_keys import identity_key_problems, stage_kind_problems

    return identity_key_problems(overrides, config_dirs, data) or stage_kind_problems(
        overrides, refused, data
    )


def _override_warnings(overrides: Sequence[str], data: dict[str, Any]) -> list[Problem]:
    keys = [o.partition("=")[0].lstrip("+") for o in overrides if "=" in o]
    if len(set(keys)) == len(keys) and not any(o.endswith("={}") or o.startswith("~") for o in overrides):
        return []
    # lazy: only for a key set twice, a deletion or `={}`
    from launch.checks.override_effects import override_warnings

    return override_warnings(overrides, data)


def _variables_nothing_reads() -> list[Problem]:
    """A warning per T3RL_* variable of the environment that t3rl does not read and that is spelt nearly as
    one it does (`T3RL_RUN_DIR`: the runs went to paths.runs_dir's default, silently). Other T3RL_* names
    may be a user's own (a credential's variable, `model.hub_token=env:T3RL_HF_TOKEN`): no warning."""
    names = sorted(name for name in os.environ if name.startswith("T3RL_"))
    if not names:
        return []
    from t3rl_core.environment_variables import VARIABLES  # lazy: only with a T3RL_ variable set

    unknown = [name for name in names if name not in VARIABLES]
    if not unknown:  # T3RL_NO_CACHE and the like, which t3rl reads
        return []
    import difflib  # lazy: only with a T3RL_ variable t3rl does not read

    problems = []
    for name in unknown:
        # the part after T3RL_, compared: the prefix alone made every name alike
        close = difflib.get_close_matches(name[5:], [v[5:] for v in VARIABLES], n=1, cutoff=_MISSPELT)
        if not close:
            continue
        meant = f"T3RL_{close[0]}"
        problems.append(
            Problem(
                f"${name}",
                f"t3rl reads no environment variable {name} (it changes nothing); it reads {meant}",
                "the environment",
                f"export {meant}=<what {name} says> and unset {name} ({meant}: {VARIABLES[meant]})",
                severity="warning",
            )
        )
    return problems


def _another_checkout() -> list[Problem]:
    """A warning when the working directory is in a checkout of t3rl other than the one running: its
    conf/ (and code) is not what this t3rl composes, so an edit there changed nothing without a word (a
    second clone, with the first clone's venv on PATH)."""
    running = Path(__file__).resolve().parents[2]
    try:
        here = Path.cwd()
    except OSError:  # deleted under the shell: launch.cli.failures names that
        return []
    # A checkout is a directory holding both of these (two stats a level, up to the root).
    found = next(
        (
            d
            for d in (here, *here.parents)
            if (d / "conf" / "config.yaml").is_file() and (d / "launch" / "cli").is_dir()
        ),
        None,
    )
    if found is None or found.resolve() == running:
        return []
    own = found / ".venv" / "bin" / "t3rl"
    fix = (
        f"run that checkout's own t3rl: {shlex.quote(str(own))} … instead of t3rl"
        if own.is_file()
        else f"set that checkout up and run its own t3rl: cd {shlex.quote(str(found))} && "
        "./scripts/setup.sh && .venv/bin/t3rl …"
    )
    return [
        Problem(
            "conf",
            f"the working directory is in the t3rl checkout {found}, but this t3rl runs from {running}: its "
            f"conf/ is composed, not {found / 'conf'} (an edit there changes nothing here)",
            "the working directory",
            f"{fix}; or cd out of {found} to use the t3rl of {running}",
            severity="warning",
        )
    ]


def _refusals(overrides: list[str], config_dirs: Sequence[str]) -> list[Problem]:
    """The errors `resolve` refuses a command line with (none: it validates)."""
    try:
        resolve(overrides, config_dirs)
    except ConfigError as error:
        return [p for p in error.problems if p.severity == "error"]
    return []
