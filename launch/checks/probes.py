"""Probes, cheap and local, of what the plan will read: a user's dataset files (their first rows against
the columns the env declares), the interpreter stages started on this machine will use (it imports
t3rl and the plugins), and the endpoints the plan calls from this machine (they answer).

A probe refuses only what is certainly wrong here (a file whose rows lack a column, an interpreter
that cannot import t3rl). What may be fine by the time the stage runs, or elsewhere (a file not
downloaded yet, a server not started yet), is a warning.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from launch.checks.context import Context
from launch.checks.declared import run_fields_declaring
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.hf_config import hf_config_problem, json_object
from launch.checks.import_probe import probe_argv, probe_failures, probe_reason
from launch.checks.ledger import PlannedRun
from launch.config.errors import Problem, did_you_mean
from t3rl_core import outside_json
from t3rl_core.fields import DockerRun
from t3rl_core.home_paths import expand_home
from t3rl_core.input_files import InputFile, scan
from t3rl_core.secret import url_passwords
from t3rl_core.secret_shapes import credentials_in

# Seconds an interpreter has to import t3rl for a probe (a slow shared filesystem takes a while).
PROBE_TIMEOUT_S = 30
# Seconds an endpoint has to answer a probe.
ENDPOINT_TIMEOUT_S = 1.5
# Stage kinds whose commands run t3rl_core with the t3rl interpreter.
_T3RL_STAGES = ("prepare_data", "prepare_model", "eval")


# ---------------------------------------------------------------------------------------- dataset files


def dataset_files_usable(ctx: Context) -> Iterator[Problem]:
    """Each user-given dataset file exists and its first rows have the columns the env reads."""
    local = ctx.run.executor.kind in ("local", "dry")
    for spec in ctx.run.env.input_files():
        key = f"env.{spec.key}"
        path = Path(spec.path).expanduser()
        if path.is_dir():  # certainly wrong wherever it runs: the env opens the path as one file
            yield Problem(key, f"{spec.what} {path} is a directory, not a file", fix=_file_in(path, key))
            continue
        if not path.is_file():
            where = "this machine" if local else "this machine (the stage may see it on the cluster)"
            from launch.checks.beside_files import found_beside  # lazy: only a dataset file missing

            beside = found_beside(ctx, key, str(spec.path))
            yield Problem(
                key,
                f"{spec.what} {path} does not exist on {where}: prepare_data would fail"
                + (
                    f" (a relative path is read from the directory t3rl starts in, {Path.cwd()}; the file "
                    f"that wrote it has {beside.resolve()} beside it)"
                    if beside
                    else ""
                ),
                fix=f"set {key}={beside.resolve()}"
                if beside
                else f"download it to {path}, or set {key} to the file",
                severity="warning",
            )
            continue
        problem = _row_problem(spec, path)
        if problem is not None:
            yield problem


def _file_in(directory: Path, key: str) -> str:
    """The one dataset file the directory holds, else the key to be set to a file."""
    files = sorted(p for p in directory.iterdir() if p.suffix in (".jsonl", ".parquet") and p.is_file())
    return f"set {key}={files[0]} (the dataset file in it)" if len(files) == 1 else f"set {key} to a file"


def _row_problem(spec: InputFile, path: Path) -> Problem | None:
    key = f"env.{spec.key}"
    try:
        rows = list(_first_rows(path))
    except (OSError, ValueError) as error:
        return Problem(
            key, f"{spec.what} {path} cannot be read: {error}", fix=f"set {key} to a JSONL or parquet file"
        )
    if not rows:
        return Problem(key, f"{spec.what} {path} has no rows", fix=f"set {key} to a file with rows")
    for where, row in rows:
        if not isinstance(row, dict):
            return Problem(
                key, f"{path}:{where}: a row is {type(row).__name__}, not an object", fix=_fix(spec)
            )
        missing = [c for c in spec.columns if c not in row]
        if missing:
            column, column_key = missing[0], spec.columns[missing[0]]
            unused = [str(c) for c in row if c not in spec.columns]
            # The nearest name, else the one column of the row the env would not read.
            guess = did_you_mean(column, unused) or (unused[0] if len(unused) == 1 else None)
            renamed = column_key is not None and guess is not None and len(missing) == 1
            has = ", ".join(map(str, row)) or "none"
            return Problem(
                f"env.{column_key}" if renamed else key,
                f"{_at(path, where)}: the row has no column {', '.join(repr(c) for c in missing)} "
                f"({spec.what} need {', '.join(spec.columns)}; this row has {has})",
                fix=f"set env.{column_key}={guess}" if renamed else _fix(spec),
            )
        for column in spec.list_columns:
            if not isinstance(row[column], list):
                return Problem(
                    key,
                    f"{_at(path, where)}: column '{column}' is a {type(row[column]).__name__}, not a list of "
                    "chat messages",
                    fix=_fix(spec),
                )
    return None


def _at(path: Path, where: str) -> str:
    """`file:line` for a JSONL line, `file row N` for a parquet row."""
    return f"{path}:{where}" if where.isdigit() else f"{path} {where}"


def _fix(spec: InputFile) -> str:
    return f"convert the file to rows with {', '.join(spec.columns)} (the env reads these columns)"


def _first_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """(line or row number, row) of the file's first rows: JSONL lines, or a parquet file's rows."""
    for where, row in scan(path).head:
        if not isinstance(row, bytes):
            yield where, row
            continue
        try:
            yield where, outside_json.loads(row, f"line {where}")
        except outside_json.OutsideJsonError as error:
            raise ValueError(str(error)) from None
        except json.JSONDecodeError as error:
            raise ValueError(f"line {where} is not JSON ({error.msg})") from None


def model_dirs_usable(ctx: Context) -> Iterator[Problem]:
    """Every local HF model directory a stage loads (a field of the kind `ModelDir`: `model.hf_checkpoint`,
    an HF eval engine's `model_path`, each eval stage's as it runs) is one: a directory, not a file, whose
    config.json reads (an error under any executor: what is here is certainly broken). One without a
    config.json is a warning where the stage would read it here (it may be downloaded before `t3rl run`,
    whose own pre-flight then requires it)."""
    from launch.checks.rules.local_dirs import fields_of_kind  # lazy: the rules package imports this module

    # One missing here is judged against the stages that require it (model_dirs_required, on the plan).
    for key, path in _run_model_dirs(ctx):
        yield from _model_dir_problems(key, path, _download(ctx.run.model.hf_id, path), warn=False)
    if not ctx.stages_run_here:
        return  # the eval stages run on the cluster (or, under the dry executor, nowhere)
    for stage, config, overrides in eval_configs(ctx.run):
        for field, path, default in fields_of_kind(config, MODEL_DIR):
            key = eval_key(stage, overrides, field)
            instead = f"set {key}={'null' if default is None else default} (the run's own model)"
            yield from _model_dir_problems(key, path, instead, warn=True)


MODEL_DIR = "model dir"  # the kind of t3rl_core.fields.ModelDir


def _run_model_dirs(ctx: Context) -> Iterator[tuple[str, str]]:
    """The key and path of each local model directory the run's own sections name (the root eval section
    is judged as each eval stage runs it; the stages' sections hold no model of their own), but the base
    model t3rl builds itself (prepare_model), which is not here yet."""
    from launch.checks.rules.local_dirs import fields_of_kind  # lazy: the rules package imports this module

    sections = [n for n in type(ctx.run).model_fields if n not in ("eval", "stages")]
    for name, section in ((n, getattr(ctx.run, n)) for n in sections):
        for key, path, _ in (
            fields_of_kind(section, MODEL_DIR, f"{name}.") if isinstance(section, BaseModel) else ()
        ):
            if not (key == "model.hf_checkpoint" and ctx.run.model.synthetic):
                yield key, path


def model_dirs_required(ctx: Context, plan: PlannedRun) -> Iterator[Problem]:
    """A warning at a model directory that holds no config.json here when a stage that starts on this
    machine requires it: `t3rl run` refuses it before any stage starts (the executor's preflight reads
    each stage's `requires`, the one truth of what a stage loads). A config whose stages load no model
    (its data alone, `--only prepare_data`'s stage) is not warned about it."""
    if not ctx.stages_run_here:
        return
    required: dict[Path, list[str]] = {}
    for stage in plan.stages:
        for path in getattr(stage, "requires", {}):  # files it needs here (launch.plan.stages.Stage)
            required.setdefault(Path(path).expanduser().absolute(), []).append(stage.name)
    for key, value in _run_model_dirs(ctx):
        config = Path(value).expanduser().absolute() / "config.json"
        stages = required.get(config)
        if stages and not config.is_file() and not config.parent.is_file():
            above = _holding_above(Path(value).expanduser(), "config.json")
            yield Problem(
                key,
                f"{Path(value).expanduser()} holds no config.json here, which stage(s) "
                f"{', '.join(dict.fromkeys(stages))} load: t3rl run refuses it before any stage starts",
                fix=f"download it first ({_download(ctx.run.model.hf_id, value)}), or set {key} to the "
                "model's directory"
                if above is None
                # typed in a subdirectory of where the download is (`cd docs`): relative paths start here
                else f"set {key}={above / value} (a relative path starts from the current directory, "
                f"{Path.cwd()}; or cd {above} first)",
                severity="warning",
            )


def _holding_above(path: Path, name: str) -> Path | None:
    """The nearest directory above the current one in which the relative `path` holds `name` (the
    checkout's models/ seen from its docs/); None when `path` is absolute or nothing above holds it."""
    if path.is_absolute():
        return None
    try:
        here = Path.cwd()
    except OSError:  # deleted under the shell: nothing is above it
        return None
    return next((above for above in here.parents if (above / path / name).is_file()), None)


def _download(hf_id: str, path: str) -> str:
    return f"huggingface-cli download {hf_id} --local-dir {Path(path).expanduser()}"


def _model_dir_problems(key: str, value: str, other: str, *, warn: bool) -> Iterator[Problem]:
    """A refusal of the model directory `value` at `key` (a file given for it, a config.json that does not
    read), else a warning when it holds no config.json here and `warn`; `other`: a download command or
    another value of the key, the fix besides the directory."""
    path = Path(value).expanduser()
    fix = f"{other}, or set {key} to the model's directory" if other.startswith("set ") else None
    if path.is_file():
        yield Problem(
            key,
            f"{path} is a file; a model is the directory holding config.json, tokenizer and weights",
            fix=f"set {key}={path.parent} (the directory holding it)"
            if path.name == "config.json"
            else fix or f"set {key} to the model's directory",
        )
        return
    broken = hf_config_problem(path)
    if broken is not None:
        yield Problem(
            key,
            f"{broken}: the stages that load the model would fail",
            fix=fix or f"download it again ({other}), or set {key} to the model's directory",
        )
        return
    if warn and not (path / "config.json").is_file():
        yield Problem(
            key,
            f"{path} holds no config.json here: the stages that load the model would fail (t3rl run "
            "refuses it before any stage starts)",
            fix=fix or f"download it first ({other}), or set {key} to the model's directory",
            severity="warning",
        )


# What transformers' AutoTokenizer reads a local directory by: without any of them it fails to load.
_TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "config.json")


def tokenizer_readable(ctx: Context) -> Iterator[Problem]:
    """A tokenizer given as a path here is a directory whose tokenizer_config.json, if it has one,
    reads, and that holds a tokenizer: refused when it holds other files and none of a tokenizer's (a
    directory given by mistake, `/etc`), a warning when it is empty (a download not made yet, as a model
    directory without config.json). A hub id, or a path not here yet, is read where the stage runs."""
    key = "model.chat.tokenizer"
    path = Path(expand_home(ctx.run.model.chat.tokenizer))
    if path.is_file():
        yield Problem(
            key,
            f"{path} is a file; a tokenizer is the directory holding tokenizer.json and "
            "tokenizer_config.json",
            fix=f"set {key}={path.parent} (the directory holding it)"
            if path.name.startswith("tokenizer")
            else f"set {key} to the tokenizer's directory (the model's own: {ctx.run.model.hf_checkpoint})",
        )
        return
    _, broken = json_object(path / "tokenizer_config.json")
    if broken is not None:
        yield Problem(
            key,
            f"{broken}: the stages that tokenize would fail to load the tokenizer",
            fix=f"download the tokenizer again, or set {key} to a tokenizer's directory",
        )
        return
    # The base model t3rl builds itself (prepare_model), tokenizer included, is made again by its stage.
    built = ctx.run.model.synthetic and path == Path(expand_home(ctx.run.model.hf_checkpoint))
    if path.is_dir() and not built and not any((path / name).is_file() for name in _TOKENIZER_FILES):
        try:
            held = sorted(child.name for child in path.iterdir())
        except OSError:
            return  # unreadable here: read where the stage runs
        what = f"holds {', '.join(held[:3])}{' …' if len(held) > 3 else ''} but" if held else "is empty:"
        yield Problem(
            key,
            f"{path} {what} no tokenizer (none of {', '.join(_TOKENIZER_FILES)}): the stages that tokenize "
            "would fail to load it",
            fix=f"set {key} to the tokenizer's directory (the model's own: {ctx.run.model.hf_checkpoint})",
            severity="error" if held else "warning",
        )


# ------------------------------------------------------------------------------------------- checkouts

# The source trees a plan runs from on this machine. `t3rl run` refuses a missing file a stage `requires`
# before any stage starts (the executor's preflight); validate and plan said nothing, so a plan looked
# ready on a machine with no slime. A checkout may be made before the run: a warning here, as a model not
# downloaded yet is.
_CHECKOUTS = {"slime_root": "slime", "megatron_root": "Megatron-LM"}


def checkouts_here(ctx: Context, plan: PlannedRun) -> Iterator[Problem]:
    """A warning at `paths.slime_root` / `paths.megatron_root` when a stage that starts on this machine
    requires a file below it that is missing, naming the first such file."""
    if not ctx.stages_run_here:
        return
    # The files each stage needs here (launch.plan.stages.Stage), each made a Path once for both checkouts.
    required = [
        (stage.name, path, Path(path)) for stage in plan.stages for path in getattr(stage, "requires", {})
    ]
    for field, what in _CHECKOUTS.items():
        root = Path(getattr(ctx.run.paths, field))
        missing = [
            (name, path)
            for name, path, file in required
            if (file == root or root in file.parents) and not file.exists()
        ]
        if missing:
            stages = ", ".join(dict.fromkeys(name for name, _ in missing))
            yield Problem(
                f"paths.{field}",
                f"{missing[0][1]} is missing on this machine, where stage(s) {stages} run: {root} holds "
                f"no {what} checkout (t3rl run refuses it before any stage starts)",
                fix=f"check {what} out at {root}, or set paths.{field} to its checkout's directory",
                severity="warning",
            )


# ---------------------------------------------------------------------------------------- interpreters


def interpreters_import_t3rl(ctx: Context, plan: PlannedRun) -> Iterator[Problem]:
    """The interpreter of t3rl_core stages started on this machine imports t3rl and the stage's plugins
    (probed only when it is not this interpreter, which evidently does)."""
    for stage in plan.stages:
        if stage.kind not in _T3RL_STAGES or not _runs_here(ctx):
            continue
        python = _python_of(ctx, stage)
        if python is None or _same_interpreter(python, sys.executable):
            continue
        # The plugins the stage imports (launch.plan.stages.ImportCheck), when it names any.
        imports = getattr(stage, "imports", None)
        modules = ("t3rl_core", "rich", *(imports.modules if imports else ()))
        pythonpath = imports.pythonpath if imports else None
        failed = _probe(python, pythonpath, modules)
        if failed is None:
            yield Problem(
                "paths.cluster_python",
                f"{python} did not answer an import probe within {PROBE_TIMEOUT_S:g} s (stage {stage.name} "
                "runs with it on this machine)",
                fix=f"check that {python} starts; or set paths.cluster_python={sys.executable}",
                severity="warning",
            )
            return
        if failed:
            module, error = next(iter(failed.items()))
            key = "paths.cluster_python"
            yield Problem(
                key,
                f"stage {stage.name} runs on this machine with {python}, which cannot import {module} "
                f"({error})",
                fix=f"set {key}={sys.executable} (an interpreter here with t3rl installed)",
            )
            return


def _runs_here(ctx: Context) -> bool:
    return ctx.run.executor.kind == "dry" or ctx.stages_run_here


def _python_of(ctx: Context, stage: Any) -> str | None:
    """The interpreter a stage started here runs t3rl_core with, when it is not this one."""
    return ctx.run.paths.cluster_python


def _same_interpreter(a: str, b: str) -> bool:
    found = shutil.which(a)
    return found is not None and os.path.realpath(found) == os.path.realpath(b)


@functools.cache
def _probe(python: str, pythonpath: str | None, modules: tuple[str, ...]) -> dict[str, str] | None:
    """Module → why it does not import with `python`; None when the probe did not end in time."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    try:
        done = subprocess.run(
            probe_argv(python, modules), env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return None
    except OSError as error:
        return dict.fromkeys(modules, f"cannot run {python}: {error}")
    reason = probe_reason(done.stderr, done.returncode)
    return probe_failures(done.stdout, modules, reason)


# ------------------------------------------------------------------------------------------- endpoints


def endpoints_answer(ctx: Context) -> Iterator[Problem]:
    """A server the plan calls from this machine answers now (a warning: it may be started later)."""
    if not _runs_here(ctx):
        return
    seen: set[str] = set()
    for stage, config, overrides in eval_configs(ctx.run):
        url = getattr(config.engine, "url", None)
        if config.engine.name != "sglang" or url is None or url in seen:
            continue
        if url_passwords(url) or credentials_in(url):
            continue  # refused (credentials rules): the credential is not sent anywhere
        seen.add(url)
        why = _unanswered(url.rstrip("/") + "/health")
        if why is not None:
            key = eval_key(stage, overrides, "engine.url")
            yield Problem(
                key,
                f"{url} does not answer GET /health from this machine ({why}); the eval stage would fail",
                fix=f"start the server before the run, or set {key}=null to have the stage serve the model",
                severity="warning",
            )


def env_server_answers(ctx: Context) -> Iterator[Problem]:
    """The server of an env that calls one it does not start (OpenEnv's `env.url` with no `env.command`,
    no image, and no managed service writing it) publishes its schema now: every stage that plays the
    environment reads it first (a warning: the server may be started before the run)."""
    env = ctx.run.env
    url = getattr(env, "url", None)
    if not isinstance(url, str) or not _runs_here(ctx) or env.started_server() is not None:
        return
    written = {f"env.{s.env_url_key}" for s in ctx.run.services.values() if s.env_url_key}
    if "env.url" in written or url_passwords(url) or credentials_in(url):
        return  # a service starts it; a credential is refused by its own rule and not sent anywhere
    why = _unanswered(url.rstrip("/") + "/schema")
    if why is None:
        return
    yield Problem(
        "env.url",
        f"the {env.name} server at {url} does not answer GET /schema from this machine ({why}): every "
        "stage that plays the environment (its data stage first) would fail",
        fix="start the environment's server there before the run, have the world start it (env.command: "
        "the argv that serves it at env.url), or declare it as a command service with env_url_key: url",
        severity="warning",
    )


def _unanswered(url: str) -> str | None:
    """Why `url` gives no answer within the timeout, or None. The request runs in a daemon thread: a
    name lookup is not bounded by urllib's timeout, and a resolver that never answers must not hold up
    the command."""
    found: list[str | None] = []
    thread = threading.Thread(target=lambda: found.append(_get(url)), daemon=True)
    thread.start()
    thread.join(ENDPOINT_TIMEOUT_S + 0.5)
    return found[0] if found else f"no answer within {ENDPOINT_TIMEOUT_S:g} s"


def _get(url: str) -> str | None:
    # urllib only when a URL is probed: importing it (http.client, email) is start-up time of every plan.
    import urllib.error  # lazy: urllib.request (http.client, email), only to probe a URL
    import urllib.request  # lazy: urllib.request (http.client, email), only to probe a URL

    try:
        with urllib.request.urlopen(url, timeout=ENDPOINT_TIMEOUT_S):
            return None
    except urllib.error.HTTPError as error:
        return None if error.code in (401, 403) else f"HTTP {error.code}"
    except (OSError, ValueError) as error:
        return str(getattr(error, "reason", error))


# ---------------------------------------------------------------------------------------- docker images


def docker_daemon_answers(ctx: Context) -> Iterator[Problem]:
    """Every image a stage here would `docker run` (a field declaring `DockerRun`: OpenEnv's `env.image`,
    which OpenEnv's LocalDockerProvider starts when the world is built, the data stage first) finds a
    Docker daemon that answers on this machine; refused otherwise (the run's first stage would fail)."""
    if not ctx.stages_run_here:
        return  # the stages build the world on the cluster's nodes (or, under the dry executor, nowhere)
    images = {k: (v, m) for k, (v, m) in run_fields_declaring(ctx, DockerRun).items() if v is not None}
    if not images:
        return
    from launch.checks.docker_probe import docker_unreachable  # lazy: only a config that runs an image here

    why = docker_unreachable()
    for key, (image, run) in images.items() if why is not None else ():
        parent = key.rpartition(".")[0]
        instead = " ".join(f"{parent}.{field}={value}" for field, value in run.instead)
        yield Problem(
            key,
            f"{key} {image} is started with `docker run` on this machine when a stage builds the world (the "
            f"data stage first), but {why}",
            fix=f"set {key}=null {instead} (a server of the image you start where a Docker daemon runs: "
            f"docker run -p {run.port}:{run.port} {image}); or start the Docker daemon here "
            "(sudo systemctl start docker)",
        )


RULES = (
    dataset_files_usable,
    model_dirs_usable,
    tokenizer_readable,
    endpoints_answer,
    env_server_answers,
    docker_daemon_answers,
)
