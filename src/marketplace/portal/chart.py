"""The portal's chart of a plugin's last 30 days: installs and uninstalls a day, drawn as
SVG on the server (no script, no CDN: the page works offline and under the sites' CSP).

Only numbers and dates reach the drawing; the template prints them escaped all the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from marketplace.delivery.schemas import DayStats

WIDTH = 720
HEIGHT = 220
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 28  # room for the axis labels


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    height: float
    value: int
    day: str


@dataclass(frozen=True)
class Series:
    name: str  # "installs"
    bars: tuple[Bar, ...]
    total: int


@dataclass(frozen=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True)
class DayLabel:
    x: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bar_width: float
    baseline: float
    series: tuple[Series, ...]
    ticks: tuple[Tick, ...]
    days: tuple[DayLabel, ...]
    first: str
    last: str

    @property
    def empty(self) -> bool:
        return all(series.total == 0 for series in self.series)


def _nice_top(peak: int) -> int:
    """A round top for the axis at or above the peak: 1, 2, 5, 10, 20, 50, ..."""
    top = 1
    while True:
        for step in (1, 2, 5):
            if top * step >= peak:
                return top * step
        top *= 10


def installs_chart(days: Sequence[DayStats]) -> Chart:
    """Side-by-side bars a day, installs then uninstalls (uninstalls drawn below zero would
    read as negative installs), with four ticks on a round scale."""
    plot_width = WIDTH - LEFT - RIGHT
    plot_height = HEIGHT - TOP - BOTTOM
    baseline = TOP + plot_height
    peak = max([1, *(max(d.installs, d.uninstalls) for d in days)])
    top = _nice_top(peak)
    slot = plot_width / max(len(days), 1)
    bar_width = max(slot / 2 - 1, 1)

    def bars(values: Sequence[int], offset: float) -> tuple[Bar, ...]:
        drawn = []
        for index, (day, value) in enumerate(zip(days, values, strict=True)):
            height = plot_height * max(value, 0) / top
            x = LEFT + index * slot + offset
            drawn.append(
                Bar(round(x, 1), round(baseline - height, 1), round(height, 1), value, day.date)
            )
        return tuple(drawn)

    installs = [d.installs for d in days]
    uninstalls = [d.uninstalls for d in days]
    ticks = tuple(
        Tick(round(baseline - plot_height * share, 1), str(round(top * share)))
        for share in (0, 0.25, 0.5, 0.75, 1)
        if share == 0 or top * share == int(top * share)
    )
    labelled = tuple(
        DayLabel(round(LEFT + index * slot + slot / 2, 1), day.date[5:])
        for index, day in enumerate(days)
        # A label a week, and the last day's when it is not crowded by the week's.
        if index % 7 == 0 or (index == len(days) - 1 and index % 7 >= 4)
    )
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        bar_width=round(bar_width, 1),
        baseline=baseline,
        series=(
            Series("installs", bars(installs, 0.5), sum(installs)),
            Series(
                "uninstalls", bars(uninstalls, 0.5 + bar_width), sum(max(u, 0) for u in uninstalls)
            ),
        ),
        ticks=ticks,
        days=labelled,
        first=days[0].date if days else "",
        last=days[-1].date if days else "",
    )
