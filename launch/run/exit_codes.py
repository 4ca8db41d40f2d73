"""Exit codes of `t3rl` commands: 0 done, 1 a stage failed (or the run dir cannot be used), 2 config
error, 130 stopped, 141 the reader of stdout went away (128 + SIGPIPE, as `seq 9 | head -1` ends under
`set -o pipefail`); the signals that stop a command as Ctrl-C does; and the reason recorded for what a
signal stopped."""

import signal

EXIT_FAILED, EXIT_CONFIG, EXIT_STOPPED, EXIT_PIPE = 1, 2, 130, 141
INTERRUPTED = "stopped by a signal (Ctrl-C, SIGTERM)"
# The note a stopped or failed run's error carries: the line that resumes it (`launch.run.single` adds it,
# the failure's message quotes it), its --from/--only kept while the selected stage has not started.
RESUME_WITH = "resume with: "
# Every signal whose default action would end t3rl without a word: each stops a command as Ctrl-C does
# (stages stopped, the record says so, 130). SIGINT is Python's KeyboardInterrupt already. Left to its
# default, SIGHUP (a closed terminal, a dropped ssh session) ended the launcher at once while the stage
# (its own session) ran on unwatched, recorded as running. One the process was started ignoring (`nohup`)
# stays ignored: whoever started it asked for that.
# Each with what the record of what it stopped says sent it.
STOP_SIGNALS = {
    signal.SIGTERM: "SIGTERM (a scheduler, a shutdown, kill, timeout)",
    signal.SIGHUP: "SIGHUP (the terminal closed or the ssh session dropped)",
}


class StopSignal(KeyboardInterrupt):
    """A stop signal received: stops what runs as Ctrl-C does, and names the signal for the record."""

    def __init__(self, signum: int) -> None:
        super().__init__(STOP_SIGNALS[signal.Signals(signum)])


def stop_reason(err: KeyboardInterrupt) -> str:
    """What the record of a stopped stage or run says stopped it: the stop signal, else Ctrl-C."""
    return f"stopped by {err.args[0]}" if isinstance(err, StopSignal) else "stopped by the user (Ctrl-C)"
