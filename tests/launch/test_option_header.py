"""`compose.option_package` reads a config file's `# @package` header without Hydra building its OmegaConf
tree (`hydra_internals.config_header`), and says what Hydra's full load says: for every shipped group option
and for a user's files of every unusual kind (bad YAML, duplicate keys, keys YAML reads as no text, a scalar
file, an odd header, bytes that are not UTF-8), the same package or the same error."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.config import compose
from launch.config import hydra_internals as internals


def _by_hydra(config_path: str, dirs: tuple[str, ...]) -> tuple[str, object]:
    """Hydra's own answer: the header's package from a full load, or the error's type and words."""
    loader = compose._loader(compose._normalise_dirs(dirs))
    try:
        result = loader.repository.load_config(config_path)
    except Exception as error:  # compared as they are
        return "error", (type(error), str(error))
    package = result.header.get("package") if result is not None else None
    return "package", package if isinstance(package, str) else None


def _ours(config_path: str, dirs: tuple[str, ...]) -> tuple[str, object]:
    try:
        return "package", compose.option_package(config_path, dirs)
    except Exception as error:  # compared as they are
        return "error", (type(error), str(error))


SHIPPED = [f"{g}/{o}" for g in compose.groups(()) for o in compose.group_options(g, ())]


def test_every_shipped_option_is_read_without_building_its_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = {path: _by_hydra(path, ()) for path in SHIPPED}
    assert len(expected) > 50 and any(v == ("package", "_global_") for v in expected.values())

    def refused(*_: object, **__: object) -> None:
        raise AssertionError("Hydra's full load of a plain option")

    from hydra._internal.config_repository import ConfigRepository

    monkeypatch.setattr(ConfigRepository, "load_config", refused)
    assert {path: _ours(path, ()) for path in SHIPPED} == expected


HEADERS = ["", "# @package _global_\n", "# @package env.user\n", "#  @package   hardware  \n"]
HEADERS += ["# a comment\n"]
HEADERS += ["# @package a b\n", "# @package\n", "\n\n# @package late\n", "# @other x\n# @package two\n"]
BODIES = [
    "name: mine\nseed: 3\n",
    "",
    "a:\n  b: [1, 2.5, null, true, text]\n",
    "on: 1\n",  # a key read as a boolean
    "1: x\n",  # a key read as a number
    "~: x\n",  # a null key
    "a: 1\na: 2\n",  # a duplicate key
    "a: [1,\n",  # not YAML
    "just text\n",  # a scalar file
    "- 1\n- 2\n",  # a list file
    "a: !!binary aGk=\n",  # bytes
    "a: 2001-01-01\n",  # a date (OmegaConf's loader keeps it text)
    "a: ${b}\nb: '${oops'\n",  # interpolations, one broken
    "x: " + "y" * 600 + "\n",  # a header cut at 512 characters
]


@settings(max_examples=60, deadline=None)
@given(header=st.sampled_from(HEADERS), body=st.sampled_from(BODIES), raw=st.sampled_from([b"", b"\xff\xfe"]))
def test_a_user_file_of_any_kind_gets_what_hydras_load_gives(
    tmp_path_factory: pytest.TempPathFactory, header: str, body: str, raw: bytes
) -> None:
    conf = tmp_path_factory.mktemp("conf")
    (conf / "mine").mkdir()
    (conf / "mine" / "opt.yaml").write_bytes(header.encode() + raw + body.encode())
    dirs = (str(conf),)
    assert _ours("mine/opt", dirs) == _by_hydra("mine/opt", dirs)


def test_a_file_hydra_cannot_tell_plainly_falls_back_to_its_load(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keys.yaml").write_text("# @package x\non: 1\n")
    (tmp_path / "mine" / "plain.yaml").write_text("# @package x\nname: 1\n")
    loader = compose._loader((str(tmp_path),))
    assert internals.config_header(loader, "mine/keys") is None  # a boolean key: Hydra's load decides
    assert internals.config_header(loader, "mine/plain") == {"package": "x"}
    assert internals.config_header(loader, "mine/absent") is None
