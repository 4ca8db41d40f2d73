"""launch.run.rundir.platform_text: the manifest's platform string is `platform.platform()`'s, without
the child process `platform.platform()` starts for `uname -p`."""

from __future__ import annotations

import os
import platform
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.run.rundir import platform_text as platform_name

# Parts of a uname as they come, and with what platform.platform() rewrites.
PART = st.text(alphabet='abcXYZ019._-+ /:;"()\\', min_size=0, max_size=12) | st.sampled_from(
    ["6.1.0-18-amd64", "5.15.0-1057-aws", "x86_64", "aarch64", "unknown", "4.18.0-el8"]
)


def test_the_string_is_platform_platform_s_here() -> None:
    assert platform_name() == platform.platform()


def test_no_child_process_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("a child process was started")

    monkeypatch.setattr(subprocess, "Popen", refused)
    monkeypatch.setattr(os, "fork", refused)
    assert platform_name().startswith(os.uname().sysname)


@settings(max_examples=150, deadline=None)
@given(
    sysname=st.sampled_from(["Linux", "Darwin", "FreeBSD"]),
    release=PART,
    machine=PART,
    libc=st.sampled_from([("glibc", "2.36"), ("", ""), ("musl", "")]),
    processor=st.sampled_from(["unknown", "", "same as the machine"]),
)
def test_equal_to_platform_platform_for_any_uname(sysname, release, machine, libc, processor) -> None:
    """What platform.platform() writes for the same uname, with `uname -p` answering as Linux's
    coreutils do ("unknown") or as distributions that patch it do (the machine, or nothing)."""
    fake = os.uname_result((sysname, "node", release, "#1 SMP", machine))
    answer = machine if processor == "same as the machine" else processor
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "uname", lambda: fake)
        patch.setattr(platform, "libc_ver", lambda *a, **k: libc)
        patch.setattr(platform, "_uname_cache", None)
        patch.setattr(platform, "_platform_cache", {})
        patch.setattr(platform._Processor, "get", classmethod(lambda cls: answer))
        if sysname != "Linux":
            patch.setattr(platform, "architecture", lambda *a, **k: ("64bit", "ELF"))
            patch.setattr(platform, "mac_ver", lambda *a, **k: ("", ("", "", ""), ""))
        assert outcome(platform_name) == outcome(platform.platform)


def outcome(function) -> str:
    """The string, or the kind of exception (platform.platform() fails on some empty parts)."""
    try:
        return function()
    except Exception as error:  # compared, not handled
        return type(error).__name__
