"""Executors: run a plan's stage commands somewhere and record their state."""
