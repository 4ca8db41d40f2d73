"""`t3rl eval`: evaluate here and now, into an eval-only run record that `t3rl runs` lists.

Every argument is checked before anything is written (the options' values, --url, --data,
--runtime-config, --out, an SGLang engine without a server); a bad one exits 2 with the option it names.
Then the out dir gets the record: config.yaml (the config the eval ran with, without the experiment's
stages, which it does not run), overrides.yaml, manifest.json (`record: eval`), and while the eval runs
a lock (`t3rl runs` tells a running eval from an interrupted one by it); summary.json, report.md and
the trajectories follow (t3rl_core.eval.evaluate).
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from launch.cli import completion
from launch.cli import eval_setup as common
from launch.cli.eval_checkpoint import check_stage_checkpoint, not_a_checkpoint
from launch.cli.lazy import ARGV_KEY
from launch.cli.option_fields import bounds
from launch.cli.out_option import writable_out
from launch.config.errors import did_you_mean
from launch.config.secrets import scrub_obj, scrub_text
from launch.files import LockHeld, atomic_write_json, exclusive_lock, is_locked
from launch.run.exit_codes import EXIT_CONFIG
from launch.run.published_view import print_verdicts, require_published
from launch.run.record_files import EVAL_RECORD
from launch.run.rundir import RunDir, RunDirError, collect_manifest, fresh_dir, stamp_now
from launch.run.steps import t3rl_root, write_secret_fingerprints
from t3rl_core.chat.format import cached_tokenizer
from t3rl_core.config import EnvConfig, RuntimeConfig
from t3rl_core.counts import counted
from t3rl_core.data.rows import DataError
from t3rl_core.engines.base import EngineUnavailable
from t3rl_core.envs.unavailable import WorldUnavailable
from t3rl_core.eval import evaluate as evaluation
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.record_lock import RecordsInUse, refuse_if_in_use
from t3rl_core.eval.runner import load_rows, select_rows
from t3rl_core.registries import ENGINES as REGISTRY
from t3rl_core.secret import SecretResolutionError, url_passwords
from t3rl_core.secret_shapes import credentials_in
from t3rl_core.yaml_text import safe_load

if TYPE_CHECKING:
    from launch.config.schema import RunConfig

# The built-in engines, as the registry defines them (a plugin's name is taken too).
ENGINES = tuple(REGISTRY.entries)
# Sections of the composed config an eval does not run (the experiment's pipeline).
NOT_EVALUATED = ("stages", "services", "next_experiment", "objective", "curriculum")

ConfigDirs = Annotated[
    list[str] | None,
    typer.Option("--config-dir", metavar="DIR", help="Extra config dir searched after t3rl's (repeatable)."),
]


def eval_command(
    overrides: Annotated[
        list[str] | None,
        completion.overrides_argument("Hydra overrides, e.g. +experiment=quickstart"),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help=f"engine: {', '.join(ENGINES)} or a plugin's name (default: eval.engine)",
            autocompletion=completion.choices(ENGINES),
        ),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(metavar="URL", help="SGLang server URL (engine sglang), e.g. http://127.0.0.1:30000"),
    ] = None,
    split: Annotated[
        str | None, typer.Option(metavar="SPLIT", help="prepared split (default: eval.split), e.g. bfcl_test")
    ] = None,
    k: Annotated[
        int | None,
        typer.Option(
            "--k",
            **bounds("--k"),  # eval.samples' bounds: the option sets it
            metavar="K",
            help="samples per task; reports pass@1 and pass@k",
        ),
    ] = None,
    limit_per_category: Annotated[
        int | None,
        typer.Option(
            **bounds("--limit-per-category"),  # eval.limit_per_category's: the option sets it
            metavar="N",
            help="tasks per category (default: eval.limit_per_category)",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="output dir (default: <runs_dir>/eval-<engine>-<time>)",
            callback=writable_out,
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(metavar="PATH", help="split file or data dir (default: prepared into <out>/data)"),
    ] = None,
    runtime_config: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="a runtime YAML instead of composing the config from overrides"),
    ] = None,
    serve_checkpoint: Annotated[
        Path | None, typer.Option(metavar="DIR", help="HF dir to serve with SGLang (engine sglang)")
    ] = None,
    tp: Annotated[
        int | None,
        typer.Option(
            **bounds("--tp"),  # eval.server.tp's, a count of one node's GPUs: the option sets it
            metavar="N",
            help="SGLang TP size for --serve-checkpoint (default: eval.server.tp, else 1)",
        ),
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="keep finished episodes of an interrupted eval in --out")
    ] = False,
    stage: Annotated[
        str | None,
        typer.Option(
            metavar="STAGE",
            help="an eval stage of the experiment whose settings to use (its limits, engine, split), "
            "e.g. --stage eval_tiny",
        ),
    ] = None,
    published: Annotated[
        bool,
        typer.Option(
            "--published",
            help="print the verdict on the experiment's published results (eval.published): reproduced, "
            "not reproduced (gap and interval) or not comparable (why)",
        ),
    ] = False,
    config_dir: ConfigDirs = None,
) -> None:
    """Evaluate a model (or the scripted reference policy) on a prepared split, here and now.

    The engine is checked before the first episode (SGLang: /health and /get_model_info); an engine
    that does not answer, or more engine failures than eval.max_engine_failure_rate allows, exits 1
    with summary.json `complete: false` and the reason. A bad argument exits 2 and writes nothing.
    The out dir is an eval-only run record (config.yaml, overrides.yaml, manifest.json) that
    `t3rl runs` lists.

    Examples:

      # the quickstart's gold-policy eval, with its stage's settings
      t3rl eval +experiment=quickstart --stage eval_reference

      t3rl eval +experiment=quickstart --stage eval_tiny

      t3rl eval model=qwen3_4b_instruct_2507 --engine sglang --url http://127.0.0.1:30000 --k 4
    """
    if resume and out is None:
        raise typer.BadParameter(
            "--resume keeps the finished episodes of an interrupted eval in its record: give that record's "
            "dir with --out DIR (without --out every eval gets a new one)",
            param_hint="--resume",
        )
    if out is not None:
        # An argument: refused before the config is composed or a tokenizer looked for.
        _check_out(out, resume)
    if engine is not None and engine not in ENGINES:
        _check_engine_plugin(engine)
    run: RunConfig | None = None
    if runtime_config is not None:
        runtime, config, runs_dir = _from_runtime_config(runtime_config, overrides or [], stage)
        composed: dict[str, Any] = {"t3rl": runtime.model_dump(mode="json")}
    else:
        resolved = common.resolve_or_exit(overrides or [], config_dir or [], out)
        run = resolved.run
        config = run.eval if stage is None else common.stage_eval_config(run, stage)
        runtime, runs_dir = common.runtime_of(run), Path(run.paths.runs_dir)
        composed = {k: v for k, v in resolved.config.items() if k not in NOT_EVALUATED}
    config = common.with_options(
        config, engine=engine, url=url, split=split, k=k, limit_per_category=limit_per_category, tp=tp
    )
    if run is not None:
        check_stage_checkpoint(run, stage, config, serve_checkpoint, overrides or [])
    _check_engine_source(config, serve_checkpoint, data)
    _check_gold(runtime, config, None)
    if data is None:
        _check_split(runtime, config, "--split" if split is not None else "eval.split")
    _check_tokenizer(runtime, run, [*(f"--config-dir {d}" for d in config_dir or []), *(overrides or [])])
    if published:
        require_published(config)
    if data is not None:
        _check_gold(runtime, config, _check_data(data, config))
    if resume and out is not None:
        _check_resumed_as_recorded(out, config)
    if out is None:
        out = fresh_dir(runs_dir, f"eval-{config.engine.name}-{stamp_now()}")
    else:
        out.mkdir(parents=True, exist_ok=True)
    try:
        # The record is written under the lock: a second eval into the same --out is refused before it
        # rewrites the first one's config or summary.
        with exclusive_lock(out / ".lock"):
            refuse_if_in_use(out)  # a pipeline's eval stage writing there: its config is not rewritten
            write_eval_record(
                out, composed | {"eval": config.model_dump(mode="json")}, overrides or [], stage
            )
            # Stopped while its data is prepared or its server checked too (minutes, on a cold cache): the
            # record is there, and the same command with --resume goes on from it.
            try:
                if data is None:
                    _check_server(config)  # seconds, where preparing the data first could take minutes
                data_path = data or common.prepared(runtime, out / "data", config.split)
                if data is None:  # the rows are known now, before the first episode and any engine
                    _check_gold(runtime, config, _prepared_rows(runtime, config, data_path))
                summary = evaluation.evaluate(
                    runtime, config, data_path, out, serve_checkpoint=serve_checkpoint, resume=resume
                )
            except KeyboardInterrupt:
                _say_how_to_resume(out)
                raise
    except LockHeld:
        Console(stderr=True).print(
            f"[red]error:[/] {escape(str(out))} is in use by another t3rl eval (wait for it, or choose "
            "another --out); nothing was written",
            soft_wrap=True,
        )
        raise typer.Exit(1) from None
    except RecordsInUse as error:
        Console(stderr=True).print(f"[red]error:[/] {escape(str(error))}", soft_wrap=True)
        raise typer.Exit(1) from None
    except (EngineUnavailable, WorldUnavailable, SecretResolutionError) as error:
        _fail(f"eval failed: {error}", out)
    if published:
        print_verdicts(summary, Console(highlight=False))
    if not summary["complete"]:
        _fail(None, out)  # the reason was printed under the table


def _check_out(out: Path, resume: bool = False) -> None:
    """--out is new, empty or an eval's own record: an eval never writes over a run's or a plan's record
    (it rewrote its config and manifest, and `t3rl run --run-dir` then refused the run as an eval) nor
    among other files; nor, without --resume, over the finished episodes of an eval that ended before its
    summary (killed outright: SIGKILL, the OOM killer, a preempted node, where no resume line was said)."""
    record = RunDir(out)
    if not out.is_dir():
        return
    try:
        manifest = record.read_manifest()
    except RunDirError as damaged:  # named with what is wrong: "a damaged run's record" said neither
        raise typer.BadParameter(
            f"{out} holds a damaged record, which an eval never writes over: {str(damaged).rstrip('.')}; "
            "or choose another --out (the eval's results go into a dir of their own)",
            param_hint="--out",
        ) from None
    kind = manifest.get("record", "run") if manifest else None
    if kind not in (None, EVAL_RECORD):
        raise typer.BadParameter(
            f"{out} holds a {kind}'s record; an eval never writes over one: choose another --out "
            "(the eval's results go into a dir of their own)",
            param_hint="--out",
        )
    # An eval writing there now holds its lock: refused below as in use, not as one that ended.
    ended = kind == EVAL_RECORD and not resume and not is_locked(out / ".lock")
    kept = _episodes_kept(out) if ended else 0
    if kept:
        raise typer.BadParameter(
            f"{out} holds {counted(kept, 'finished episode')} of an eval that ended before its summary "
            f"(killed, or its machine lost), which this eval would write over: {_resume_line(out)}; or "
            "choose another --out to start afresh",
            param_hint="--out",
        )
    others = sorted(p.name for p in out.iterdir() if p.name != ".lock")
    if kind is None and others and not (out / "summary.json").exists():
        shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
        raise typer.BadParameter(
            f"{out} holds other files ({shown}); an eval's record goes into a new or empty dir, or over "
            "an earlier eval's: choose another --out",
            param_hint="--out",
        )


def _holds_text(path: Path) -> bool:
    """Whether the file holds more than white space, read a block at a time (a finished eval's
    trajectories can be hundreds of MB; the first block answers)."""
    with path.open("rb") as file:
        return any(block.strip() for block in iter(lambda: file.read(1 << 16), b""))


def _check_resumed_as_recorded(out: Path, config: EvalConfig) -> None:
    """`--resume` goes on with the eval recorded in `out`: one whose selection or measurement differs
    (`--resume --limit-per-category 2` on a finished eval of 5) kept only the episodes it plans, playing
    the others again, and rewrote the record without the rest: a finished 20-task result became an
    8-task one, 24 finished episodes deleted, unsaid. Refused (exit 2) when the record holds finished
    episodes, naming each setting that differs; the settings no result depends on (compared.EVAL's
    NOT_COMPARED, but samples and repeats, which key the episodes) may differ."""
    from t3rl_core.eval.compared import EVAL, NOT_COMPARED  # lazy: only for a resume

    kept = out / "trajectories.jsonl"
    recorded_file = out / "config.yaml"
    if not kept.is_file() or not recorded_file.is_file() or not _holds_text(kept):
        return
    try:
        recorded = (safe_load(recorded_file.read_text(encoding="utf-8")) or {}).get("eval")
    except (OSError, UnicodeDecodeError, yaml.YAMLError, AttributeError):
        return  # an unreadable record (not UTF-8 too) is the resume's own refusal to make
    if not isinstance(recorded, dict):
        return
    planned = config.model_dump(mode="json")
    keyed = [name for name, part in EVAL.items() if not part.startswith(NOT_COMPARED)] + [
        "samples",
        "repeats",
    ]
    differ = [
        f"eval.{name} ({recorded.get(name)!r} there, {planned.get(name)!r} here)"
        for name in keyed
        if name in recorded and recorded.get(name) != planned.get(name)
    ]
    if differ:
        raise typer.BadParameter(
            f"{out} records another eval than this one: {'; '.join(differ)}. --resume goes on with the "
            "recorded eval and would drop its finished episodes this one does not plan: resume it with its "
            "own settings (the same command without the options or overrides that changed them), or "
            "evaluate this one into another --out",
            param_hint="--resume",
        )


def _episodes_kept(out: Path) -> int:
    """The finished episodes an eval record holds without a summary (0 with one: a finished eval, which
    the next eval into its dir replaces as before)."""
    kept = out / "trajectories.jsonl"
    if (out / "summary.json").exists() or not kept.is_file():
        return 0
    return sum(1 for line in kept.open("rb") if line.strip())


def _say_how_to_resume(out: Path) -> None:
    """After Ctrl-C or SIGTERM: the finished episodes are kept; the same command with --resume and this
    --out runs only the others."""
    kept = out / "trajectories.jsonl"
    Console(stderr=True, highlight=False).print(
        f"{_episodes_kept(out)} finished episode(s) kept in {escape(str(kept))}; {escape(_resume_line(out))}",
        soft_wrap=True,
    )


def _resume_line(out: Path) -> str:
    """The command typed, with --out `out` and --resume: it runs only the episodes `out` lacks."""
    typed = _typed_command()
    again = [*_without_out_and_resume(typed or []), "--out", str(out), "--resume"]
    line = shlex.join(["t3rl", *again])
    # The command itself when it can be shown whole (no credential typed in it would be masked).
    return (
        f"resume with: {line}"
        if typed and scrub_text(line) == line
        else f"resume with the same command plus --out {shlex.quote(str(out))} --resume"
    )


def _typed_command() -> list[str] | None:
    """The command line as typed after `t3rl` (kept by launch.cli.lazy), or None outside the CLI."""
    # lazy: the Click typer vendors (its contexts, not click's), only once an eval was stopped
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    typed = ctx.meta.get(ARGV_KEY) if ctx is not None else None
    return list(typed) if isinstance(typed, list) else None


def _without_out_and_resume(argv: Sequence[str]) -> list[str]:
    """`argv` without its --out DIR (or --out=DIR) and --resume: the resume line gives its own."""
    kept, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word == "--out":
            skip = True
        elif not (word.startswith("--out=") or word == "--resume"):
            kept.append(word)
    return kept


def _check_tokenizer(runtime: RuntimeConfig, run: RunConfig | None, arguments: list[str]) -> None:
    """A tokenizer named by a local path must be there, and load, before anything is written; a synthetic
    model's is built by its experiment's prepare_model stage, which the message names."""
    tokenizer = Path(str(runtime.chat.tokenizer)).expanduser()
    if not (tokenizer.is_absolute() or str(runtime.chat.tokenizer).startswith(".")):
        return
    if tokenizer.exists():
        # Loaded once here (the eval reuses it): a broken one is TokenizerError, exit 2, nothing written.
        cached_tokenizer(str(runtime.chat.tokenizer))
        return
    stages = [n for n, s in (run.stages.items() if run else ()) if s.kind == "prepare_model"]
    if run is not None and run.model.synthetic and stages:
        how = (
            f"the experiment's {stages[0]} stage builds it (from the prepared data): run "
            f"`t3rl run {' '.join(arguments)}` first"
        )
    else:
        how = "point model.chat.tokenizer at a local model directory"
    Console(stderr=True, highlight=False).print(
        f"error: the tokenizer {tokenizer} does not exist yet; {how}", soft_wrap=True
    )
    raise typer.Exit(EXIT_CONFIG)


def _from_runtime_config(
    path: Path, overrides: list[str], stage: str | None
) -> tuple[RuntimeConfig, EvalConfig, Path]:
    """(runtime, default eval settings, runs dir) of `--runtime-config FILE`; exit 2 if it cannot be read."""
    if stage is not None:
        raise typer.BadParameter("--stage needs the experiment's overrides", param_hint="--stage")
    if overrides:
        raise typer.BadParameter(
            "give overrides or --runtime-config, not both", param_hint="--runtime-config"
        )
    if not path.is_file():
        raise typer.BadParameter(f"{path} does not exist or is not a file", param_hint="--runtime-config")
    try:
        return RuntimeConfig.from_yaml(path), EvalConfig(), Path("runs")
    except (yaml.YAMLError, ValidationError, AttributeError, UnicodeDecodeError) as error:
        raise typer.BadParameter(
            f"{path} is not a t3rl runtime YAML (runs/<run>/runtime/<stage>.yaml): {_why_unread(error)}",
            param_hint="--runtime-config",
        ) from None


# The validation errors named one by one; past these, only their count.
_SHOWN_ERRORS = 5


def _why_unread(error: Exception) -> str:
    """What is wrong with a runtime YAML, where: each invalid key with pydantic's reason (was: "4
    validation errors for RuntimeConfig", no key named), a YAML error's line and column."""
    if isinstance(error, AttributeError):
        return "not a mapping"
    if isinstance(error, ValidationError):
        found = error.errors()
        named = [f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in found[:_SHOWN_ERRORS]]
        more = len(found) - _SHOWN_ERRORS
        return "; ".join(named) + (f"; and {more} more" if more > 0 else "")
    mark = getattr(error, "problem_mark", None)
    reason = str(getattr(error, "problem", None) or error).splitlines()[0]
    return f"{reason} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else reason


def _check_engine_source(config: EvalConfig, serve_checkpoint: Path | None, data: Path | None) -> None:
    """An SGLang engine needs a server: a URL without a password (credentials go by reference), or a
    checkpoint to serve. Refused here, before the record or the data are written."""
    engine = config.engine
    url = getattr(engine, "url", None)
    if url and (url_passwords(url) or credentials_in(url)):
        raise typer.BadParameter(
            "a credential is embedded in this URL (user:password@host, a query parameter named token or "
            "key, a token such as sk-...), as `t3rl validate` refuses for "
            "eval.engine.url: remove it and pass the credential by reference, e.g. export "
            "SGLANG_API_KEY=<it> and eval.engine.api_key=env:SGLANG_API_KEY",
            param_hint="--url / eval.engine.url",
        )
    if engine.name == "sglang" and not url and serve_checkpoint is None:
        raise typer.BadParameter(
            "engine sglang has no server: give --url http://host:port (or eval.engine.url=…), "
            "--serve-checkpoint DIR to serve one, or --engine reference|hf",
            param_hint="--url / eval.engine.url",
        )
    if serve_checkpoint is not None and not (serve_checkpoint / "config.json").is_file():
        raise typer.BadParameter(not_a_checkpoint(serve_checkpoint), param_hint="--serve-checkpoint")


def _check_gold(runtime: RuntimeConfig, config: EvalConfig, rows: Sequence[Mapping[str, Any]] | None) -> None:
    """The reference engine plays each task's gold action: an env that keeps none (OpenEnv), or rows
    without one (a verifiers dataset without answers), would fail the first episode; refused before it
    (`rows` None: the env alone, before anything is written)."""
    if config.engine.name != "reference":
        return
    env = runtime.env
    reason = env.gold_missing(None)
    if reason is None:
        rows = rows or []
        lacking = [why for row in rows if (why := env.gold_missing(row)) is not None]
        if not lacking:
            return
        reason = f"{len(lacking)} of the {counted(len(rows), 'task')} have no gold: {lacking[0]}"
    raise typer.BadParameter(
        f"the reference engine plays each task's gold action, but env {env.name}: {reason}; evaluate a "
        "model instead: --engine sglang --url http://host:port (or --serve-checkpoint DIR), or --engine hf",
        param_hint="--engine / eval.engine",
    )


def _prepared_rows(
    runtime: RuntimeConfig, config: EvalConfig, data_path: Path
) -> Sequence[Mapping[str, Any]] | None:
    """The rows an eval of the reference engine plays, when its env's gold depends on them (verifiers:
    a row's answer) and they can be read here; None otherwise (the eval says what it cannot read)."""
    declares = type(runtime.env).gold_missing is not EnvConfig.gold_missing
    if config.engine.name != "reference" or not declares:
        return None
    try:
        return select_rows(load_rows(evaluation.resolve_data(data_path, config.split)), config)
    except (FileNotFoundError, DataError):
        return None


def _check_data(data: Path, config: EvalConfig) -> list[Mapping[str, Any]]:
    """--data: the split file exists, its rows read and some match the categories; the rows selected."""
    try:
        every = load_rows(evaluation.resolve_data(data, config.split))
    except (FileNotFoundError, DataError) as error:
        raise typer.BadParameter(str(error), param_hint="--data") from None
    if not every:
        raise typer.BadParameter(f"{data} holds no row (it is empty)", param_hint="--data")
    rows = select_rows(every, config)
    if not rows:
        raise typer.BadParameter(
            f"no task of {data} is in eval.categories={config.categories}", param_hint="--data"
        )
    return rows


def _check_split(runtime: RuntimeConfig, config: EvalConfig, option: str) -> None:
    """The split to prepare is one the env's preparation writes (when the env lists them): a name it
    never writes ended as an unexpected FileNotFoundError after the record and the data were written."""
    names = getattr(runtime.env, "split_names", None)
    known = sorted(names()) if callable(names) else None
    if known is None or config.split in known:
        return
    guess = did_you_mean(config.split, known)
    raise typer.BadParameter(
        f"env {runtime.env.name} prepares no split '{config.split}'"
        + (f"; did you mean '{guess}'?" if guess else "")
        + f" (its splits: {', '.join(known)})",
        param_hint=option,
    )


def _check_server(config: EvalConfig) -> None:
    """A running SGLang server (engine sglang with a url) answers its health check."""
    engine = config.engine
    if engine.name == "sglang" and getattr(engine, "url", None):
        # lazy: the SGLang client, only to check a server
        from t3rl_core.engines.sglang_http import SGLangEngine

        async def check() -> None:
            client = SGLangEngine(engine)  # type: ignore[arg-type]
            try:
                await client.check()
            finally:
                await client.aclose()

        asyncio.run(check())


def _fail(message: str | None, out: Path) -> NoReturn:
    """Print why the eval failed (unless already printed; the record stays in `out`) and exit 1."""
    summary = out / "summary.json"
    if message is not None and not summary.exists():  # failed before it started: the record says so
        atomic_write_json(summary, {"complete": False, "reason": scrub_text(message)})
    console = Console(stderr=True)
    if message is not None:
        console.print(f"[red]{escape(scrub_text(message))}[/]", soft_wrap=True)
    console.print(f"record: {summary}", soft_wrap=True, markup=False)
    raise typer.Exit(1)


def write_eval_record(out: Path, config: dict[str, Any], overrides: list[str], stage: str | None) -> None:
    """config.yaml, overrides.yaml and manifest.json of a standalone eval dir (secrets masked)."""
    record = RunDir(out)
    record.path.mkdir(parents=True, exist_ok=True)
    record.write_config(yaml.safe_dump(scrub_obj(config), sort_keys=False), overrides)
    manifest = collect_manifest(
        run_name=str(config.get("name") or EVAL_RECORD),
        run_id=record.path.name,
        record=EVAL_RECORD,
        t3rl_root=t3rl_root(),
        topology={},
        seeds={"eval": config["eval"]["seed"]},
        overrides=overrides,
        config_dirs=[],
        created_at=record.read_manifest().get("created_at"),
    )
    record.write_manifest(manifest | {"eval": {"stage": stage, "engine": config["eval"]["engine"]["name"]}})
    write_secret_fingerprints(record.path, config)


def _check_engine_plugin(name: str) -> None:
    """An engine that is not built in must be a plugin that loads (import path or entry point)."""
    try:
        REGISTRY.entry(name)
    except ValueError as err:
        raise typer.BadParameter(
            f"{err}; built-in engines: {', '.join(ENGINES)}", param_hint="--engine"
        ) from None
