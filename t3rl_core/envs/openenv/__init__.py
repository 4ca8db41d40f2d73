"""OpenEnv environments as t3rl worlds: driven through OpenEnv's own client (reset/step over its
WebSocket server), the model acting through the environment's action schema, rewarded by its steps."""
