"""The composition cache's digest of a search path follows links once: a link back to an ancestor
(a loop) is walked no deeper, and a file reached through a link is read (its change changes the digest)."""

from __future__ import annotations

import os
from pathlib import Path

from launch.config.compose_cache import _inputs_digest, _walk


def test_a_link_loop_is_walked_once_and_a_linked_file_counts(tmp_path: Path) -> None:
    root = tmp_path / "conf"
    (root / "model").mkdir(parents=True)
    (root / "model" / "a.yaml").write_text("x: 1\n")
    (root / "model" / "back").symlink_to(root, target_is_directory=True)  # a loop
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "b.yaml").write_text("y: 1\n")
    (root / "linked").symlink_to(shared, target_is_directory=True)
    walked = dict(_walk(str(root), ".yaml"))
    # The loop's directory is listed, and nothing below it: it was walked already.
    assert not [d for d in walked if d.startswith(os.path.join("model", "back", ""))], walked
    assert walked["linked"] == ["b.yaml"]
    before = _inputs_digest([str(root)])
    (shared / "b.yaml").write_text("y: 22\n")
    assert _inputs_digest([str(root)]) != before
