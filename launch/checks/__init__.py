"""Step 2 of the flow: cross-field checks of a composed config (one rule per function), before any plan."""
