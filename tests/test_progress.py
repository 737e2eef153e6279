"""Progress meters: a live bar on a terminal, plain lines at intervals in a log, and the end always shown."""

import io
import re

from t2t_jax.progress import Meter


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_no_line_before_the_interval_and_one_at_the_end():
    log = io.StringIO()
    meter = Meter("translate", unit="sentences", stream=log, every_seconds=60)
    for done in range(1, 10):
        meter(done, 10)
    assert log.getvalue() == ""  # short work: no line before the interval
    meter(10, 10)
    meter.close()  # after the last line: nothing more
    (line,) = log.getvalue().splitlines()
    assert line.startswith("translate [####################] 100% 10/10 sentences | ")
    assert re.search(r"done in \d+:\d\d$", line), line


def test_a_log_gets_a_line_per_interval_with_eta():
    lines = []
    meter = Meter("final test", 4, unit="sentences", printer=lines.append, every_seconds=0)
    meter(1)
    meter(2)
    assert len(lines) == 2 and lines[0].startswith("final test [#####---------------]  25% 1/4 sentences")
    assert "ETA " in lines[1]


def test_a_terminal_gets_one_bar_redrawn_in_place():
    screen = Terminal()
    with Meter("average steps 2..4", 3, unit="checkpoints", stream=screen) as meter:
        meter(1)
        meter.last_shown -= 1  # as if the redraw interval had passed
        meter(2)
    text = screen.getvalue()
    assert text.count("\r\033[K") == 3 and text.endswith("\n") and text.count("\n") == 1
    assert "3/3 checkpoints" not in text and "2/3 checkpoints" in text.split("\r\033[K")[-1]


def test_no_total_shows_the_count_and_rate():
    lines = []
    with Meter("preprocess train", unit="pairs", printer=lines.append) as meter:
        meter(12_345)
    assert lines == [lines[0]] and lines[0].startswith("preprocess train 12,345 pairs | ") and "pairs/s" in lines[0]
