"""Step 3 of the flow, RunConfig → Plan: stages as data, one builder per stage kind, the exact slime and
conversion commands, and the option table they are checked against."""
