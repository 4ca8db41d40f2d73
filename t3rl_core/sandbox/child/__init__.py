"""The sandbox's child side: the zygote process and the confinement each cell applies to itself.

Everything here runs under the sandbox's interpreter (`LocalSandboxConfig.python`), which need not have
t3rl installed, so these modules use the standard library only and import each other relatively; the
zygote loads them as the top-level package `child` (see `zygote.py`), tests as `t3rl_core.sandbox.child`.
"""
