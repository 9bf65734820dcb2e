"""Progress bars for uploads and downloads, in the byte units the CLI uses everywhere
(imported only by commands that move files: rich.progress is slow to load)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from gateway.domain.sizes import short_size


class BinarySpeedColumn(ProgressColumn):
    """Transfer speed in KiB, MiB, GiB per second."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text("?", style="progress.data.speed")
        return Text(f"{short_size(int(speed))}/s", style="progress.data.speed")


def transfer_progress(console: Console) -> Progress:
    """Bars with bytes done (binary units), speed and time left, on `console`."""
    return Progress(TextColumn("{task.description}"), BarColumn(),
                    DownloadColumn(binary_units=True), BinarySpeedColumn(),
                    TimeRemainingColumn(), console=console, transient=True)
