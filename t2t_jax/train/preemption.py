"""SIGTERM / SIGINT: the first asks for a save and a clean exit 0; a second ends the process at once.

Python runs signal handlers only between bytecodes of the main thread, so a process blocked in a collective
(waiting for a host that is gone) would never see a second signal.  The C-level handler also writes the
signal number to a wakeup socket (``signal.set_wakeup_fd``); a daemon thread reads it, so counting the
signals and the immediate exit on the second work even while the main thread is stuck in XLA or gloo.

The flag is this process's *request*; whether and when the run stops is agreed across processes by
``train/control.py`` (a signal to one host stops every host at the same step).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading

SIGNALS = (signal.SIGTERM, signal.SIGINT)
SECOND_SIGNAL_EXIT = 128  # + the signal number, as a shell reports a process killed by it


class PreemptionFlag:
    """Set by the first SIGTERM/SIGINT; ``number`` is that signal's number (0 = none)."""

    def __init__(self):
        self.number = 0
        self.count = 0

    def __bool__(self):
        return self.number != 0

    @property
    def signal_name(self):
        return signal.Signals(self.number).name if self.number else None

    def received(self, number: int) -> None:
        self.count += 1
        if self.count == 1:
            self.number = number
            return
        name = signal.Signals(number).name
        os.write(
            2,
            f"error: second signal ({name}) while stopping: exiting now without saving; the last "
            f"complete checkpoint is kept\n".encode(),
        )
        os._exit(SECOND_SIGNAL_EXIT + number)


def _reader(sock: socket.socket, flag: PreemptionFlag) -> None:
    while True:
        try:
            data = sock.recv(64)
        except OSError:
            return
        if not data:
            return
        for number in data:
            flag.received(number)


@contextlib.contextmanager
def preemption_flag():
    """A flag set by SIGTERM/SIGINT while the block runs (previous handlers restored after)."""
    flag = PreemptionFlag()
    if threading.current_thread() is not threading.main_thread():
        yield flag  # signals can only be handled on the main thread
        return
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    old_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    for sig in SIGNALS:
        signal.signal(sig, lambda *_: None)  # the wakeup socket carries the signal; see the module doc
    thread = threading.Thread(target=_reader, args=(reader, flag), name="t2t-signals", daemon=True)
    thread.start()
    try:
        yield flag
    finally:
        signal.set_wakeup_fd(old_fd)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        writer.close()  # the reader sees end-of-file and returns
        thread.join(timeout=1.0)
        reader.close()
        sys.stderr.flush()
