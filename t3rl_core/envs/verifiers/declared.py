"""What an installed environment's package declares it needs, against what is installed here: its
`Requires-Dist: verifiers…` line read from the metadata of the distribution beside the module (nothing
imported). An environment written for another verifiers API imports or loads in ways whose errors name
verifiers' internals, far from the cause; pre-flight names the cause."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from t3rl_core.installed import package_versions

_LIBRARIES = ("verifiers",)


def requirement_problem(env_id: str, module: str) -> str | None:
    """Why the installed environment `module` is not what `env_id` asks for (`owner/name@version`) or
    cannot run with the installed verifiers (None = it can, or its package declares nothing to read)."""
    twice = claimed_twice(module)
    if twice is not None:
        return twice
    metadata = _metadata(module)
    pinned = env_id.partition("@")[2]
    if pinned:
        installed_as = None if metadata is None else metadata.parent.name[: -len(".dist-info")]
        if installed_as is None or installed_as.partition("-")[2] != pinned:
            found = "no package metadata beside it" if installed_as is None else installed_as
            return (
                f"env.id asks for version {pinned} of '{env_id.partition('@')[0]}', but module '{module}' "
                f"is installed as {found}: `prime env install {env_id}`, or drop @{pinned} to play what "
                "is installed"
            )
    if metadata is None:
        return None
    # Lazy: ~20 ms of imports at a cold `t3rl validate`, needed only for an env installed as a package.
    from email.parser import HeaderParser

    from packaging.requirements import InvalidRequirement, Requirement

    requirements = []
    for line in HeaderParser().parsestr(metadata.read_text(encoding="utf-8")).get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if not requirement.marker or requirement.marker.evaluate({"extra": ""}):
            requirements.append(requirement)
    # Every distribution it requires that is installed here, not verifiers alone: one it imports at
    # another version (installed with --no-deps, upgraded since) fails inside the environment's code.
    installed = package_versions(tuple(r.name.lower() for r in requirements))
    for requirement in requirements:
        name = requirement.name.lower()
        version = installed.get(name)
        if version is not None and not requirement.specifier.contains(version, prereleases=True):
            locked = " (t3rl's lock)" if name in _LIBRARIES else ""
            return (
                f"environment '{env_id}' ({metadata.parent.name}) requires {requirement}, but "
                f"{name} {version} is installed{locked}: install a release of the environment written "
                f"for {name} {version}"
                + ("" if locked else f", or pip install '{name}{requirement.specifier}'")
            )
    return None


def installed_release(module: str) -> dict[str, str]:
    """The installed environment's package and version, from the dist-info beside its module ({} for a
    module installed without one): what rows prepared from it record, and the world compares."""
    metadata = _metadata(module)
    if metadata is None:
        return {}
    name, _, version = metadata.parent.name[: -len(".dist-info")].partition("-")
    return {"package": name, "version": version} if version else {}


def claimed_twice(module: str) -> str | None:
    """Why no one release of `module` is installed, when two distributions beside it claim its name
    (prime's install and a pip install of another release, or of another hub's environment of that
    name, write one module's files): which files are there is whichever installed last, and the release
    read for it was the one the directory happened to list first. None when at most one claims it."""
    found = _dist_infos(module)
    if len(found) < 2:
        return None
    names = ", ".join(sorted(path.parent.name[: -len(".dist-info")] for path in found))
    first = found[0].parent.name.partition("-")[0]
    return (
        f"module '{module}' is claimed by {len(found)} installed distributions ({names}), so which release "
        f"its files are is not known: run `pip uninstall -y {first}` until none is left, then install the "
        "one you mean (`prime env install <id>` or pip)"
    )


def _metadata(module: str) -> Path | None:
    """METADATA of the distribution that installed `module`: a `*.dist-info` beside it whose name is
    the module's (prime and pip name an environment's package after it, `-` or `_` alike)."""
    found = _dist_infos(module)
    return found[0] if found else None


def _dist_infos(module: str) -> list[Path]:
    """METADATA of every distribution beside `module` named after it, in the directory's order."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return []
    if spec is None or spec.origin is None:
        return []
    origin = Path(spec.origin)
    site = origin.parent.parent if origin.name == "__init__.py" else origin.parent
    wanted = module.lower()
    try:
        listing = os.listdir(site)
    except OSError:
        return []
    return [
        site / item / "METADATA"
        for item in listing
        if item.endswith(".dist-info")
        and item.partition("-")[0].lower().replace(".", "_") == wanted
        and (site / item / "METADATA").is_file()
    ]
