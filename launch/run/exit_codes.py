"""Exit codes of `t3rl` commands: 0 done, 1 a stage failed (or the run dir cannot be used), 2 config
error, 130 stopped, 141 the reader of stdout went away (128 + SIGPIPE, as `seq 9 | head -1` ends under
`set -o pipefail`); and the reason recorded for what a signal stopped."""

EXIT_FAILED, EXIT_CONFIG, EXIT_STOPPED, EXIT_PIPE = 1, 2, 130, 141
INTERRUPTED = "stopped by a signal (Ctrl-C, SIGTERM)"
