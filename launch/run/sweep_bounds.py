"""How many points a sweep may expand to: the bound a sweep gets, and the most `--max-points` raises it
to. Their own module, importing nothing: `t3rl run|plan|validate` declare the option with both at a cold
start (launch.cli.sweep_options) without importing the sweep modules, which enforce them
(launch.run.sweep_limit)."""

# The bound of points per sweep when --max-points is not given.
MAX_POINTS = 256
# The most --max-points takes: every point is a whole pipeline with its own run dir and training job, and
# validate composes each one (tens of milliseconds a point): 10,000 points are a GPU-year of even
# one-GPU-hour runs and minutes of composing before the first point starts, so a larger bound is a typo
# (`--max-points 1000000000000` let a sweep of that many points expand), not a plan: a larger sweep is
# run as several.
MOST_POINTS = 10_000
