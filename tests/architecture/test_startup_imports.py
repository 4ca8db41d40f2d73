"""The start-up budget, enforced: which heavy libraries (and which of t3rl's command modules) each command
imports. Each command runs in a fresh interpreter, as a user runs it, and reports `sys.modules` at exit.

A change that makes a command import more fails here until the expectation below is changed with it
(and `benchmarks/cli_startup.py` says what it costs); one that imports less fails too, so the table stays
the truth. Heavy libraries are reached through explicit boundaries: a command module imported only when
its command runs (`launch.cli.lazy`), Hydra only for what the direct composition leaves to it
(`launch.config.resolved`), and the function-local imports marked `# lazy:` (test_lazy_imports.py).
"""

from __future__ import annotations
import __future__

import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from pydantic import AfterValidator, BaseModel

from launch.config.schema import RunConfig

REPO = Path(__file__).resolve().parents[2]

# Libraries whose import a command pays for (module names: a package, or a costly stdlib module).
WATCHED = (
    "hydra",
    "omegaconf",
    "antlr4",
    "pydantic",
    "rich",
    "typer",
    "click",
    "yaml",
    "jinja2",
    "numpy",
    "torch",
    "transformers",
    "tokenizers",
    "sglang",
    "tau2",
    "bfcl_eval",
    "ray",
    "wandb",
    "optuna",
    "matplotlib",
    "pyarrow",
    "aiohttp",
    "httpx",
    "openai",
    "asyncio",
    "concurrent.futures",
    "multiprocessing",
    "urllib.request",
    "http.client",
    "importlib.metadata",
)
# importlib.metadata: pydantic's plugin loader comes without it (launch.config.pydantic_plugins), and
# t3rl reads distributions' metadata only for a config naming a plugin.
CONFIG = ("pydantic", "yaml")
# command line → what it imports of WATCHED, its output piped (rich only for a terminal: launch.output)
BUDGET = {
    ("--help",): {"rich", "typer"},
    ("plan", "+experiment=stage2_bfcl"): {*CONFIG},
    ("validate", "+experiment=stage2_bfcl"): {*CONFIG},
    ("validate", "+experiment=quickstart"): {*CONFIG},
    ("run", "+experiment=stage2_bfcl", "executor=dry"): {*CONFIG},
    # show validates outside launch.config.pydantic_plugins.without_plugins: pydantic scans for plugins
    ("show", "+experiment=stage2_bfcl"): {*CONFIG, "rich", "typer", "importlib.metadata"},
}
# command line → at most this many of t3rl's own modules (launch.*, t3rl_core.*): each costs a cold start
# its module body, its dataclasses and models (benchmarks/cli_phases.py). Lower it when a change imports
# fewer; raising it is a start-up cost to measure first (docs/explanation/performance.md, Cold start).
# +4 at the tenth session: the pre-flight rules adam, budgets and rewards, launch.config.yaml_readings (a
# file's YAML 1.1 readings) and t3rl_core.environment_variables (with a T3RL_* variable set, as here),
# less t3rl_core.lifetime: their imports' own time 4.2 ms together (`python -X importtime`, a warm bytecode
# cache), the instructions of the cold commands they are in: docs/explanation/performance.md, row 4.
# +1: t3rl_core.records, whose Record replaced typing.NamedTuple in ~70 classes
# (a cold plan of stage2_bfcl 1,338.4 -> 1,290.2 M instructions, benchmarks/cli_instructions.py).
# +1 everywhere: launch.cli.deferred_patterns, which keeps PyYAML's reader from compiling its pattern on
# import (a cold plan of stage2_bfcl 1,273.6 -> 1,217.6 M instructions, the module's load included).
# +1 everywhere: t3rl_core.secret_name_words, the names that hold a credential split out of secret_names
# (secret_commands reads `set NAME V` by them; secret_names reads values through secret_commands: a
# cycle otherwise). Its definitions were imported before; the module itself is ~0.1 ms.
# +1 everywhere: launch.cli.forward_ref_code, typing's ForwardRefs of one text compiled once (pydantic-core's
# ~740 string annotations): a cold plan of stage2_bfcl 1,253.5 -> 1,228.6 M instructions, its load included.
# +1 everywhere but --help: t3rl_core.outside_json, the one reader of JSON from outside (pre-flight reads
# dataset rows, model configs and Docker's config through it, under its declared depth and size limit).
# +1 for show (the commands that mask text): t3rl_core.secret_prose, round twelve's credentials in prose and
# folded keys, ~0.3 ms to import from a warm bytecode cache (`python -X importtime`; its patterns compile
# on first use).
# +1 everywhere but --help: t3rl_core.code_context, whether a place of a text is code, read by secret and
# secret_prose from below both (secret_prose imported it from secret inside a function: an import cycle).
# +1 for show (plan, validate and run were within theirs): launch.run.sweep_bounds, the two sweep bounds
# the --max-points option and the sweep limit share (was a number typed in each), no imports, 0.17 ms.
# +1 everywhere but --help: t3rl_core.service_fields, the fields a run's services.<name> and the spec a
# stage starts it from share (each default was typed in both): a cold validate of stage2_bfcl 1,106.2 ->
# 1,108.6 M instructions (benchmarks/cli_instructions.py), the base model's class creation.
# +1 everywhere but --help: launch.config.plain, Plain and Reads out of compose_cache, so that Hydra's
# composition (composed) and the direct one's deferred Hydra node (DeferredHydra, which composes with
# Hydra once read) need no cycle through the cache: a cold plan of stage2_bfcl 1,199.9 -> 1,201.4 M
# instructions (benchmarks/cli_instructions.py --pythonpath, git archives of both trees, from /tmp).
# +1 everywhere but --help: launch.checks.rules.served_context, a served model's token budget against its
# context (TokensOf), ~0.15 ms to import from a warm bytecode cache (`python -X importtime`, 3 runs); the
# other rules of wave six's launcher hunt are imported only for configs they judge (rules._only_when).
# +1 everywhere but --help: launch.checks.rules.model_inputs, hunt wave six's rules of what the model, its
# tokenizer and its engines are given (four modules merged into one for this budget), ~0.5 ms to import from
# a warm bytecode cache (`python -X importtime`, a busy machine).
# +1 everywhere but --help: t3rl_core.counts, the one function every count message agrees through (`1 run`,
# `3 runs`: first hour wave seven), ~0.15 ms to import from a warm bytecode cache (`python -X importtime`);
# --help's one use is imported where a path is too long.
# +3 everywhere but --help (the twenty-seventh session): launch.checks.config_walk, the one walk of the
# config every rule reads (was a walk per rule); launch.checks.bound_ports, the probe of the ports a run's
# local processes bind (pre-flight wave seven); launch.config.direct.search_files, the search path's files
# and groups without Hydra, apart from the direct composition so that a refused key's words (imported
# only for a refused line) read them without an import circle. `python -X importtime`, no bytecode
# cache: 1.9, 2.6 and 1.5 ms of their own.
OWN_MODULE_BUDGET = {
    ("--help",): 13,
    ("plan", "+experiment=stage2_bfcl"): 202,
    ("validate", "+experiment=stage2_bfcl"): 187,
    ("validate", "+experiment=quickstart"): 188,
    ("run", "+experiment=stage2_bfcl", "executor=dry"): 202,
    ("show", "+experiment=stage2_bfcl"): 205,
}
COMMAND_MODULES = {
    "launch.cli.run",
    "launch.cli.inspect",
    "launch.cli.runtime",
    "launch.cli.runs",
    "launch.cli.score",
    "launch.cli.check_template",
    "launch.cli.rollouts",
    "launch.cli.eval_command",
}
# The command modules a command may import: its own.
OWN_MODULES = {"show": {"launch.cli.inspect"}}
# Modules a plain cold plan or validate of stage2_bfcl has no use for, imported where they are used: the
# sweep scheduler (only a sweep point's failure is reported from a plain run), the tiny-model builder and
# its argparse (only a run that builds the tiny model), rich's table of emoji codes (t3rl prints its text
# as written: launch.config.secret_rich), the email parser importlib.metadata reads METADATA files with
# (versions come from dist-info names: t3rl_core.installed), ctypes (only the eval server's child sets
# its parent-death signal with it: t3rl_core.lifetime runs there as a file), pydantic's serializer
# annotations (registered sections say SerializeAsAny themselves: t3rl_core.registry.AsItsOwnModel).
NOT_ON_THE_COLD_PATH = {
    "launch.run.parallel",
    "t3rl_core.chat.tiny",
    "argparse",
    "rich._emoji_codes",
    "email.parser",
    "ctypes",
    "pydantic.functional_serializers",
}

PROBE = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.__stderr__))
sys.argv[0] = "t3rl"
from launch.cli import main
main()
"""


def _imported(args: tuple[str, ...], cwd: Path) -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
    env |= {"PYTHONPATH": str(REPO), "T3RL_NO_CACHE": "1", "T3RL_COMPOSE_AHEAD": "0"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", list(BUDGET), ids=[" ".join(a) for a in BUDGET])
def test_each_command_imports_its_budget(args: tuple[str, ...], tmp_path: Path) -> None:
    modules = _imported(args, tmp_path)
    assert {name for name in WATCHED if name in modules} == BUDGET[args]
    allowed = OWN_MODULES.get(args[0], set())
    assert modules & COMMAND_MODULES <= allowed, "a command module imported by another command"
    own = sorted(name for name in modules if name.split(".")[0] in ("launch", "t3rl_core"))
    assert len(own) <= OWN_MODULE_BUDGET[args], own
    if args in (("plan", "+experiment=stage2_bfcl"), ("validate", "+experiment=stage2_bfcl")):
        assert not modules & NOT_ON_THE_COLD_PATH


def _models(annotation: object, seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in seen:
        seen.add(annotation)
        for field in annotation.model_fields.values():
            _models(field.annotation, seen)
    for argument in typing.get_args(annotation):
        _models(argument, seen)
    return seen


def test_no_default_factory_of_the_run_config_is_the_builtin_list() -> None:
    """pydantic reads each default factory's signature: the builtin `list`'s is parsed from text
    (`t3rl_core.strict.empty_list` is the factory to use)."""
    models = _models(RunConfig, set())
    assert len(models) > 20
    builtin = [
        f"{model.__name__}.{name}"
        for model in models
        for name, field in model.model_fields.items()
        if field.default_factory is list
    ]
    assert builtin == []


def _metadata(annotation: object) -> list[object]:
    found = list(getattr(annotation, "__metadata__", ()))
    for argument in typing.get_args(annotation):
        found += _metadata(argument)
    return found


def test_no_field_of_the_run_config_checks_through_after_validator() -> None:
    """pydantic reads the signature of each AfterValidator's function at every field using it, as it
    builds the run's validator (a cold plan/validate builds it): a check of the value alone is a
    `t3rl_core.fields.Check`, which pydantic calls without asking."""
    models = _models(RunConfig, set())
    inspected = [
        f"{model.__name__}.{name}"
        for model in models
        for name, field in model.model_fields.items()
        for marker in [*field.metadata, *_metadata(field.annotation)]
        if isinstance(marker, AfterValidator)
    ]
    assert len(models) > 20
    assert inspected == []


def test_no_model_of_the_run_config_has_its_annotations_as_strings() -> None:
    """With `from __future__ import annotations` pydantic evaluates each field's annotation string as
    the class is created, at every cold plan and validate (t3rl_core.strict)."""
    models = _models(RunConfig, set())
    postponed = sorted(
        {
            model.__module__
            for model in models
            if vars(sys.modules[model.__module__]).get("annotations") is __future__.annotations
        }
    )
    assert len(models) > 20
    assert postponed == []
