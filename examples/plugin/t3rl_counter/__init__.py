"""A t3rl plugin: the counter world (`t3rl_counter.world`) and its reward (`t3rl_counter.reward`)."""
