"""Another launcher holding a run dir's lock, as a forked process, for tests of the refusal."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from launch.files import exclusive_lock


@contextmanager
def held_by_another_process(lock: Path) -> Iterator[int]:
    """`lock` held by a forked process until the block ends; yields that process's pid."""
    held_r, held_w = os.pipe()
    release_r, release_w = os.pipe()
    holder = os.fork()
    if holder == 0:  # another launcher, holding the run dir until told to let go
        try:
            with exclusive_lock(lock):
                os.write(held_w, b"x")
                os.read(release_r, 1)
        finally:
            os._exit(0)
    try:
        assert os.read(held_r, 1) == b"x"
        yield holder
    finally:
        os.write(release_w, b"x")
        os.waitpid(holder, 0)
        for fd in (held_r, held_w, release_r, release_w):
            os.close(fd)
