"""t3rl launcher, one folder per step of the flow:

overrides → config/ (compose with Hydra, validate with pydantic) → checks/ (cross-field rules)
          → plan/ (stages and their exact commands) → run/ (executors, pipeline, run dir)
cli/ is the command line that drives them.
"""
