"""prepare_data and prepare_model stages: the dataset splits, and the base model's HF directory."""

from __future__ import annotations

import shlex

from launch.config.schema import PrepareDataStage, PrepareModelStage
from launch.plan.builders.builder import COMPLETE_MARKER, PlanBuilder
from launch.plan.stages import Command, Stage
from t3rl_core.config import ChatConfig
from t3rl_core.data import content_key


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
        '  tmp=$(mktemp -d "$cache.tmp.XXXXXX") && chmod 755 "$tmp"  # readable by whoever shares the cache',
        f'  {prepare} "$tmp"',
        f'  if [ -e "$cache" ] && ! {check} "$cache"; then rm -rf "$cache"; fi  # a broken copy',
        '  mv -T "$tmp" "$cache" 2>/dev/null || rm -rf "$tmp"  # else a concurrent run stored it first',
        "fi",
        f'rm -rf {shlex.quote(out)} && ln -s "$cache" {shlex.quote(out)}',
    )
    summary = f"{builder.run.env.name}: {', '.join(builder.needed_splits())}"
    # Every split the env writes (by content: a shared copy rebuilt elsewhere is still the same data)
    # and the data manifest are checked on resume.
    declared = getattr(builder.run.env, "split_names", None)
    splits = dict.fromkeys([*(declared() if callable(declared) else []), *builder.needed_splits()])
    verify = (*(f"{out}/{split}.jsonl" for split in splits), f"{out}/manifest.json")
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
    hf = builder.abs(model.hf_checkpoint)
    if model.synthetic:
        datas = builder.earlier("prepare_data")
        inputs = {"corpus": builder.ref(datas[-1].name, "dir")} if datas else {}
        corpus = ["--corpus", builder.path(inputs["corpus"])] if inputs else []
        marker = f"{hf}/{COMPLETE_MARKER}"
        commands: tuple[Command, ...] = (
            f"rm -f {shlex.quote(marker)}",
            (
                builder.cluster_python(),
                "-m",
                "t3rl_core.chat.tiny",
                "--family",
                model.family,
                *_user_family_args(model.family, model.chat),
                "--out",
                hf,
                *corpus,
                "--model-vocab-size",
                str(model.architecture.vocab_size),
            ),
            f"touch {shlex.quote(marker)}",
        )
        env, imports, notes = builder.local_plugin_env({"model.chat": model.chat})
        return Stage(
            name,
            "prepare_model",
            commands,
            inputs=inputs,
            outputs={"hf": hf},
            complete_when=(marker,),
            verify=(hf,),
            summary=f"tiny offline {model.family} model → {hf}",
            env=env,
            imports=imports,
            notes=notes,
        )
    hint = f"download it first: huggingface-cli download {model.hf_id} --local-dir {hf}"
    check = f"test -f {shlex.quote(hf + '/config.json')} || {{ echo {shlex.quote(f'{hf}/config.json is missing; ' + hint)} >&2; exit 1; }}"  # noqa: E501
    return Stage(
        name,
        "prepare_model",
        (check,),
        outputs={"hf": hf},
        complete_when=(f"{hf}/config.json",),
        verify=(hf,),
        summary=f"check {model.hf_id} at {hf}",
    )


def _user_family_args(family: str, chat: ChatConfig) -> list[str]:
    """How the tiny build learns a family t3rl does not ship: its template plugin or .jinja file, and a
    .jinja file's family tokens."""
    from t3rl_core.chat.families import FAMILIES

    if family in FAMILIES or chat.chat_template is None:
        return []
    spec = ["--family-spec", chat.family.model_dump_json()] if chat.family is not None else []
    return ["--chat-template", chat.chat_template, *spec]
