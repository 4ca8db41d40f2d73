"""prepare_data and prepare_model stages: the dataset splits, and the base model's HF directory."""

from __future__ import annotations

import shlex

from launch.config.schema import PrepareDataStage, PrepareModelStage
from launch.plan.builders.builder import COMPLETE_MARKER, PlanBuilder
from launch.plan.stages import FILE, MAY_BE_EMPTY, Command, Stage, marked
from t3rl_core.chat.families import FAMILIES
from t3rl_core.config import ChatConfig
from t3rl_core.data import content_key
from t3rl_core.data.publish import STAGE_STAGING


def prepare_data(builder: PlanBuilder, name: str, _: PrepareDataStage) -> Stage:
    """The splits are prepared once per content key into `<paths.cache_dir>/data/<key>` (written to a
    temporary dir, then renamed: concurrent runs never see half a copy) and linked into the run as
    `stages/<name>/data`; a run whose data is already there, intact, only makes the link."""
    out = f"{builder.stage_dir(name)}/data"
    _, hf = builder.hf_source()
    runtime = builder.write_runtime(name, builder.runtime_config(hf, None, for_eval=False))
    outputs = {"dir": out, **{f"split:{s}": f"{out}/{s}.jsonl" for s in builder.needed_splits()}}
    cache = shlex.quote(f"{builder.abs(builder.run.paths.cache_dir)}/data/{content_key(builder.run.env)}")
    prepare = shlex.join(
        (builder.cluster_python(), "-m", "t3rl_core.data", "--runtime-config", runtime, "--out", "DIR")
    ).removesuffix(" DIR")
    # A shared copy is reused only while every split matches its manifest's sha256: a damaged one
    # (edited, truncated) is prepared again rather than linked into more runs.
    check = shlex.join((builder.cluster_python(), "-m", "t3rl_core.data.check"))
    commands: tuple[Command, ...] = (
        f"cache={cache}",
        f'if {check} "$cache" 2>/dev/null; then echo "data: $cache (prepared before: same content key)"',
        "else",
        '  mkdir -p "$(dirname "$cache")"',
        f'  tmp=$(mktemp -d "$cache{STAGE_STAGING}XXXXXX") && chmod 755 "$tmp"'
        "  # readable by whoever shares the cache",
        f'  {prepare} "$tmp"',
        f'  if [ -e "$cache" ] && ! {check} "$cache"; then rm -rf "$cache"; fi  # a broken copy',
        '  mv -T "$tmp" "$cache" 2>/dev/null || rm -rf "$tmp"  # else a concurrent run stored it first',
        "fi",
        f'rm -rf {shlex.quote(out)} && ln -s "$cache" {shlex.quote(out)}',
    )
    summary = f"{builder.run.env.name}: {', '.join(builder.needed_splits())}"
    # Every split the env writes (by content: a shared copy rebuilt elsewhere is still the same data)
    # and the data manifest are checked on resume. A split a later stage reads must hold rows (an
    # empty one failed only at the train or eval reading it); one no stage reads may be empty.
    declared = getattr(builder.run.env, "split_names", None)
    needed = builder.needed_splits()
    splits = dict.fromkeys([*(declared() if callable(declared) else []), *needed])
    verify = {
        **{f"{out}/{split}.jsonl": FILE if split in needed else MAY_BE_EMPTY for split in splits},
        f"{out}/manifest.json": FILE,
    }
    env, imports, notes = builder.local_plugin_env({"env": builder.run.env})
    return Stage(
        name,
        "prepare_data",
        commands,
        outputs=outputs,
        summary=summary,
        verify=verify,
        env=env,
        imports=imports,
        notes=notes,
    )


def prepare_model(builder: PlanBuilder, name: str, _: PrepareModelStage) -> Stage:
    model = builder.run.model
    if model.synthetic:
        return _synthetic_model(builder, name)
    hf = builder.abs(model.hf_checkpoint)
    hint = f"download it first: huggingface-cli download {model.hf_id} --local-dir {hf}"
    check = f"test -f {shlex.quote(hf + '/config.json')} || {{ echo {shlex.quote(f'{hf}/config.json is missing; ' + hint)} >&2; exit 1; }}"  # noqa: E501
    return Stage(
        name,
        "prepare_model",
        (check,),
        outputs={"hf": hf},
        complete_when=(f"{hf}/config.json",),
        verify={hf: marked("config.json")},
        summary=f"check {model.hf_id} at {hf}",
    )


def _synthetic_model(builder: PlanBuilder, name: str) -> Stage:
    """The tiny offline model goes to `<model.hf_checkpoint>-<definition key>`: built in a temporary dir
    and renamed, so a dir of that name is always a whole build of that very definition (a change to
    the definition, the corpus or the builder names a new dir; an interrupted build is never reused).
    `model.hf_checkpoint` itself becomes a link to the latest build, for tools pointed at it by hand."""
    model = builder.run.model
    base = builder.abs(model.hf_checkpoint)
    datas = builder.earlier("prepare_data")
    inputs = {"corpus": builder.ref(datas[-1].name, "dir")} if datas else {}
    corpus = ["--corpus", builder.path(inputs["corpus"])] if inputs else []
    family_args = _user_family_args(model.family, model.chat)
    definition = {
        "family": model.family,
        "family_args": family_args,
        "chat_template": model.chat.chat_template,
        "architecture": model.architecture.model_dump(mode="json"),
        # The corpus by content (the prepared data's key), not by the run's path to it.
        "corpus": content_key(builder.run.env) if datas else None,
    }
    # lazy: the tiny-model builder (and argparse) only for a run that builds one, not every cold plan
    from t3rl_core.chat.tiny import definition_key

    hf = f"{base}-{definition_key(definition)}"
    marker = f"{hf}/{COMPLETE_MARKER}"
    build = shlex.join(
        (
            builder.cluster_python(),
            "-m",
            "t3rl_core.chat.tiny",
            "--family",
            model.family,
            *family_args,
            *corpus,
            "--model-vocab-size",
            str(model.architecture.vocab_size),
            "--out",
            "DIR",
        )
    ).removesuffix(" DIR")
    link = shlex.quote(base)
    commands: tuple[Command, ...] = (
        f"model={shlex.quote(hf)}",
        f'if [ -f {shlex.quote(marker)} ]; then echo "model: $model (built before: same definition)"',
        "else",
        '  mkdir -p "$(dirname "$model")"',
        '  tmp=$(mktemp -d "$model.tmp.XXXXXX") && chmod 755 "$tmp"  # readable by whoever shares the cache',
        f'  {build} "$tmp"',
        f'  touch "$tmp/{COMPLETE_MARKER}"',
        f'  [ -f {shlex.quote(marker)} ] || rm -rf "$model"  # a partial dir there is never reused',
        '  mv -T "$tmp" "$model" 2>/dev/null || rm -rf "$tmp"  # else a concurrent run stored it first',
        "fi",
        # The latest build under the configured name (a real dir there, from an older t3rl, is kept).
        f'if [ -L {link} ] || [ ! -e {link} ]; then ln -sfn "$(basename "$model")" {link}.link.$$ '
        f"&& mv -T {link}.link.$$ {link}; fi",
    )
    env, imports, notes = builder.local_plugin_env({"model.chat": model.chat})
    return Stage(
        name,
        "prepare_model",
        commands,
        inputs=inputs,
        outputs={"hf": hf},
        complete_when=(marker,),
        verify={hf: marked(COMPLETE_MARKER)},
        summary=f"tiny offline {model.family} model → {hf}",
        env=env,
        imports=imports,
        notes=notes,
    )


def _user_family_args(family: str, chat: ChatConfig) -> list[str]:
    """How the tiny build learns a family t3rl does not ship: its template plugin or .jinja file, and a
    .jinja file's family tokens."""
    if family in FAMILIES or chat.chat_template is None:
        return []
    spec = ["--family-spec", chat.family.model_dump_json()] if chat.family is not None else []
    return ["--chat-template", chat.chat_template, *spec]
