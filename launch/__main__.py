"""`python -m launch …` is `t3rl …` (how a sweep starts each point's launcher with this interpreter)."""

from launch.cli import main

main()
