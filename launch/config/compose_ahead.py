"""Compose in a forked child while the parent imports and builds the schema.

A cold `t3rl plan|run|validate` spends about as long importing Hydra and composing as importing the
schema, checks and plan modules and building the validators, and neither needs the other until
validation. So the plain CLI path (`launch.cli.run_plain`) calls `start` before importing either: the
child imports Hydra and composes through the composition cache (`launch.config.resolved.composed_plain`,
exactly what `resolve` calls), and sends the result back through a pipe; the parent meanwhile goes on,
and `resolve` collects the result with `take`. On two cores that hides most of the composition.

The result is the one `resolve` would compute itself: a composition error comes back as its problems
and is raised as the same ConfigError; anything else going wrong in the child (a bug, a signal, a
result that does not pickle) makes `take` return None, so the parent composes in process and a bug
shows its own traceback. Nothing is forked where it cannot help or work: for a line the direct
composition reads (`launch.config.direct`: it composes in a few milliseconds, less than a child costs),
without `os.fork`, on one usable CPU, once a thread runs, or with `T3RL_COMPOSE_AHEAD=0`. The child
writes nothing but what composition itself writes (the composition cache entry, and any warning on
stderr, once).
"""

from __future__ import annotations

# Only what the interpreter has loaded at start-up: whatever is imported before the fork delays both
# processes (dataclasses, typing and pickle took ~20 ms); the rest is imported after it.
import os
import sys
from collections.abc import Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from launch.config.plain import Plain

ENV_SWITCH = "T3RL_COMPOSE_AHEAD"


def _key(overrides: Sequence[str], config_dirs: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(overrides), tuple(config_dirs)


class _Pending:
    """A child composing `key`, writing its pickled outcome to `fd`."""

    __slots__ = ("fd", "key", "pid")

    def __init__(self, key: tuple[tuple[str, ...], tuple[str, ...]], pid: int, fd: int) -> None:
        self.key, self.pid, self.fd = key, pid, fd


_pending: _Pending | None = None


def enabled() -> bool:
    """Whether a child can compose in parallel here (fork available, a second CPU, not switched off)."""
    if os.environ.get(ENV_SWITCH, "") == "0" or not hasattr(os, "fork"):
        return False
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return usable >= 2


def start(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> None:
    """Fork a child that composes this command line, unless one already does or it cannot help.
    Call it before importing Hydra or pydantic: the parent must not have started any thread."""
    global _pending
    if _pending is not None or not enabled() or _threads_running() or not _helps(overrides):
        return
    key = _key(overrides, config_dirs)
    try:
        read_fd, write_fd = os.pipe()
    except OSError:  # out of file descriptors: compose here
        return
    try:
        pid = os.fork()
    except OSError:  # a process limit, or a sandbox that forbids fork: compose here
        os.close(read_fd)
        os.close(write_fd)
        return
    if pid == 0:  # the child never returns from here
        os.close(read_fd)
        _compose_in_child(write_fd, key)
    os.close(write_fd)
    _pending = _Pending(key, pid, read_fd)


def _helps(overrides: Sequence[str]) -> bool:
    """A child pays for itself only where Hydra composes (its import and composition take about as long
    as the parent's imports); a line the direct composition reads composes in a few milliseconds."""
    from launch.config.direct.overrides import reads_directly  # lazy: not before the checks above

    return not reads_directly(overrides)


def composing(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> bool:
    """Whether a child is composing this command line now."""
    return _pending is not None and _pending.key == _key(overrides, config_dirs)


def _threads_running() -> bool:
    """A fork copies locks other threads may hold (logging, imports) and not the threads to free them."""
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1


def take(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> Plain | None:
    """The child's composition of this command line (raising its ConfigError as `resolve` would); None
    when no child composes it or the child failed: then the caller composes."""
    global _pending
    pending, _pending = _pending, None
    if pending is None:
        return None
    if pending.key != _key(overrides, config_dirs):
        _discard(pending)
        return None
    payload = _read_all(pending.fd)
    os.close(pending.fd)
    _, status = os.waitpid(pending.pid, 0)
    if status != 0 or not payload:
        return None
    import pickle  # lazy: after the fork (imported before it, it delays both processes)

    try:
        outcome = pickle.loads(payload)
    except Exception:  # a truncated or foreign payload: compose here instead
        return None
    if outcome[0] == "plain":
        return outcome[1]
    if outcome[0] == "error":
        from launch.config.errors import ConfigError  # lazy: only when the child reports an error

        raise ConfigError(outcome[1])
    return None


def discard() -> None:
    """Stop a child whose result will not be taken (the command ended before resolving)."""
    global _pending
    pending, _pending = _pending, None
    if pending is not None:
        _discard(pending)


def _discard(pending: _Pending) -> None:
    import signal  # lazy: only when a child is stopped

    os.close(pending.fd)
    try:
        os.kill(pending.pid, signal.SIGKILL)
        os.waitpid(pending.pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _compose_in_child(write_fd: int, key: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
    code = 1
    try:
        import pickle  # lazy: in the child, after the fork

        from launch.config.errors import ConfigError  # lazy: in the child, after the fork
        from launch.config.resolved import composed_plain  # lazy: in the child, after the fork
        from launch.config.secrets import scrub_standard_streams  # lazy: in the child, after the fork

        scrub_standard_streams()  # a composition warning is masked as the parent would mask it
        try:
            outcome: tuple[object, ...] = ("plain", composed_plain(*key))
        except ConfigError as error:
            outcome = ("error", [*error.problems, *error.warnings])
        payload = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view) :]
        code = 0
    except BaseException:  # any failure (a bug, an interrupt) hands composition back to the parent
        pass
    finally:
        sys.stderr.flush()
        # No atexit handlers, no flushing of buffers inherited from the parent: the parent owns those.
        os._exit(code)
