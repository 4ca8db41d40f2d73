"""Credentials masked in the output of this process and of everything it starts.

SGLang logs its server arguments, `api_key` included, when it starts: the server t3rl starts with a
key (t3rl_core.secret_launch) calls `mask_output` first, so no log, file or terminal gets the key.

`mask_output(values)` points file descriptors 1 and 2 (which every child inherits) at pipes read by a
copier forked from this process, which writes each line to the original stdout or stderr with every
value masked (also as a repr, JSON or a URL escapes it, or cut short: t3rl_core.secret_pieces; SGLang
logs `ServerArgs(api_key='…')` through repr, which doubles a backslash), and every credential
`t3rl_core.secret.mask_text` knows by its form (a request log's `Authorization: Bearer …`, a URL's
`?token=…`). The copier ends when the last writer of both pipes is
gone, so the last words of the process and of its children are copied too.
"""

from __future__ import annotations

import os
import selectors
import signal
import sys
from collections.abc import Iterable
from functools import lru_cache

from t3rl_core.secret import mask_text
from t3rl_core.secret_pieces import mask_values
from t3rl_core.secret_shapes import PemLines

MASK = b"***"
# A line is copied once its end arrives; a longer run without one is copied in pieces of this size,
# keeping back enough bytes that a value split between two reads is still masked.
_CHUNK = 65536


def mask_output(values: Iterable[str]) -> None:
    """From now on, every line this process (or a child) writes to fd 1 or 2 has `values` masked."""
    secrets = sorted({v.encode() for v in values if v}, key=len, reverse=True)
    if not secrets:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pipes = {target: os.pipe() for target in (1, 2)}
    originals = {target: os.dup(target) for target in pipes}
    if os.fork() == 0:
        for _, write in pipes.values():
            os.close(write)
        # Signals to the process group stop the writers; the copier copies their last words, then ends.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        code = 0
        try:
            _copy({read: originals[target] for target, (read, _) in pipes.items()}, secrets)
        except BaseException:  # a copier that fails still leaves without the parent's cleanup
            code = 1
        os._exit(code)  # the parent's atexit handlers and buffers are not the copier's
    for target, (read, write) in pipes.items():
        os.dup2(write, target)
        os.close(write)
        os.close(read)
        os.close(originals[target])


def _copy(sources: dict[int, int], secrets: list[bytes]) -> None:
    """Copy each readable fd to its target fd, line by line, masked, until every source is closed."""
    longest = max(len(s) for s in secrets)
    pending = dict.fromkeys(sources, b"")
    # A private key printed over lines can arrive over several reads: its body is masked up to its END.
    pems = {fd: PemLines() for fd in sources}
    with selectors.DefaultSelector() as selector:
        for fd in sources:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                fd = key.fd
                data = os.read(fd, _CHUNK)
                if not data:
                    selector.unregister(fd)
                    _write(sources[fd], _masked(pending.pop(fd), secrets, pems[fd]))
                    continue
                buffer = pending[fd] + data
                end = max(buffer.rfind(b"\n"), buffer.rfind(b"\r")) + 1
                if end == 0 and len(buffer) > _CHUNK:
                    end = _cut_outside(buffer, len(buffer) - longest + 1, secrets)
                pending[fd] = buffer[end:]
                _write(sources[fd], _masked(buffer[:end], secrets, pems[fd]))


def _cut_outside(buffer: bytes, end: int, secrets: list[bytes]) -> int:
    """`end`, moved back to the start of any value it would split."""
    moved = True
    while moved:
        moved = False
        for secret in secrets:
            start = buffer.find(secret, max(0, end - len(secret) + 1))
            if start != -1 and start < end < start + len(secret):
                end, moved = start, True
    return end


def _masked(data: bytes, secrets: list[bytes], pem: PemLines) -> bytes:
    for secret in secrets:
        data = data.replace(secret, MASK)
    text = data.decode("utf-8", "surrogateescape")  # bytes that are not UTF-8 are copied as they came
    masked = mask_text(mask_values(text, _values(tuple(secrets)), _credential))
    if pem.needed(masked):
        masked = "".join(pem(line) for line in masked.splitlines(keepends=True))
    return data if masked == text else masked.encode("utf-8", "surrogateescape")


@lru_cache(maxsize=1)
def _values(secrets: tuple[bytes, ...]) -> tuple[str, ...]:
    return tuple(secret.decode() for secret in secrets)


def _credential(value: str) -> bool:
    return True  # every value the copier masks is one (a key's beginning cut short is masked too)


def _write(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]
