"""verifiers environments (Prime Intellect's Environments Hub) as t3rl worlds: loaded with verifiers' own
loader, their protocol driven by verifiers' own rollout, scored by their own rubric."""
