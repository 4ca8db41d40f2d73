"""One truth per setting: a default is declared once (a config model's field, or a module constant a field
takes) and everything else derives from it or is checked equal to it. Three audits:

- code and config files: a literal equal to a declared default that cannot be equal by chance
  (`distinctive`: a port or another number of four digits or more that is not a power of two, a path, a
  URL, an address, an `owner/name` id) anywhere in launch/ or t3rl_core/ but its one declaration, or in
  conf/ under another key than the field's own, is a second truth: the Ray head's ports were declared on
  both executors, again in RayHead and again in the plan's fallback. Each place left is in KNOWN with why,
  exactly (a place fixed must leave it);
- the option files conf/config.yaml chooses: a key restating its field's schema default must keep its
  value (the key stays in the file, since a key missing from the composed config is overridden only with
  '+'); an environment reference's fallback (`${oc.env:SLIME_ROOT,/root/slime}`) counts as its value.
  Other options restating a distinctive default too. The keys that differ on purpose are in DIFFERENT;
- the docs: a page saying "`KEY` (default `VALUE`)" agrees with the generated configuration reference.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from launch.config.layers import leaves

ROOT = Path(__file__).resolve().parents[2]
CODE = ("launch", "t3rl_core")

# (place, value) -> why the literal stays. A place is `conf/<file>:<key>` or `<module path>` (any line).
KNOWN: dict[tuple[str, object], str] = {
    ("t3rl_core/sandbox/config.py", 65534): "cell_uid and cell_gid: nobody and nogroup, two settings",
    ("t3rl_core/service_fields.py", "127.0.0.1"): "a service's host and the eval server's: two settings",
    ("t3rl_core/fields.py", "127.0.0.1"): "the loopback address a host is compared with, not a default",
    ("launch/checks/ledger.py", "127.0.0.1"): "the loopback address a host is compared with, not a default",
    ("t3rl_core/engines/serve.py", "127.0.0.1"): "the test server's own bind address, not the setting's",
    ("t3rl_core/fields.py", "/v1"): "the OpenAI-compatible path a URL is checked for, not a default",
    ("t3rl_core/engines/serve.py", "/health"): "SGLang's health endpoint, served by the stand-in",
    ("t3rl_core/engines/sglang_http.py", "/health"): "SGLang's health endpoint, asked by the client",
    ("t3rl_core/eval/server.py", "/health"): "SGLang's health endpoint, waited for by the eval server",
    ("launch/checks/probes.py", "/health"): "SGLang's health endpoint, probed by pre-flight",
    ("t3rl_core/envs/openenv/config.py", "/health"): "an OpenEnv server's health path, its own setting",
}


def distinctive(value: object) -> bool:
    """A value two settings do not share by chance: a number of four or more digits that is not a power
    of two (30000, 6379; not 4096), a path, a URL, an IPv4 address, an `owner/name` id."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return (value >= 1000 and value & (value - 1) != 0 and value % 1000 != 0) or value in PORT_LIKE
    if isinstance(value, str):
        return re.fullmatch(r"[\w.-]+(/[\w.-]+)+|/[\w./-]+|\w+://\S+|\d+\.\d+\.\d+\.\d+", value) is not None
    return False


# Round numbers (1000, 20000) are too often another setting's too; these round ones are ports.
PORT_LIKE = frozenset({30000, 8000, 8080})


def declared_defaults(code: Iterable[Path], root: Path) -> dict[object, list[Site]]:
    """Each distinctive default a class field declares (`port: Port = 30000`, `Field(600, ge=1)`,
    `Field(default=...)`), with the places declaring it (module path, line, the fields' names), in path
    order: read from the source (no module imported), so a config model, a record and a dataclass alike
    declare one."""
    found: dict[object, list[Site]] = {}
    for path in code:
        if not _MAY_DECLARE.search(path.read_text()):  # most modules: not parsed
            continue
        tree = _tree(path)
        fields = [i for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for i in n.body]
        # A module's constant that a field takes as its default (`ray_port: Port = RAY_PORT`) declares it.
        taken = {i.value.id for i in fields if isinstance(i, ast.AnnAssign) and isinstance(i.value, ast.Name)}
        constants = [i for i in tree.body if isinstance(i, ast.Assign) and _names(i) <= taken]
        for item in [*constants, *fields]:
            value = _default_of(item)
            if distinctive(value):
                names = (
                    frozenset({item.target.id})
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                    else _taking(fields, _names(item))  # type: ignore[arg-type]
                )
                found.setdefault(value, []).append(Site(str(path.relative_to(root)), item.lineno, names))
    return found


class Site(NamedTuple):
    """Where a default is declared: a module, a line, and the fields that take it."""

    path: str
    line: int
    fields: frozenset[str]


def _taking(fields: list[ast.stmt], constants: set[str]) -> frozenset[str]:
    """The names of the fields whose default is one of `constants` (`ray_port: Port = RAY_PORT`)."""
    return frozenset(
        i.target.id
        for i in fields
        if isinstance(i, ast.AnnAssign)
        and isinstance(i.target, ast.Name)
        and isinstance(i.value, ast.Name)
        and i.value.id in constants
    )


# An indented `name: type = <number of four digits or more, or a quoted text>`, `= Field(...` or `= NAME`
# (a module constant): a line that may declare a distinctive default (a wider net than `distinctive`,
# which judges what it catches); a module without one is not parsed.
_MAY_DECLARE = re.compile(
    r"^[ \t]+\w+:[^=\n]+=\s*(?:Field\(|\d{4}|[\"']|_?[A-Z][A-Z0-9_]*\s*$)", re.MULTILINE
)


def _names(item: ast.Assign) -> set[str]:
    return {t.id if isinstance(t, ast.Name) else "" for t in item.targets}


def _default_of(item: ast.stmt) -> object:
    """The literal default of a class body's annotated field, or of a module's constant, or None."""
    if isinstance(item, ast.Assign):
        value: ast.expr | None = item.value
    elif isinstance(item, ast.AnnAssign):
        value = item.value
    else:
        return None
    if isinstance(value, ast.Call):  # Field(600, ge=1), Field(default=600)
        given = [*value.args[:1], *(k.value for k in value.keywords if k.arg == "default")]
        value = given[0] if given else None
    return value.value if isinstance(value, ast.Constant) else None


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _leaves(data: object) -> Iterator[tuple[str, object]]:
    """Dotted key → value of a config file's leaves, a list's items each under `key[i]`."""
    for key, value in leaves(data).items():
        if isinstance(value, list):
            yield from ((f"{key}[{i}]", item) for i, item in enumerate(value))
        else:
            yield key, value


def _same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


def duplicates(
    defaults: dict[object, list[Site]], root: Path, conf: Iterable[Path], code: Iterable[Path]
) -> set[tuple[str, object]]:
    """The places under `root` holding a literal equal to a declared default, other than the one place
    that declares it: code modules (a module declaring it twice counts), and conf files' keys but the
    declaring field's own (an option file restating it, which stays equal to it:
    test_the_default_options_restate_the_schema_defaults_unchanged)."""
    found = set()
    for path in conf:
        for key, value in _leaves(yaml.safe_load(path.read_text())):
            if (
                isinstance(value, int | str)
                and not isinstance(value, bool)
                and value in defaults
                and _same(value, _key_of(defaults, value))
            ):
                field = re.sub(r"\[\d+\]$", "", key).rpartition(".")[2]
                if not any(field in site.fields for site in defaults[value]):
                    found.add((f"{path.relative_to(root)}:{key}", value))
    texts = {str(value) for value in defaults}
    for path in code:
        text = path.read_text()
        if not any(t in text for t in texts):
            continue
        rel = str(path.relative_to(root))
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
                continue
            value = node.value
            if isinstance(value, int | str) and value in defaults and _same(value, _key_of(defaults, value)):
                sites = defaults[value]
                if (rel, node.lineno) != sites[0][:2]:  # the first declaration is the truth; any other is not
                    found.add((rel, value))
    return found


def _key_of(defaults: dict[object, list[Site]], value: object) -> object:
    return next(k for k in defaults if k == value)


CODE_FILES = sorted(p for package in CODE for p in (ROOT / package).rglob("*.py"))


@pytest.fixture(scope="module")
def defaults() -> dict[object, list[Site]]:
    return declared_defaults(CODE_FILES, ROOT)


def test_no_new_literal_restates_a_declared_default(defaults: dict[object, list[Site]]) -> None:
    found = duplicates(defaults, ROOT, sorted((ROOT / "conf").rglob("*.yaml")), CODE_FILES)
    new = sorted(found - set(KNOWN), key=str)
    assert not new, (
        "a literal equal to a declared default (a second truth): derive it from the field (an import, "
        f"`Model.model_fields[name].default`; in a config file an interpolation `${{key}}`): {new}"
    )
    gone = sorted(set(KNOWN) - found, key=str)
    assert not gone, f"no longer found (take them out of KNOWN): {gone}"


def test_a_planted_duplicate_is_found(defaults: dict[object, list[Site]], tmp_path: Path) -> None:
    """The audit's own mutation check: a service's port (30001) written in a config file under another
    key and in code, found; under its own field's key (an option restating it), a round number, a power
    of two and the same digits as text, not."""
    (tmp_path / "conf").mkdir()
    planted = tmp_path / "conf" / "x.yaml"
    planted.write_text("user:\n  sim_port: 30001\n  port: 30001\n  tokens: 4096\n  name: '30001'\n")
    module = tmp_path / "m.py"
    module.write_text("PORT = 30001\nOTHER = 4096\n")
    assert duplicates(defaults, tmp_path, [planted], [module]) == {
        ("conf/x.yaml:user.sim_port", 30001),
        ("m.py", 30001),
    }


# ------------------------------------------------------------------ the defaults' option files restating them

# The option of each group that conf/config.yaml chooses is the default a run gets: a key it writes equal to
# the field's schema default restates it (the key stays: a key absent from the composed config is
# overridden only with '+'), so the two must stay equal. These keys of those files differ from the schema
# on purpose, each file for one reason; any other key that differs is a default with two values.
DIFFERENT: dict[str, tuple[str, str]] = {
    "conf/model/qwen3_4b_instruct_2507.yaml": (
        "a model's facts (its name, architecture, template, parsers): the schema describes no model",
        "model.name model.hf_id model.family model.context_length model.thinks model.chat.chat_template "
        "model.parsers.reasoning_parser model.parsers.tool_call_parser model.parsers.think_tags "
        "model.architecture.num_layers model.architecture.hidden_size model.architecture.ffn_hidden_size "
        "model.architecture.num_attention_heads model.architecture.num_query_groups "
        "model.architecture.kv_channels model.architecture.qk_layernorm model.architecture.norm_epsilon "
        "model.architecture.rotary_base model.architecture.vocab_size",
    ),
    "conf/hardware/h200x8.yaml": (
        "a machine's profile (its GPUs, parallelism and memory settings): the schema describes no machine",
        "hardware.name hardware.node_gpus hardware.gpu_memory_gib hardware.tensor_parallel "
        "hardware.sequence_parallel hardware.recompute.num_layers hardware.recompute_loss_function "
        "hardware.max_tokens_per_gpu hardware.log_probs_chunk_size hardware.sglang_attention_backend "
        "hardware.sglang_chunked_prefill_size",
    ),
    "conf/eval/default.yaml": (
        "a pipeline's eval serves the checkpoint with SGLang; t3rl_core's EvalConfig alone (a library "
        "user's) defaults to the reference engine, which needs no server",
        "eval.engine.name eval.engine.concurrency",
    ),
}


def _fallback(value: object) -> object:
    """A file's value as a default: `${oc.env:NAME,FALLBACK}` is FALLBACK where NAME is unset."""
    if isinstance(value, str):
        match = re.fullmatch(r"\$\{oc\.env:\w+,(.*)\}", value)
        if match:
            text = match.group(1).strip().strip("'\"")
            return None if text == "null" else text
    return value


def restated_differently() -> dict[str, set[str]]:
    """By default option file, the keys whose value (its fallback, for an environment reference) is not
    the schema default of the field it sets; interpolations of other keys derive theirs, not compared."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "gen_config_reference", ROOT / "scripts" / "gen_config_reference.py"
    )
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, gen)
    spec.loader.exec_module(gen)
    chosen = {group: option for group, option, _ in gen.defaults_list() if option != "null"}
    found: dict[str, set[str]] = {}
    for group in gen.GROUPS:
        for option in gen.options(group):
            default_option = chosen.get(group.name) == option.name
            model = group.model(option.data)
            rows = [
                r
                for s in gen.sections(model, gen._join(group.mount, group.prefix), group.name, "")
                for r in s.rows
            ]
            for key, written in option.keys.items():
                value = _fallback(written)
                if isinstance(value, dict) or (isinstance(value, str) and "${" in value):
                    continue
                row = next((r for r in rows if gen._matches(r.key, key)), None)
                if row is None:
                    continue
                field = row.doc.model.model_fields[row.doc.name]
                default = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
                default = getattr(default, "reference", default)  # a Secret's default as written
                # Another option's values are its own choices, but a distinctive default (a port, a path)
                # it writes unchanged is the default restated.
                if default != value and (default_option or distinctive(default)):
                    found.setdefault(str(option.path.relative_to(ROOT)), set()).add(key)
    return found


def test_the_default_options_restate_the_schema_defaults_unchanged() -> None:
    found = restated_differently()
    expected = {path: set(keys.split()) for path, (_, keys) in DIFFERENT.items()}
    assert found == expected, (
        "a key of a default option file and its field's schema default differ (a default with two values): "
        "change both to the one value, or say here why the file's differs"
    )


# ---------------------------------------------------------------------- the docs that print a default

# "`KEY` (default `VALUE`", "`KEY`, default 10": a page saying what a key's default is.
_SAYS_DEFAULT = re.compile(r"`([a-z_]+(?:\.[a-z_0-9]+)+)`[^`\n]{0,30}?\bdefault:?,? (?:`([^`]+)`|(\d[\d.]*))")
# A row of the configuration reference: | `key` | type | `default` | ...
_REFERENCE_ROW = re.compile(r"^\| `([^`]+)` \| [^|]* \| `([^`]*)` \|", re.MULTILINE)


def _equal(said: str, default: str) -> bool:
    try:
        return float(said) == float(default)
    except ValueError:
        return said == default


def test_docs_that_print_a_default_print_the_schema_default() -> None:
    """A page's "`KEY` (default `VALUE`)" agrees with the configuration reference, which
    scripts/gen_config_reference.py writes from the schema (tests/docs/test_config_reference.py)."""
    reference_dir = ROOT / "docs" / "reference" / "config"
    defaults: dict[str, set[str]] = {}
    for page in reference_dir.glob("*.md"):
        for key, default in _REFERENCE_ROW.findall(page.read_text()):
            defaults.setdefault(key, set()).add(default)
    claims = [
        (str(page.relative_to(ROOT)), key, quoted or bare)
        for page in sorted((ROOT / "docs").rglob("*.md"))
        if not page.is_relative_to(reference_dir)
        for key, quoted, bare in _SAYS_DEFAULT.findall(page.read_text())
        if key in defaults
    ]
    assert len(claims) >= 3, claims  # the pattern still reads the pages' way of saying it
    wrong = [
        (page, key, said, defaults[key])
        for page, key, said in claims
        if not any(_equal(said, d) for d in defaults[key])
    ]
    assert not wrong, f"a page says another default than the schema's (docs/reference/config): {wrong}"


# -------------------------------------------------------------------- a value derived by two formulas

# A value derived from settings (the GPUs of a train stage, its model-parallel size, the samples of a
# rollout) is computed in one place that the others read; each place computing it is listed with why.
FORMULAS: dict[str, tuple[str, dict[str, str]]] = {
    "world size (nodes × GPUs per node)": (
        r"nodes\s*\*\s*[\w.]*gpus_per_node",
        {
            "launch/config/schema.py": "the truth: HardwareConfig.world_size",
            "launch/checks/rules/batch.py": "LEFT: pre-flight rules are another helper's; use hw.world_size",
            "launch/checks/rules/resources.py": "LEFT: as batch.py (and a count of candidate nodes)",
        },
    ),
    "model-parallel size (TP × PP × CP)": (
        r"tensor_parallel\s*\*\s*[\w.]*pipeline_parallel\s*\*\s*[\w.]*context_parallel",
        {
            "launch/checks/context.py": "the truth: Scope.model_parallel",
            "launch/checks/rules/batch.py": "LEFT: pre-flight rules, another helper's; scope.model_parallel",
        },
    ),
    "samples of a rollout (prompts × samples per prompt)": (
        # `args.rollout_batch_size) * int(args.n_samples_per_prompt`, or read with getattr and a default
        r'rollout_batch_size"?(?:, \d+\) or \d+)?\)?\s*\*\s*[\w.(\s]*?'
        r'(?:getattr\(args, ")?n_samples_per_prompt',
        {
            "launch/checks/rules/batch.py": "the truth for the checks: _samples",
            "launch/checks/rules/megatron.py": "LEFT: pre-flight rules, another helper's; batch._samples",
            "launch/checks/rules/data_sizes.py": "LEFT: as megatron.py",
            "t3rl_core/hooks/slime.py": "slime's arguments at run time (no launch config here)",
        },
    ),
}


def test_each_derived_value_has_its_listed_formulas() -> None:
    texts = {str(p.relative_to(ROOT)): p.read_text() for p in CODE_FILES}
    for name, (pattern, places) in FORMULAS.items():
        found = {path for path, text in texts.items() if re.search(pattern, text)}
        assert found == set(places), f"{name} computed in {sorted(found)}; listed: {sorted(places)}"


# ------------------------------------------------------------------ one constant declared in two modules

# Module constants of one name (a leading underscore aside) and one literal value in several modules: one
# constant declared twice, which an edit of one leaves behind. Each left is listed with why.
TWIN_CONSTANTS: dict[str, str] = {
    "MASK": "LEFT: launch.config.secrets and three t3rl_core secret modules (another helper's area this "
    "session); t3rl_core.secret.MASK is the one to import",
    "CHANGES": "LEFT: two secret-word modules' thresholds (another helper's area this session)",
    "SETTLED_NS": "LEFT: compose_cache, hydra_internals, t3rl_core.installed: a home for it on every cold "
    "path without adding a module is still to find",
    "OVERALL": "LEFT: t3rl_core.eval.published would import statistics with t3rl_core.eval.metrics",
    "SLIME_COMMIT": "generated: each slime table records the commit it was read from (its generator's test)",
    "F_SETPIPE_SZ": "a Linux constant, in a sandbox child that imports nothing of the parent's",
    "CONTEXT": "LEFT: pre-flight rules' key names (another helper's area this session)",
    "EXTRA": "LEFT: as CONTEXT",
    "TOKENIZER": "LEFT: as CONTEXT",
    "ARCH": "LEFT: as CONTEXT",
    "PRIMARY_CONFIG": "LEFT: Hydra's composition and the direct one; either importing the other's makes an "
    "import circle (tests/architecture/test_import_graph.py)",
    "SELF": "LEFT: Hydra's `_self_` in the direct defaults list and its problems, which it imports lazily: "
    "importing it back makes an import circle",
}


# A module-level `NAME = <a number or a one-line string>` (read as text: parsing every module costs ~1 s).
_CONSTANT = re.compile(
    r"""^(_?[A-Z][A-Z0-9_]*) = (-?[\d.][\w.+-]*|"[^"\\\n]*"|'[^'\\\n]*')[ \t]*(?:#.*)?$""", re.MULTILINE
)


def _constants(text: str) -> Iterator[tuple[str, object]]:
    for name, literal in _CONSTANT.findall(text):
        try:
            value = ast.literal_eval(literal)
        except (ValueError, SyntaxError):
            continue
        if value not in (None, ""):
            yield name.lstrip("_"), value


def test_no_constant_is_declared_in_two_modules() -> None:
    where: dict[tuple[str, type, object], set[str]] = {}
    for path in CODE_FILES:
        for name, value in _constants(path.read_text()):
            # by type too: 30 seconds as an int and 30.0 as a float are two authors' numbers
            where.setdefault((name, type(value), value), set()).add(str(path.relative_to(ROOT)))
    twins = {name for (name, _, _), paths in where.items() if len(paths) > 1}
    new, gone = sorted(twins - set(TWIN_CONSTANTS)), sorted(set(TWIN_CONSTANTS) - twins)
    assert not new, f"declared again in another module (import it from the first): {new}"
    assert not gone, f"no longer twins (take them out of TWIN_CONSTANTS): {gone}"


def test_a_plan_is_built_for_the_dir_it_is_written_to(tmp_path: Path) -> None:
    """`t3rl plan` builds its plan in the checks for the dir it names before making it (single.py's
    _plan_dir_named) and then makes the dir (_plan_dir, RunDir.new): one formula (rundir.record_path), so
    the plan is not built a second time; a name taken in the same second is suffixed, and only then
    do the two differ (plan_run rebuilds for the dir made)."""
    from types import SimpleNamespace

    from launch.run import single

    run = SimpleNamespace(name="exp", paths=SimpleNamespace(plans_dir=str(tmp_path)))
    stamp = "20260101-000000"
    named = single._plan_dir_named(run, None, stamp)  # type: ignore[arg-type]
    made, fresh = single._plan_dir(SimpleNamespace(run=run), None, stamp)  # type: ignore[arg-type]
    assert fresh and made.path == named.path == (tmp_path / "exp" / stamp).resolve()
    again, _ = single._plan_dir(SimpleNamespace(run=run), None, stamp)  # type: ignore[arg-type]
    assert again.path == named.path.with_name(f"{stamp}-1")
