"""Exit codes of `t3rl` commands: 0 done, 1 a stage failed (or the run dir cannot be used), 2 config
error, 130 stopped, 141 the reader of stdout went away (128 + SIGPIPE, as `seq 9 | head -1` ends under
`set -o pipefail`); the signals that stop a command as Ctrl-C does; and the reason recorded for what a
signal stopped."""

import signal

EXIT_FAILED, EXIT_CONFIG, EXIT_STOPPED, EXIT_PIPE = 1, 2, 130, 141
INTERRUPTED = "stopped by a signal (Ctrl-C, SIGTERM)"
# Every signal whose default action would end t3rl without a word: each stops a command as Ctrl-C does
# (stages stopped, the record says so, 130). SIGINT is Python's KeyboardInterrupt already. Left to its
# default, SIGHUP (a closed terminal, a dropped ssh session) ended the launcher at once while the stage
# (its own session) ran on unwatched, recorded as running. One the process was started ignoring (`nohup`)
# stays ignored: whoever started it asked for that.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
