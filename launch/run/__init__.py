"""Steps 4 and 5 of the flow: execute a plan with an executor into a run directory; one run, a sweep, a
search, the terminal reporter."""
