"""The defaults list: which config files a command line composes, in merge order, each at its package.

The rules are Hydra 1.3's with its default version base (1.1), for the defaults lists t3rl's configs
and users' config dirs write: group defaults (`model: qwen3_8b`, `optional local: default`, `null`),
absolute groups at a package (`/curriculum@stages.train.curriculum: bfcl_stage2`), `override` entries,
config defaults of the same group (`- toolrl`) and `_self_`. The tree is expanded as Hydra expands it:
children in reverse order, so an experiment's `override /model: x` is known before `model` is chosen;
the command line's choices win over those. Anything else (interpolated or listed options, `_here_`,
`_group_`/`_name_` packages, Hydra's own groups) and every case Hydra refuses or warns about raise
Unsupported.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any

from launch.config.direct.config_files import Repository
from launch.config.direct.unsupported import Unsupported
from t3rl_core.records import Record

SELF = "_self_"
_GLOBAL = "_global_"
# Groups whose options are written at the config's root (conf/config.yaml's `experiment: null` ones).
_GLOBAL_GROUPS = ("experiment", "hparams_search")
# Group, option and package names the direct composition handles.
_NAME = re.compile(r"/?[A-Za-z_][A-Za-z0-9_-]*(/[A-Za-z_][A-Za-z0-9_-]*)*")
_PACKAGE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")
_KEYWORDS = ("optional", "override")
# Package keywords Hydra rewrites (`_global_` is kept: the final package cuts at it).
_SPECIAL = re.compile(r"_here_|_group_|_name_")


# The records of this module are plain classes, not dataclasses: every cold command imports it, and a
# dataclass compiles its methods from text as its class is created (~9 M instructions for the four).
class Entry:
    """One item of a defaults list: a group default (`group`) or a config default (`path`)."""

    def __init__(
        self,
        group: str | None = None,
        path: str | None = None,
        value: str | None = None,
        package: str | None = None,
        optional: bool = False,
        override: bool = False,
        primary: bool = False,
    ) -> None:
        self.group, self.path, self.value, self.package = group, path, value, package
        self.optional, self.override, self.primary = optional, override, primary
        # Set from the containing config: its group path and its final package.
        self.base_dir: str | None = None
        self.parent_package: str | None = None
        # The file's `# @package`, made absolute (`_global_.…`).
        self.header: str | None = None
        self.deleted = False
        # The choice (command line or `override` entry) that set `value`, if one did.
        self.chosen_by: Choice | None = None

    def is_self(self) -> bool:
        return self.path == SELF

    def set_parent(self, base_dir: str, package: str) -> None:
        self.base_dir, self.parent_package = base_dir, package

    def name(self) -> str | None:
        if self.group is not None:
            return self.value
        assert self.path is not None
        return self.path.rpartition("/")[2]

    def group_path(self) -> str:
        assert self.base_dir is not None
        if self.group is not None:
            if self.group.startswith("/"):
                return self.group[1:]
            return self.group if self.base_dir == "" else f"{self.base_dir}/{self.group}"
        assert self.path is not None
        if self.path.startswith("/"):
            return self.path[1:].rpartition("/")[0]
        group = self.path.rpartition("/")[0]
        if self.base_dir == "":
            return group
        return self.base_dir if group == "" else f"{self.base_dir}/{group}"

    def config_path(self) -> str:
        if self.group is not None:
            return f"{self.group_path()}/{self.value}"
        assert self.path is not None and self.base_dir is not None
        if self.path.startswith("/"):
            return self.path[1:]
        return self.path if self.base_dir == "" else f"{self.base_dir}/{self.path}"

    def own_package(self) -> str | None:
        return self.package if self.package is not None else self.header

    def final_package(self, with_header: bool = True) -> str:
        package = self.own_package() if with_header else self.package
        if package is None:
            relative = self.group if self.group is not None else (self.path or "").rpartition("/")[0]
            package = relative.removeprefix("/").replace("/", ".")
        parent = self.parent_package
        assert parent is not None
        joined = package if parent == "" else (parent if package == "" else f"{parent}.{package}")
        cut = joined.rfind(_GLOBAL)
        return joined if cut == -1 else joined[cut + len(_GLOBAL) + 1 :]

    def override_key(self) -> str:
        key = self.group_path()
        final = self.final_package(with_header=False)
        if key.replace("/", ".") != final:
            key = f"{key}@{final or _GLOBAL}"
        return key


class Chosen(Record):
    """One config file of the defaults list, in merge order (Hydra's ResultDefault)."""

    config_path: str
    package: str
    # The config whose defaults list holds it (None for the primary config).
    parent: str | None
    override_key: str | None
    is_self: bool


class Choice:
    """A group's chosen option from the command line or an `override` entry (Hydra's override
    metadata): `containing` is the config file of the `override` entry, None on the command line."""

    def __init__(self, value: str | None, containing: str | None = None) -> None:
        self.value, self.containing = value, containing
        self.used = False


class _Node:
    def __init__(self, entry: Entry, parent: _Node | None) -> None:
        self.entry, self.parent = entry, parent
        self.children: list[_Node | Entry] | None = None


class DefaultsList:
    """The configs `primary` composes under the command line's group `choices` (group → option)."""

    def __init__(self, repo: Repository, choices: dict[str, Choice]) -> None:
        self.repo, self.choices = repo, choices
        self._known: dict[str, str | None] = {}
        # The sweepers the lists chose (`override /hydra/sweeper: optuna`): they shape Hydra's own node
        # alone, which the composition defers (launch.config.direct.compose.DeferredHydra).
        self.hydra_entries: list[str] = []

    def build(self, primary: str) -> list[Chosen]:
        root = Entry(path=primary, primary=True)
        root.set_parent("", "")
        if self.repo.load(primary) is None:
            raise Unsupported(f"no primary config {primary}")
        chosen: list[Chosen] = []
        self._collect(self._expand(root, None), chosen)
        keys = [c.override_key for c in chosen if not c.is_self and c.override_key is not None]
        if len(set(keys)) != len(keys) or not all(c.used for c in self.choices.values()):
            raise Unsupported("a group chosen twice, or a choice no defaults list has")
        return chosen

    def _expand(self, entry: Entry, parent: _Node | None) -> _Node:
        node = _Node(entry, parent)
        self._read_header(entry)
        if entry.group is not None:
            key = entry.override_key()
            if self._known.setdefault(key, entry.value) != entry.value:
                raise Unsupported(f"two options for {key}")
        if entry.name() is None:
            return node
        loaded = self.repo.load(entry.config_path())
        if loaded is None:
            if not entry.optional:
                self._refuse_missing(entry, parent)
                raise Unsupported(f"no config {entry.config_path()}")
            entry.deleted = True
            return node
        self._refuse_cycle(entry, parent)
        items = self._items(entry, loaded.defaults or ())
        if items:
            self._add_self(entry, items, bool(loaded.content))
        self._register_overrides(entry, items)
        children: list[_Node | Entry] = []
        for item in reversed(items):
            if item.is_self():
                children.append(item)
                continue
            if item.override:
                continue
            item.set_parent(entry.group_path(), entry.final_package())
            choice = self.choices.get(item.override_key()) if item.group is not None else None
            if choice is not None:
                item.value, choice.used, item.chosen_by = choice.value, True, choice
            child = self._expand(item, node)
            children.append(child.entry if child.children is None else child)
        if children:
            node.children = children[::-1]
        return node

    def _read_header(self, entry: Entry) -> None:
        loaded = self.repo.load(entry.config_path())
        header = loaded.package_header if loaded is not None else None
        # An empty file puts no key anywhere (any header fits); t3rl's own files are as shipped.
        mounted = entry.group is None or entry.package is not None
        if loaded is not None and loaded.content and not mounted and not self.repo.shipped(loaded):
            self._refuse_other_header(entry, header)
        if header is None:
            return
        if "_group_" in header or "_name_" in header:
            raise Unsupported("a deprecated package header")
        if header != _GLOBAL and not header.startswith(f"{_GLOBAL}."):
            header = f"{_GLOBAL}.{header}"
        entry.header = header

    def _refuse_cycle(self, entry: Entry, parent: _Node | None) -> None:
        """A file reached again from its own defaults list (Hydra recursed until Python's limit)."""
        chain = [entry]
        while parent is not None:
            chain.append(parent.entry)
            if parent.entry.config_path() == entry.config_path():
                from launch.config.direct import defaults_problems  # lazy: only to explain a mistake

                chain.reverse()  # the repeated file first, then each file its list names
                files = [self._file(e) for e in chain[:-1]]
                names = [str(e.value if e.group is not None else e.path) for e in chain[1:]]
                raise defaults_problems.cycle(files, names)
            parent = parent.parent

    def _refuse_other_header(self, entry: Entry, header: str | None) -> None:
        """A user's option whose `# @package` is not the one t3rl's options of its group have: its keys
        landed elsewhere (`_global_` in a model file: `hf_id` at the root) and the schema refused them
        there, far from the header line that put them there. An experiment's or a search's header is
        judged by launch.checks.package_header."""
        group = entry.group_path()
        if group in _GLOBAL_GROUPS:
            return
        shipped = self.repo.shipped_headers(group)
        if len(shipped) != 1 or header in shipped:
            return  # a group t3rl ships no option of, or options of several packages: any header fits
        from launch.config.direct import defaults_problems  # lazy: only to explain a mistake

        raise defaults_problems.other_header(self._file(entry), group, header, next(iter(shipped)))

    def _refuse_missing(self, entry: Entry, parent: _Node | None) -> None:
        """An option no config dir has, named by a user file's own defaults-list entry: refused at that
        file and line (Hydra blamed the command line's choice of the file). A choice (the command line's,
        or a file's `override` entry) is left to Hydra's words, which name the override or the file."""
        if entry.chosen_by is not None or parent is None or parent.entry.primary:
            return
        from launch.config.direct import defaults_problems  # lazy: only to explain a mistake

        name = str(entry.value if entry.group is not None else entry.path)
        group = entry.group_path() if entry.group is not None else entry.base_dir or ""
        raise defaults_problems.missing(self._file(parent.entry), name, group, self.repo.options(group))

    def _file(self, entry: Entry) -> str:
        return self.repo.path(entry.config_path()) or entry.config_path()

    def _items(self, entry: Entry, written: list[Any]) -> list[Entry]:
        """The items of `entry`'s defaults list; one Hydra refuses is refused at its file and line."""
        for item in written:
            if not isinstance(item, str | dict):  # Hydra refuses it too, naming no file
                from launch.config.direct import defaults_problems  # lazy: only to explain a mistake

                raise defaults_problems.wrong_item(self._file(entry), item)
        items: list[Entry] = []
        after_sweeper = False
        for item in written:
            if _sweeper_choice(item):  # an override entry: a plain one after it is refused by Hydra
                after_sweeper = True
                self.hydra_entries.append(str(next(iter(item.values()))))
                continue
            listed = _entry(item)
            if after_sweeper and not listed.override and not listed.is_self():
                raise Unsupported("an override entry before a plain one")
            items.append(listed)
        if sum(item.is_self() for item in items) > 1:
            from launch.config.direct import defaults_problems  # lazy: only to explain a mistake

            raise defaults_problems.self_twice(self._file(entry))
        return items

    @staticmethod
    def _add_self(entry: Entry, items: list[Entry], has_content: bool) -> None:
        selves = sum(item.is_self() for item in items)
        plain = any(not item.override for item in items)
        if not selves and plain:
            if entry.primary and has_content:
                raise Unsupported("a primary config without _self_ (Hydra warns)")
            items.append(Entry(path=SELF))

    def _register_overrides(self, entry: Entry, items: list[Entry]) -> None:
        seen_override = False
        for item in items:
            if item.is_self():
                continue
            item.set_parent(entry.group_path(), entry.final_package())
            if seen_override and not item.override:
                raise Unsupported("an override entry before a plain one")
            if item.override:
                seen_override = True
                self.choices.setdefault(item.override_key(), Choice(item.value, entry.config_path()))

    def _collect(self, node: _Node, out: list[Chosen]) -> None:
        if not node.children:
            self._emit(node.parent, node.entry, out)
            return
        for child in node.children:
            if isinstance(child, Entry):
                self._emit(node, child, out)
            else:
                self._collect(child, out)

    @staticmethod
    def _emit(tree: _Node | None, entry: Entry, out: list[Chosen]) -> None:
        if entry.deleted or entry.name() is None:
            return
        if entry.is_self():
            assert tree is not None
            owner = tree.entry
            parent = tree.parent.entry.config_path() if tree.parent is not None else None
            out.append(Chosen(owner.config_path(), owner.final_package(), parent, None, True))
            return
        parent = tree.entry.config_path() if tree is not None else None
        key = entry.override_key() if entry.group is not None else None
        out.append(Chosen(entry.config_path(), entry.final_package(), parent, key, False))


def _sweeper_choice(item: Any) -> bool:
    """`override /hydra/sweeper: <name>` of a sweeper Hydra has (its own `basic`, or a plugin
    installed: t3rl's searches name `optuna`)."""
    if not isinstance(item, dict) or len(item) != 1:
        return False
    ((key, value),) = item.items()
    words = str(key).split(" ")
    if words[:-1] != ["override"] or words[-1].lstrip("/") != "hydra/sweeper" or not _is_name(value):
        return False
    return value == "basic" or importlib.util.find_spec(f"hydra_plugins.hydra_{value}_sweeper") is not None


def _entry(item: Any) -> Entry:
    """One defaults-list item as written in a config file."""
    if isinstance(item, str):
        path, package = _split(item)
        if item == SELF:
            return Entry(path=SELF)
        return Entry(path=path, package=package)
    if not isinstance(item, dict) or len(item) != 1:
        raise Unsupported("a defaults-list item that is neither a name nor a one-key mapping")
    ((key, value),) = item.items()
    words = str(key).split(" ")
    if any(w not in _KEYWORDS for w in words[:-1]) or (value is not None and not _is_name(value)):
        raise Unsupported(f"a defaults-list item the direct composition does not handle: {item}")
    group, package = _split(words[-1])
    return Entry(
        group=group,
        value=value,
        package=package,
        optional="optional" in words[:-1],
        override="override" in words[:-1],
    )


def _split(text: str) -> tuple[str, str | None]:
    """`group@package` → (group, package), each a plain name (else Unsupported)."""
    name, at, package = text.partition("@")
    if not (name == SELF or _NAME.fullmatch(name)) or (at and not _PACKAGE.fullmatch(package)):
        raise Unsupported(f"a defaults-list name the direct composition does not handle: {text}")
    if name.lstrip("/").startswith("hydra") or (at and (name == SELF or _SPECIAL.search(package))):
        raise Unsupported(f"{text}: Hydra's own groups, or a package keyword")
    return name, package if at else None


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and value != SELF and bool(_NAME.fullmatch(value)) and "/" not in value
