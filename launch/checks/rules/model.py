"""The model bundle agrees with itself: family, chat template, SGLang parsers, architecture, checkpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from launch.checks import sglang_names
from launch.checks.context import Context
from launch.checks.hf_config import compare, override_value, read_hf_config
from launch.checks.model_options import model_options
from launch.config.algorithms import SFT_LOSS_MASK
from launch.config.errors import Problem, did_you_mean
from launch.config.fixes import list_override
from launch.config.schema import MegatronArch, TrainStage
from t3rl_core.chat.custom import TEMPLATE_GROUP, template_plugin
from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.shipped import load_template, shipped_templates
from t3rl_core.counts import counted
from t3rl_core.registry import entry_point_names, entry_points

ARCH = "model.architecture"


def _families() -> list[str]:
    return sorted(FAMILIES)


def family_known(ctx: Context) -> Iterator[Problem]:
    """The chat-template family must be one t3rl ships (t3rl_core/chat/families.py), the family of a
    template plugin, or the one `model.chat.family` describes (for a user's .jinja template)."""
    chat, family = ctx.run.model.chat, ctx.run.model.family
    if chat.family is not None and chat.family.name != family:
        yield Problem(
            "model.chat.family.name",
            f"model.chat.family describes family '{chat.family.name}' but model.family is '{family}'",
            fix=f"set model.chat.family.name={family}",
        )
        return
    known = _families()
    plugin = _plugin_family(chat.chat_template)
    if family in known or chat.family is not None or plugin == family:
        return
    guess = did_you_mean(family, known)
    yield Problem(
        "model.family",
        f"unknown chat-template family '{family}'"
        + (f" (template plugin {chat.chat_template} is of family '{plugin}')" if plugin else ""),
        fix=f"did you mean model.family={guess}?"
        if guess
        else f"use one of {', '.join(known)}, or describe your family's tokens in model.chat.family",
    )


def _plugin_family(template: str | None) -> str | None:
    if template is None or template in shipped_templates():
        return None  # not a plugin: no need to scan the installed distributions for one
    try:
        plugin = template_plugin(template)
    except ValueError:
        return None  # chat_template_shipped reports it
    return plugin.family.name if plugin else None


def _shipped_name_claimed(template: str) -> Iterator[Problem]:
    """A shipped template's name that an installed entry point of t3rl.chat_templates registers too: the
    shipped one was rendered, silently, the plugin its user installed never was (hub hunt wave five:
    the same refusal as a registry's built-in name, `Registry._refuse_a_clash`)."""
    if template not in entry_point_names(TEMPLATE_GROUP):
        return
    point = entry_points(TEMPLATE_GROUP).get(template)
    if point is None:
        return
    owner = f" ({point.dist.name} {point.dist.version})" if point.dist is not None else ""
    yield Problem(
        "model.chat.chat_template",
        f"'{template}' is both t3rl's shipped chat template (t3rl_core/chat/templates/{template}.jinja) and "
        f"an entry point of {TEMPLATE_GROUP} ({point.value}{owner}): the name cannot tell which one is meant",
        fix=f"for the plugin, name it by its import path: model.chat.chat_template={point.value}; for "
        f"t3rl's, rename the plugin's entry point under [project.entry-points.\"{TEMPLATE_GROUP}\"] and "
        "reinstall it",
    )


def chat_template_shipped(ctx: Context) -> Iterator[Problem]:
    """A named chat template must be shipped in t3rl_core/chat/templates, a template plugin that imports,
    or a path to a .jinja file that compiles (as `t3rl_core.chat.shipped.load_template` reads it)."""
    template = ctx.run.model.chat.chat_template
    if template is not None and template in shipped_templates():
        yield from _shipped_name_claimed(template)
    if template is None or template in shipped_templates():
        return
    if Path(template).is_file():
        problem = _template_file_problem(Path(template))
        if problem is not None:
            family = ctx.run.model.family
            shipped = f"{family} (t3rl's template of the family)" if family in shipped_templates() else None
            own = "null (the tokenizer's own)"
            yield Problem(
                "model.chat.chat_template",
                f"chat template {template} {problem}: every stage that renders a prompt would fail",
                fix=f"set model.chat.chat_template={shipped or own}, or fix the template file",
            )
        return
    try:
        if template_plugin(template) is not None:
            return
    except ValueError as err:
        yield Problem(
            "model.chat.chat_template",
            str(err),
            fix="install the plugin's package or add its directory to PYTHONPATH",
        )
        return
    guess = did_you_mean(template, shipped_templates())
    yield Problem(
        "model.chat.chat_template",
        f"chat template '{template}' is neither shipped with t3rl, a template plugin, nor an existing "
        ".jinja file",
        fix=f"did you mean model.chat.chat_template={guess}?"
        if guess
        else f"use one of {', '.join(shipped_templates())}, a .jinja path, a plugin's import path "
        "(pkg.module:TEMPLATE), or null (the tokenizer's own)",
    )


def _template_file_problem(path: Path) -> str | None:
    """Why the file is no chat template the runtime loads (`load_template`, as the runtime reads it: a
    file not named .jinja is refused there), not UTF-8 text, or Jinja refuses its syntax; None when it
    compiles."""
    try:
        source = load_template(str(path))
    except UnicodeDecodeError:  # a ValueError too: caught first
        return "is not UTF-8 text"
    except ValueError:
        return "is a file not named .jinja (a template file is a .jinja)"
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    from jinja2 import TemplateSyntaxError  # lazy: jinja2, only for a template file of the user's

    from t3rl_core.chat.template import compile_template  # lazy: off the cold path, as jinja2

    try:
        compile_template(source)
    except TemplateSyntaxError as error:
        return f"does not compile (line {error.lineno}: {error.message})"
    return None


def tool_call_parser_fits(ctx: Context) -> Iterator[Problem]:
    """The tool-call parser must be registered in SGLang and read the calls the family's template writes."""
    parsers, family = ctx.run.model.parsers, ctx.run.model.family
    key = "model.parsers.tool_call_parser"
    name = parsers.tool_call_parser
    if name not in sglang_names.TOOL_CALL_PARSERS:
        guess = did_you_mean(name, sglang_names.TOOL_CALL_PARSERS)
        yield Problem(
            key,
            f"'{name}' is not a tool-call parser of SGLang 0.5.23 or t3rl",
            fix=f"did you mean {key}={guess}?" if guess else f"use one of {_fit(family, 'tool')}",
        )
        return
    fitting = sglang_names.FAMILY_TOOL_CALL_PARSERS.get(family)
    if fitting is not None and name not in fitting:
        blamed = ctx.latest(key, "model.family")
        owner = _family_of(name, sglang_names.FAMILY_TOOL_CALL_PARSERS, ctx.run.model.chat.chat_template)
        fix = f"set {key}={fitting[0]} (one of {', '.join(fitting)}; or model.family to the parser's family)"
        if blamed == "model.family" and owner:
            fix = f"set model.family={owner} (the family whose calls '{name}' reads)"
        yield Problem(
            blamed,
            f"tool-call parser '{name}' does not read the calls the {family} chat template writes",
            fix=fix,
        )


def reasoning_parser_fits(ctx: Context) -> Iterator[Problem]:
    """The reasoning parser must be registered in SGLang and match the family's thinking tags."""
    parsers, family = ctx.run.model.parsers, ctx.run.model.family
    key = "model.parsers.reasoning_parser"
    name = parsers.reasoning_parser
    if name is None:
        return
    if name not in sglang_names.REASONING_PARSERS:
        guess = did_you_mean(name, sglang_names.REASONING_PARSERS)
        yield Problem(
            key,
            f"'{name}' is not a reasoning parser of SGLang 0.5.23",
            fix=f"did you mean {key}={guess}?"
            if guess
            else f"use one of {_fit(family, 'reasoning')} or null",
        )
        return
    fitting = sglang_names.FAMILY_REASONING_PARSERS.get(family)
    if fitting is not None and name not in fitting:
        options = ", ".join(fitting) if fitting else "none: the family has no reasoning tags"
        fix = f"set {key}=null" + (f" or one of {options}" if fitting else f" ({options})")
        if fitting and reasons_unasked(ctx):
            # a model that reasons unasked needs one (reasoning_parser_where_the_model_reasons)
            fix = f"{_thinking_fix(ctx, key)} (one of {options}: the model reasons unasked, so not null)"
        yield Problem(
            key, f"reasoning parser '{name}' does not match the {family} family's thinking tags", fix=fix
        )


def prompt_and_parser_read_one_think_tag(ctx: Context) -> Iterator[Problem]:
    """The tags an env's prompt asks for are the ones the reasoning parser strips: otherwise the
    reasoning stays in the answer the tool-call parser and the reward read."""
    asked = ctx.run.env.prompt_think_tags()
    parsers = ctx.run.model.parsers
    if asked is None:
        return
    asked = (asked[0], asked[1])
    env_key = "env.data.think_tags"
    if parsers.think_tags is not None and tuple(parsers.think_tags) != asked:
        key = ctx.latest(env_key, "model.parsers.think_tags")
        source, value = (
            ("model.parsers.think_tags", list(parsers.think_tags))
            if key == env_key
            else (env_key, list(asked))
        )
        target = env_key if key == env_key else "model.parsers.think_tags"
        yield Problem(
            key,
            f"the env's prompt asks for {asked[0]}…{asked[1]} but the parser strips "
            f"{parsers.think_tags[0]}…{parsers.think_tags[1]} (model.parsers.think_tags): every "
            "reasoning block would stay in the answer",
            fix=f"set {list_override(target, value)} (the tags {source} names)",
        )
    elif parsers.think_tags is None and parsers.reasoning_parser is None:
        yield Problem(
            env_key,
            f"the env's prompt asks for {asked[0]}…{asked[1]}, but the model strips no reasoning "
            "(model.parsers.think_tags and reasoning_parser are null): the blocks stay in the answer",
            fix=f"set {list_override('model.parsers.think_tags', list(asked))}",
            severity="warning",
        )


# A reasoning parser where the model reasons (`model.thinks`, else the option of its hub id), none where
# it does not: a block a model writes unasked left in the answer is read by the tool-call parser and the
# reward; a forced parser (reply text up to the end tag is reasoning) on a model that writes none unasked,
# under a prompt that asks for no tags, makes every turn a format error.
_PARSER, _TAGS, _THINKS = "model.parsers.reasoning_parser", "model.parsers.think_tags", "model.thinks"
_SWITCH = "model.chat.chat_template_kwargs.enable_thinking"
# The env key of the tags its prompt asks for (BFCL's; an env without it never has an origin there).
_PROMPT_TAGS = "env.data.think_tags"


def declared_thinks(ctx: Context) -> bool | None:
    """`model.thinks`, else what the model options declaring `model.hf_id` agree on (None: unknown)."""
    model = ctx.run.model
    if model.thinks is not None:
        return model.thinks
    found = {o.thinks for o in model_options(ctx.config_dirs).values() if o.hf_id == model.hf_id}
    return found.pop() if len(found) == 1 else None


def thinking_switched_off(ctx: Context) -> bool:
    """The chat template is told not to reason (`enable_thinking: false`), whatever the model declares."""
    return ctx.run.model.chat.chat_template_kwargs.get(_SWITCH.rpartition(".")[2]) is False


def reasons_unasked(ctx: Context) -> bool:
    """The model writes a reasoning block by itself in this run: it declares so, and thinking is not off."""
    return bool(declared_thinks(ctx)) and not thinking_switched_off(ctx)


def reasoning_parser_where_the_model_reasons(ctx: Context) -> Iterator[Problem]:
    """A model that reasons unasked has its reasoning split off; a forced parser needs a model that
    reasons, unasked or asked by the prompt."""
    model = ctx.run.model
    thinks = declared_thinks(ctx)
    if thinks is None or ctx.run.env.ACTION_FORMAT != "tool_calls":
        return  # an env reading text its own way (ReTool's code blocks, ToolRL's <think>) splits nothing
    switched_off = thinking_switched_off(ctx)
    parser, tags = model.parsers.reasoning_parser, model.parsers.think_tags
    who = f"{model.hf_id} (model.thinks: {str(thinks).lower()})"
    if reasons_unasked(ctx) and parser is None and tags is None:
        blamed = _blamed(ctx, _PARSER, _TAGS, _THINKS)
        yield Problem(
            blamed,
            f"{who} writes a reasoning block before its answers by itself, but neither "
            f"{_PARSER} nor {_TAGS} splits it off: it stays in the answer, where the tool-call parser "
            "runs the calls the reasoning drafts and the reward reads it",
            fix=_thinking_fix(ctx, blamed),
        )
    elif parser in sglang_names.FORCED_REASONING_PARSERS and not reasons_unasked(ctx):
        if ctx.run.env.prompt_think_tags() is not None:
            return  # the prompt asks for it (prompt_and_parser_read_one_think_tag: with the tags read)
        # the prompt's tags take part too: `~env.data.think_tags` is what left the prompt without them
        prompt = (_PROMPT_TAGS,) if tags and ctx.provenance.origin(_PROMPT_TAGS) is not None else ()
        blamed = _blamed(ctx, _PARSER, _TAGS, _THINKS, *prompt, *([_SWITCH] if switched_off else []))
        end = f"{tags[1]} " if tags else ""
        why = "thinking is switched off (enable_thinking: false)" if thinks else "writes no reasoning unasked"
        fix = (
            f"set {_THINKS}=true (if the checkpoint does reason unasked); or set {_PARSER}=null"
            if blamed == _THINKS
            else f"set {list_override(_PROMPT_TAGS, list(tags))} (the tags {_TAGS} names); "
            f"or set {_PARSER}=null"
            if blamed == _PROMPT_TAGS and tags
            else f"set {_PARSER}=null (nothing to split off)"
        )
        yield Problem(
            blamed,
            f"reasoning parser '{parser}' reads a reply up to its end tag {end}as reasoning even when "
            f"no block was opened, but {who} {why} and the env's prompt (env.name={ctx.run.env.name}) asks "
            "for no reasoning tags: no reply closes the block, so every turn is a format error",
            fix=fix,
        )


def _blamed(ctx: Context, *keys: str) -> str:
    """The key changed last; the parser rather than the declaration when the declaration came with a model
    option swapped in (the parser an experiment pinned is the stale one)."""
    from launch.config.override_fixes import typed_override  # lazy: asked only of a refusal

    blamed = ctx.latest(*keys)
    origin = ctx.provenance.origin(_THINKS)
    typed = origin is not None and typed_override(_THINKS, origin.source) is not None
    return _PARSER if blamed == _THINKS and not typed else blamed


def _thinking_fix(ctx: Context, blamed: str) -> str:
    """The family's own reasoning parser (plain <think> tags for a family SGLang has none for); the
    declaration itself when it is what changed."""
    family = ctx.run.model.family
    own = FAMILIES[family].reasoning_parser if family in FAMILIES else None
    known = sglang_names.FAMILY_REASONING_PARSERS.get(family, ())
    unforced = [p for p in known if p not in sglang_names.FORCED_REASONING_PARSERS]
    parser = own or next(iter(unforced or known), None)
    split = f"set {_PARSER}={parser}" if parser else f"set {list_override(_TAGS, ('<think>', '</think>'))}"
    if blamed == _THINKS:
        return f"set {_THINKS}=false (if the checkpoint writes no reasoning unasked); or {split}"
    return split


def _family_of(parser: str, table: dict[str, tuple[str, ...]], template: str | None) -> str | None:
    """A family whose parsers include `parser`, the chat template's own first."""
    owners = [family for family, names in table.items() if parser in names]
    return template if template in owners else (owners[0] if owners else None)


def _fit(family: str, kind: str) -> str:
    table = sglang_names.FAMILY_TOOL_CALL_PARSERS if kind == "tool" else sglang_names.FAMILY_REASONING_PARSERS
    return ", ".join(table.get(family, ())) or "the names in launch/checks/sglang_names.py"


def moe_layer_pattern_length(ctx: Context) -> Iterator[Problem]:
    """Megatron: a --moe-layer-freq list has one entry per layer."""
    arch = ctx.run.model.architecture
    freq = arch.moe.moe_layer_freq if arch.moe is not None else None
    if isinstance(freq, list) and len(freq) != arch.num_layers:
        yield Problem(
            f"{ARCH}.moe.moe_layer_freq",
            f"moe_layer_freq lists {counted(len(freq), 'layer')} but the model has num_layers "
            f"{arch.num_layers}",
            fix=f"set {ARCH}.moe.moe_layer_freq=[{','.join(map(str, _resized(freq, arch.num_layers)))}] "
            f"({counted(arch.num_layers, 'entry', 'entries')}, one 0/1 per layer)",
        )


def _resized(pattern: list[int], length: int) -> list[int]:
    """The pattern cut or extended (with its last entry) to `length` entries."""
    return (pattern + pattern[-1:] * length)[:length]


def hf_checkpoint_matches_architecture(ctx: Context) -> Iterator[Problem]:
    """A local HF checkpoint's config.json must agree with the Megatron architecture (slime's HF check).

    Blame goes to what the user changed: a checkpoint pointed at (model.hf_checkpoint set last) is of
    another model, so the fix picks the model option whose architecture its config.json describes; an
    architecture field changed last is fixed to the checkpoint's value."""
    model = ctx.run.model
    # A synthetic model is built from this very architecture into a dir keyed by it; hf_checkpoint
    # links to the latest build, which may be of another definition.
    hf = None if model.synthetic else read_hf_config(model.hf_checkpoint)
    if hf is None:
        return
    mismatches = compare(model.architecture, hf)
    if not mismatches:
        return
    fields = [f"{ARCH}.{m.field}" for m in mismatches]
    if ctx.latest("model.hf_checkpoint", *fields) == "model.hf_checkpoint":
        differ = ", ".join(f"{m.hf_key} {m.theirs!r} (the model says {m.ours!r})" for m in mismatches[:3])
        option = _model_option_for(hf, ctx.config_dirs)
        yield Problem(
            "model.hf_checkpoint",
            f"{model.hf_checkpoint}/config.json is not a {model.name} checkpoint: {differ}",
            fix=f"set model={option} model.hf_checkpoint={model.hf_checkpoint} (the model option this "
            "checkpoint's config.json describes)"
            if option
            else "set "
            + " ".join(f"{ARCH}.{m.field}={m.value}" for m in mismatches)
            + " (the architecture this checkpoint's config.json describes)",
        )
        return
    for m in mismatches:
        key = f"{ARCH}.{m.field}"
        need = "at least " if m.relation == ">=" else ""
        yield Problem(
            key,
            f"{key} is {override_value(m.ours)} but {model.hf_checkpoint}/config.json has {m.hf_key} = "
            f"{override_value(m.theirs)} (needs {need}{m.value})",
            fix=f"set {key}={m.value}, or point model.hf_checkpoint at the checkpoint "
            "this architecture describes",
        )


def _model_option_for(hf: dict[str, object], config_dirs: tuple[str, ...]) -> str | None:
    """The `model/` option on the search path whose architecture agrees with an HF config.json."""
    for option in model_options(config_dirs).values():
        try:
            arch = MegatronArch.model_validate(option.architecture)
        except ValidationError:
            continue
        if not compare(arch, hf):
            return option.name
    return None


def sft_family_has_a_loss_mask(ctx: Context) -> Iterator[Problem]:
    """slime's SFT masks the assistant's tokens by the chat format, and knows a few formats only
    (`launch.config.algorithms.SFT_LOSS_MASK`): an SFT stage of another family cannot start."""
    family = ctx.run.model.family
    if family in SFT_LOSS_MASK:
        return
    # a synthetic option (random weights built offline) is never the model meant instead of a released one
    known = sorted(
        n for n, o in model_options(ctx.config_dirs).items() if o.family in SFT_LOSS_MASK and not o.synthetic
    )
    for name, stage in ctx.run.stages.items():
        if not isinstance(stage, TrainStage) or stage.curriculum.mode != "sft":
            continue
        mode = f"stages.{name}.curriculum.mode"
        key = ctx.latest("model.family", mode)
        # a model the layout takes, with the layout it needs when none takes the one typed (two groups
        # at once: launch.checks.model_layouts), so that the swap validates
        from launch.checks.model_layouts import fitting_swap  # lazy: only an SFT stage refused

        fitting = fitting_swap(ctx, known) if known else None
        # no candidate on any layout or hardware option: no swap proposed (it would be refused when applied)
        swap = f"set {fitting} (a model of those families)" if fitting else ""
        none_fits = (
            f"; none of their model options ({', '.join(known)}) fits the hardware as it is set"
            if known and not fitting
            else ""
        )
        rl = f"set {mode}=rl"
        yield Problem(
            key,
            f"stage {name} is SFT, and slime's SFT loss masks know the chat families "
            f"{sorted(SFT_LOSS_MASK)}, not '{family}'{none_fits}",
            fix=f"{swap}; or {rl}"
            if swap and key == "model.family"
            else f"{rl}" + (f"; or {swap}" if swap else ""),
        )


RULES = (
    family_known,
    sft_family_has_a_loss_mask,
    chat_template_shipped,
    tool_call_parser_fits,
    reasoning_parser_fits,
    prompt_and_parser_read_one_think_tag,
    reasoning_parser_where_the_model_reasons,
    moe_layer_pattern_length,
    hf_checkpoint_matches_architecture,
)
