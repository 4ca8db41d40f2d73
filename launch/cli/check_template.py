"""`t3rl check-template MODEL [OVERRIDES…]`: is a model family's chat template fit for TITO episodes?

MODEL is a `model/` option (t3rl's or one in a --config-dir): its chat template (shipped, plugin or
.jinja file), family tokens and SGLang parsers are checked with `t3rl_core.chat.check`. The tokenizer
is the model's own when its directory is here, else a tiny offline one trained with the family's
tokens and template (nothing is downloaded).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from launch.cli import completion
from launch.config.errors import ConfigError, Problem, render_problems
from launch.config.resolved import composed_plain
from launch.config.schema import ModelConfig
from launch.config.schema_errors import problems_from_validation
from launch.run.exit_codes import EXIT_CONFIG, EXIT_FAILED
from t3rl_core.chat.check import check_template
from t3rl_core.chat.custom import resolve, template_plugin
from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import build_local_tokenizer
from t3rl_core.config import ChatConfig, ParsersConfig
from t3rl_core.counts import counted


def register(app: typer.Typer) -> None:
    app.command("check-template")(check_template_command)


def check_template_command(
    model: Annotated[
        str,
        typer.Argument(
            metavar="MODEL",
            help="a model/ config option (e.g. qwen3_8b), or a chat family or template plugin "
            "(e.g. glm4, my_pkg.chat:MINE) checked with its own parsers",
            show_default=False,
            autocompletion=completion.models,
        ),
    ],
    overrides: Annotated[
        list[str] | None,
        completion.overrides_argument("Hydra overrides, e.g. model.parsers.x=y"),
    ] = None,
    tokenizer: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="tokenizer dir (default: model.chat.tokenizer if it is here)"),
    ] = None,
    config_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--config-dir", metavar="DIR", help="Extra config dir searched after t3rl's (repeatable)."
        ),
    ] = None,
) -> None:
    """Render, tokenize, check TITO deltas against a fresh render, and read the template's own tool calls
    (and reasoning) back with the model's SGLang parsers; exit 1 when a check fails.

    Examples:

      t3rl check-template qwen3_8b

      t3rl check-template glm4 --tokenizer models/glm-4-9b-chat
    """
    if tokenizer is not None and not (tokenizer / "tokenizer_config.json").is_file():
        raise typer.BadParameter(
            f"{tokenizer} holds no tokenizer (no tokenizer_config.json)", param_hint="--tokenizer"
        )
    label, chat_config, parsers = _target(model, overrides or [], [str(d) for d in config_dir or []])
    console = Console(highlight=False, soft_wrap=True)
    try:
        template, family = resolve(chat_config, parsers)
    except ValueError as err:
        console.print(f"[red]error[/] model.chat.chat_template: {escape(str(err))}")
        raise typer.Exit(EXIT_CONFIG) from None
    with tempfile.TemporaryDirectory(prefix="t3rl-check-template-") as scratch:
        directory = tokenizer or (Path(chat_config.tokenizer) if chat_config.tokenizer else None)
        if directory is None or not (directory / "tokenizer_config.json").is_file():
            if family is None:
                console.print(
                    f"[red]error[/] no tokenizer at {escape(str(directory))} and no family tokens to build "
                    "one from: pass --tokenizer DIR, or name a shipped/plugin template or model.chat.family"
                )
                raise typer.Exit(EXIT_CONFIG)

            directory = build_local_tokenizer(family, Path(scratch) / "tokenizer", template=template)
            console.print(f"tokenizer: a tiny offline one with the {escape(family.name)} family's tokens")
        else:
            console.print(f"tokenizer: {escape(str(directory))}")
        chat = ChatFormat.from_config(chat_config.model_copy(update={"tokenizer": str(directory)}), parsers)
        findings = check_template(chat, parsers)
    for finding in findings:
        mark = "[green]ok[/]  " if finding.ok else "[red]FAIL[/]"
        console.print(f"{mark} {escape(finding.check)}: {escape(finding.detail)}")
    failed = [f for f in findings if not f.ok]
    console.print(f"{label}: {len(findings) - len(failed)}/{counted(len(findings), 'check')} pass")
    raise typer.Exit(EXIT_FAILED if failed else 0)


def _target(
    model: str, overrides: list[str], config_dirs: list[str]
) -> tuple[str, ChatConfig, ParsersConfig]:
    """What to check: a model option's chat config and parsers, else a chat family's or template plugin's
    own template with the parsers its family names."""
    from launch.config.direct.search_files import group_options  # lazy: not for --help

    options = group_options("model", config_dirs)
    if options is None:  # a search path the direct reader leaves to Hydra
        from launch.config.compose import group_options as hydra_group_options  # lazy: Hydra, only then

        options = hydra_group_options("model", config_dirs)
    if model not in options:
        try:
            plugin = None if model in FAMILIES else template_plugin(model)
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="MODEL") from None
        family = FAMILIES.get(model) or (plugin.family if plugin else None)
        if family is not None:
            if overrides:
                raise typer.BadParameter("overrides apply to a model/ option only", param_hint="OVERRIDES")
            parsers = ParsersConfig(
                tool_call_parser=family.tool_call_parser, reasoning_parser=family.reasoning_parser
            )
            # No tokenizer (a tiny one is built for the family): a config no user writes, so it is
            # constructed as is rather than validated against ModelRef's non-empty path.
            chat = ChatConfig.model_construct(tokenizer="", chat_template=model)
            return f"{model} ({family.name})", chat, parsers
    config = _model(model, overrides, config_dirs)
    return f"{config.name} ({config.family})", config.chat, config.parsers


def _model(model: str, overrides: list[str], config_dirs: list[str]) -> ModelConfig:
    """The composed `model` section, validated with provenance (exit 2 on a config error)."""
    try:
        composed = composed_plain([f"model={model}", *overrides], config_dirs)
        data = composed.data.get("model") or {}
        try:
            return ModelConfig.model_validate(data)
        except ValidationError as error:
            raise ConfigError(
                problems_from_validation(error, data, composed.provenance, prefix="model", root=composed.data)
            ) from None
    except ConfigError as error:
        problems = [_as_typed(p, model) for p in (*error.problems, *error.warnings)]
        render_problems(problems, Console(stderr=True))
        raise typer.Exit(EXIT_CONFIG) from None


def _as_typed(problem: Problem, model: str) -> Problem:
    """A problem of the `model=MODEL` override this command composes, in the words it was typed in: the
    argument MODEL, and a fix that is this command (`did you mean model=qwen3_8b?` for `t3rl check-template
    qwen3-8b` named an override the command does not take)."""
    if problem.source != f"override `model={model}`":
        return problem
    fix = re.sub(r"\bmodel=(\S+?)(\?)?((?: \(.*\))?)$", r"`t3rl check-template \1`\2\3", problem.fix)
    return problem.replace(source=f"MODEL `{model}`", fix=fix)
