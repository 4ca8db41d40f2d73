"""A hunt over the STRUCTURE of a user's config files: every shipped group file under conf/, copied into a
config dir of the user's own under a new option name, chosen by override, and mutated as a hand-written or
editor-saved file may be (empty, a list, a misspelt header, a duplicated key, tabs, a BOM, bytes that are
not UTF-8, a defaults list naming what is not there, an interpolation to nowhere, a directory where the
file should be…).

The group files are enumerated from conf/ (a new group file is hunted without a line here); the command
that chooses each (`host`) is found once for all files, in their sorted order: the host of the group's
option before it, when choosing this option there validates too (a group's options mostly need the same
experiment: 175 validates find the 74 hosts, not 259, the same hosts; ~2-3 s of CPU less); else the first of
`+experiment=quickstart` and the shipped experiments on which choosing the shipped option validates, by
the group's name or, for a group the experiments mount elsewhere (`- /curriculum@stages.train.curriculum:
x`), by each package they mount it at, the experiments already choosing that option first; then the same
with `executor=slurm` (a layout of several nodes). A file no host validates fails
`test_every_shipped_group_file_is_hunted`.

A case must end one of two ways (`judge`):
- refused: `t3rl validate` exits 2 with problems, one naming the user's file (and its line, where YAML
  gives one) with a fix; a fix that is a command line (`sed -i …`, `mv …`) or overrides, applied as the
  user would, validates; nothing is written to the working directory or the config dir;
- accepted: only where the mutation keeps the file's meaning (`KEEPS`), and then the composition equals
  the unmutated copy's.

`python -m tests.support.file_hunt` runs every mutation of every file and lists the holes;
tests/launch/test_config_file_hunt.py runs each mutation on a rotation of the files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

CONF = Path(__file__).resolve().parents[2] / "conf"
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
FILES = sorted(p.relative_to(CONF).with_suffix("").as_posix() for p in CONF.glob("*/*.yaml"))
OPTIONAL = ("experiment", "hparams_search")
# An experiment's defaults-list entry mounting a group elsewhere (`- /published@eval.published: x`).
_MOUNT = re.compile(r"^\s*- /(?P<group>\w+)@(?P<package>[\w.]+): (?P<option>\w+)", re.M)
# A host's last resort: the local executor refuses a layout of several nodes.
_EXECUTORS = ((), ("executor=slurm",))
_BLOCK = re.compile(
    r"^error (?P<key>.*?): (?P<message>.*?)\n\s+set in: (?P<source>.*?)\n\s+fix: (?P<fix>.*?)$", re.M
)
OPTION = "mine"


@dataclass(frozen=True)
class Target:
    """A shipped group file and the overrides that choose it on a command line that validates."""

    group: str
    option: str
    host: tuple[str, ...]
    key: str

    def choose(self, option: str) -> list[str]:
        if self.group == "experiment":
            return [f"+experiment={option}"]
        plus = "+" if self.group in OPTIONAL else ""
        return [*self.host, f"{plus}{self.key}={option}"]

    @property
    def text(self) -> str:
        return (CONF / self.group / f"{self.option}.yaml").read_text(encoding="utf-8")


def _validates(argv: list[str]) -> bool:
    from tests.support.cli_app import invoke

    return invoke(["validate", *argv]).exit_code == 0


def target(path: str) -> Target | None:
    """The file `group/option` with a host on which choosing it validates; None when none does."""
    return _targets()[path]


@cache
def _targets() -> dict[str, Target | None]:
    """Every file's target, found in FILES' order whatever order the tests ask in (the hosts do not depend
    on which case ran first): the host of the group's previous option is tried first, where it chose the
    option by the group's name."""
    found: dict[str, Target | None] = {}
    previous: Target | None = None
    for path in FILES:
        group, option = path.split("/")
        # Not for a group the experiments mount elsewhere: there the ones already choosing the option
        # come first (`_keys`), and a sibling's place (an SFT curriculum in an RL stage) is a worse host.
        if previous is not None and previous.group == group and previous.key == group != "experiment":
            again = Target(group, option, previous.host, previous.key)
            if _validates(again.choose(option)):
                found[path] = previous = again
                continue
        found[path] = _first_target(group, option)
        previous = found[path] or previous
    return found


def _first_target(group: str, option: str) -> Target | None:
    """The first host in `_keys`' order (with each executor) on which choosing `group/option` validates."""
    if group == "experiment":
        return Target(group, option, (), group) if _validates([f"+experiment={option}"]) else None
    for extra in _EXECUTORS:
        for experiment, key in _keys(group, option):
            t = Target(group, option, (f"+experiment={experiment}", *extra), key)
            if _validates(t.choose(option)):
                return t
    return None


def _keys(group: str, option: str) -> list[tuple[str, str]]:
    """(experiment, override key) pairs that may choose `group/option`: each package an experiment mounts
    the group at, those already holding `option` first, or, for a group no experiment mounts, its name."""
    experiments = ["quickstart", *EXPERIMENTS]
    mounts = [
        (m["option"] != option, experiment, f"{group}@{m['package']}")
        for experiment in experiments
        for m in _MOUNT.finditer((CONF / "experiment" / f"{experiment}.yaml").read_text(encoding="utf-8"))
        if m["group"] == group
    ]
    if not mounts:
        return [(experiment, group) for experiment in experiments]
    return [(experiment, key) for _, experiment, key in sorted(mounts, key=lambda m: m[0])]


# ------------------------------------------------------------------------------------------ mutations
# Each writes the mutated option into `group_dir` (the user's `<dir>/<group>/`) as OPTION and returns the
# extra overrides it needs (mostly none). `text` is the shipped file's text.


def _write(group_dir: Path, text: str | bytes) -> list[str]:
    path = group_dir / f"{OPTION}.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return []


def _header_end(lines: list[str]) -> int:
    """The index of the first line after the leading comment/blank lines."""
    for i, line in enumerate(lines):
        if line.strip() and not line.lstrip().startswith("#"):
            return i
    return len(lines)


def _header(text: str) -> str | None:
    m = re.search(r"^#\s*@package\s+(\S+)\s*$", text, re.M)
    return m[1] if m else None


def _first_key_line(text: str) -> tuple[int, str, str] | None:
    """The first top-level `key: scalar` line (index, key, value), comments stripped."""
    for i, line in enumerate(text.splitlines()):
        m = re.match(r"^([A-Za-z_][\w-]*):[ \t]+([^#\s{\[&*!|>][^#]*?)\s*(#.*)?$", line)
        if m and m[1] != "defaults":
            return i, m[1], m[2]
    return None


def _with_default(text: str, entry: str) -> str:
    """`text` with `entry` (a defaults-list item's YAML) in its defaults list, made when it has none."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip() == "defaults:":
            return "\n".join([*lines[: i + 1], f"  - {entry}", *lines[i + 1 :]]) + "\n"
    end = _header_end(lines)
    return "\n".join([*lines[:end], "defaults:", f"  - {entry}", "  - _self_", *lines[end:]]) + "\n"


def _replace_line(text: str, index: int, new: str) -> str:
    lines = text.splitlines()
    lines[index] = new
    return "\n".join(lines) + "\n"


def _key_path(group: str, text: str, key: str) -> str:
    package = _header(text)
    if package == "_global_":
        return key
    return f"{package or group}.{key}"


MUTATIONS: dict[str, Callable[[Path, str, str], list[str] | None]] = {}
# Mutations after which the file means what it meant: accepted only with the unmutated composition.
KEEPS = {"bom", "crlf", "anchor", "merge key", "megabyte of comments", "reflowed"}


def mutation(
    name: str,
) -> Callable[[Callable[[Path, str, str], list[str] | None]], Callable[..., list[str] | None]]:
    def register(f: Callable[[Path, str, str], list[str] | None]) -> Callable[..., list[str] | None]:
        MUTATIONS[name] = f
        return f

    return register


# A mutation returns None when it does not apply to the file (no header to misspell, no scalar key).
@mutation("empty")
def _empty(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, "")


@mutation("only a comment")
def _comment(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, "# nothing yet\n")


@mutation("a list")
def _list(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, "- a\n- b\n")


@mutation("a scalar")
def _scalar(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, "just some text\n")


@mutation("no header")
def _no_header(d: Path, group: str, text: str) -> list[str] | None:
    if _header(text) is None:
        return None
    return _write(d, re.sub(r"^#\s*@package.*\n", "", text, flags=re.M))


@mutation("misspelt header")
def _misspelt_header(d: Path, group: str, text: str) -> list[str] | None:
    if _header(text) is None:
        return None
    return _write(d, re.sub(r"^#\s*@package", "# @pakage", text, count=1, flags=re.M))


@mutation("wrong header")
def _wrong_header(d: Path, group: str, text: str) -> list[str] | None:
    wrong = "_global_" if _header(text) != "_global_" else "somewhere.else"
    body = re.sub(r"^#\s*@package.*\n", "", text, flags=re.M)
    return _write(d, f"# @package {wrong}\n{body}")


@mutation("duplicate key")
def _duplicate(d: Path, group: str, text: str) -> list[str] | None:
    found = _first_key_line(text)
    if found is None:
        return None
    _, key, value = found
    return _write(d, f"{text.rstrip()}\n{key}: {value}\n")


@mutation("tab indentation")
def _tabs(d: Path, group: str, text: str) -> list[str] | None:
    if not re.search(r"^  \S", text, re.M):
        return None
    return _write(d, re.sub(r"^  (?=\S)", "\t", text, flags=re.M))


@mutation("bom")
def _bom(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, "\ufeff" + text)


@mutation("crlf")
def _crlf(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, text.replace("\n", "\r\n"))


@mutation("not utf-8")
def _latin1(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, text.encode() + "# caf\xe9\n".encode("latin-1"))


@mutation("not yaml")
def _not_yaml(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, f"{text.rstrip()}\nbroken: [1, 2\n")


@mutation("anchor")
def _anchor(d: Path, group: str, text: str) -> list[str] | None:
    return _first_value(d, text, lambda key, old: f"&first {old}")


@mutation("merge key")
def _merge(d: Path, group: str, text: str) -> list[str] | None:
    body = yaml.safe_load(text) or {}
    nested = [k for k, v in body.items() if isinstance(v, dict) and v and k != "defaults"]
    if not nested:
        return None
    key = nested[0]
    kept = {k: v for k, v in body.items() if k != key}
    header = f"# @package {_header(text)}\n" if _header(text) else ""
    merged = f"{key}:\n  <<: &base {json.dumps(body[key])}\n"
    return _write(d, header + yaml.safe_dump(kept, sort_keys=False) + merged)


@mutation("reflowed")
def _reflowed(d: Path, group: str, text: str) -> list[str] | None:
    body = yaml.safe_load(text) or {}
    header = f"# @package {_header(text)}\n" if _header(text) else ""
    return _write(d, header + yaml.safe_dump(body, sort_keys=False, default_flow_style=True))


@mutation("megabyte of comments")
def _megabyte(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, text + ("# " + "x" * 98 + "\n") * 10_000)


@mutation("very deep")
def _deep(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, f"{text.rstrip()}\ndeep: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n")


@mutation("key of another group")
def _moved(d: Path, group: str, text: str) -> list[str] | None:
    key = "seed" if _header(text) != "_global_" else "hf_id"
    return _write(d, f"{text.rstrip()}\n{key}: 3\n")


def _first_value(d: Path, text: str, value: Callable[[str, str], str]) -> list[str] | None:
    """The file with its first top-level scalar's value replaced by `value(key, old value)`."""
    found = _first_key_line(text)
    if found is None:
        return None
    i, key, old = found
    return _write(d, _replace_line(text, i, f"{key}: {value(key, old)}"))


@mutation("missing interpolation")
def _missing_interpolation(d: Path, group: str, text: str) -> list[str] | None:
    return _first_value(d, text, lambda key, old: "${no_such_section.no_such_key}")


@mutation("self interpolation")
def _self_interpolation(d: Path, group: str, text: str) -> list[str] | None:
    return _first_value(d, text, lambda key, old: "${" + _key_path(group, text, key) + "}")


@mutation("unknown resolver")
def _resolver(d: Path, group: str, text: str) -> list[str] | None:
    return _first_value(d, text, lambda key, old: "${no_such_resolver:1}")


@mutation("default: missing option")
def _missing_option(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, _with_default(text, "no_such_option"))


@mutation("default: missing group")
def _missing_group(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, _with_default(text, "/no_such_group: x"))


@mutation("default: _self_ twice")
def _self_twice(d: Path, group: str, text: str) -> list[str] | None:
    twice = _with_default(text, "_self_")
    return _write(d, twice if twice.count("- _self_") > 1 else _with_default(twice, "_self_"))


@mutation("default: wrong type")
def _wrong_type(d: Path, group: str, text: str) -> list[str] | None:
    return _write(d, _with_default(text, "3"))


@mutation("default: cycle")
def _cycle(d: Path, group: str, text: str) -> list[str] | None:
    header = f"# @package {_header(text)}\n" if _header(text) else ""
    (d / "other.yaml").write_text(f"{header}defaults:\n  - {OPTION}\n")
    return _write(d, _with_default(text, "other"))


@mutation("a directory")
def _directory(d: Path, group: str, text: str) -> list[str] | None:
    (d / f"{OPTION}.yaml").mkdir()
    return []


@mutation("dangling symlink")
def _dangling(d: Path, group: str, text: str) -> list[str] | None:
    (d / f"{OPTION}.yaml").symlink_to(d / "nowhere.yaml")
    return []


@mutation("unreadable")
def _unreadable(d: Path, group: str, text: str) -> list[str] | None:
    if os.geteuid() == 0:  # root reads it anyway
        return None
    _write(d, text)
    (d / f"{OPTION}.yaml").chmod(0)
    return []


# ------------------------------------------------------------------------------------------ the judge
def _errors(output: str) -> list[dict[str, str]]:
    return [m.groupdict() for m in _BLOCK.finditer(output)]


def _tree(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink() or p.is_dir():
            out[str(p)] = None
        else:
            try:
                out[str(p)] = p.read_bytes()
            except OSError:
                out[str(p)] = b"?"
    return out


def _apply(fix: str, argv: list[str], error: dict[str, str], cwd: Path) -> list[str] | None:
    """The command line after the fix, run as the user would; None when the fix is not mechanical."""
    from tests.support.fix_applier import apply_first_fix

    command = re.search(r"((?:sed -i|mv|chmod|rm|echo|printf) .*)$", fix)
    if command:
        subprocess.run(["bash", "-c", command[1]], cwd=cwd, check=True, capture_output=True)
        return argv
    if "<" in fix or not error["source"].startswith("override"):
        return None  # a placeholder, or a key a file set: a fix for the user's judgement
    return apply_first_fix(argv, error)


def _fixes_validate(argv: list[str], error: dict[str, str], conf: Path, file: Path) -> str | None:
    """Applies the first fix, and the next while the file is named again (a file may hold the mistake
    twice), until the command validates; the hole when it does not, None when a fix is not mechanical."""
    from tests.support.cli_app import invoke

    for _ in range(3):
        fixed = _apply(error["fix"], argv, error, conf)
        if fixed is None:
            return None
        again = invoke(["validate", *fixed])
        if again.exit_code == 0:
            return None
        named = [e for e in _errors(again.output) if str(conf) in e["source"]]
        if not named or named[0] == error:
            return f"its fix `{error['fix']}` does not validate: {again.output[-600:]}"
        argv, error = fixed, named[0]
    return f"its fixes do not end: {error}"


def judge(path: str, name: str, root: Path) -> str | None:
    """The hole of mutation `name` on the shipped file `path` (a config dir made under `root`), or None."""
    from launch.config.resolved import composed_plain
    from tests.support.cli_app import invoke

    t = target(path)
    if t is None:
        return None
    conf, work = root / "userconf", root / "work"
    (conf / t.group).mkdir(parents=True)
    work.mkdir(exist_ok=True)
    extra = MUTATIONS[name](conf / t.group, t.group, t.text)
    if extra is None:
        return None
    file = conf / t.group / f"{OPTION}.yaml"
    argv = ["--config-dir", str(conf), *t.choose(OPTION), *extra]
    before = _tree(conf), _tree(work)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        result = invoke(["validate", *argv])
        if (_tree(conf), _tree(work)) != before:
            return f"validate wrote files: {sorted(set(_tree(conf)) ^ set(before[0]))}"
        if result.exit_code == 0:
            if composed_plain(argv[2:], (str(conf),)).data == _baseline(t, root):
                return None  # it means what the unmutated file means
            if name in KEEPS:
                return "accepted with another config than the unmutated file's"
            return f"accepted (exit 0) with another config: {result.output[-400:]}"
        if result.exit_code != 2:
            return f"exit {result.exit_code}: {result.output[-600:]}"
        errors = _errors(result.output)
        named = [
            e
            for e in errors
            if str(file) in e["message"] + e["source"] + e["fix"] or "mine.yaml" in e["source"]
        ]
        if not named:
            return f"refused without naming {file.name}: {result.output[-900:]}"
        return _fixes_validate(argv, named[0], conf, file)
    finally:
        os.chdir(cwd)
        for p in conf.rglob("*"):
            if not p.is_symlink():
                p.chmod(0o755)


def _baseline(t: Target, root: Path) -> object:
    """The composition of the unmutated file under the same name, from `root`/baseline, in this cwd (a
    composition holds paths read from the working directory)."""
    from launch.config.resolved import composed_plain

    conf = root / "baseline"
    (conf / t.group).mkdir(parents=True, exist_ok=True)
    shutil.copy(CONF / t.group / f"{t.option}.yaml", conf / t.group / f"{OPTION}.yaml")
    return composed_plain(t.choose(OPTION), (str(conf),)).data


def main() -> int:
    import tempfile

    holes = 0
    names = sys.argv[1:] or list(MUTATIONS)
    for path in FILES:
        for name in names:
            with tempfile.TemporaryDirectory() as root:
                try:
                    hole = judge(path, name, Path(root))
                except AssertionError as error:  # invoke's: an exception or a traceback
                    hole = f"crashed: {str(error)[:300]}"
            if hole:
                holes += 1
                print(f"{path} [{name}]: {hole}\n")
    print(f"{holes} holes")
    return 1 if holes else 0


if __name__ == "__main__":
    sys.exit(main())
