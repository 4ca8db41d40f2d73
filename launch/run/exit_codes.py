"""Exit codes of `t3rl run` / `t3rl plan`: 0 done, 1 a stage failed (or the run dir cannot be used),
2 config error, 130 stopped; and the reason recorded for what a signal stopped."""

EXIT_FAILED, EXIT_CONFIG, EXIT_STOPPED = 1, 2, 130
INTERRUPTED = "stopped by a signal (Ctrl-C, SIGTERM)"
