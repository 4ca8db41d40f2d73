"""Hydra's composition of a plain t3rl command line, without Hydra or OmegaConf (`compose.py`).

A cold `t3rl plan|validate` spent more time importing Hydra and OmegaConf and composing than on
anything else. For the command lines people type every day (an experiment, group choices, key=value
overrides of existing keys), this package computes the same composition directly: the same defaults
list, merged the same way, the same overrides, interpolations and provenance. Everything it does not
handle exactly (a sweep, a Hydra setting, `~key`, a list value, an unusual interpolation, any error)
raises `Unsupported`, and `launch.config.resolved` composes with Hydra instead, which also words every
error but one: an override of a key the config lacks (or `+` of one it has), the commonest mistake, is
refused here in Hydra's words (`refusals.py`). `tests/launch/test_direct_compose.py` checks that both
give identical results (and problems) on every shipped experiment and a corpus of override lines.
`listing.py` reads what `t3rl ls` shows through the same `Repository`, leaving to Hydra what it does
not read exactly.
"""
