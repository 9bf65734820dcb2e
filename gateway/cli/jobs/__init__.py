"""Job commands: submit (spec files, arrays, dependencies), list, show, logs, wait, and
acting on many jobs at once (cancel, hold, release), with job ids as people type them."""
