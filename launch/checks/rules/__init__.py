"""Cross-field rules, one function each, grouped by what they look at. `RULES` runs in this order."""

from launch.checks.rules import batch, credentials, model, stages, topology

RULES = (*credentials.RULES, *topology.RULES, *batch.RULES, *model.RULES, *stages.RULES)
