"""Static charts as inline SVG, written by hand: no JavaScript, no fonts or files to fetch, the same
bytes for the same data. Three shapes cover the reports: horizontal bars (cost by component, why-not
deltas), grouped/stacked columns per category (cash and cost per year) and lines over a numeric or
categorical x axis with labelled markers (sweeps). Pure functions from numbers to SVG strings.
"""

from __future__ import annotations

import math
from html import escape

PALETTE = ["#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#00b5d8", "#b7791f", "#718096",
           "#e53e3e", "#1a202c"]
"""marker and bar colours in order, no two alike (the report review: green and teal #319795 read as
one fleet; teal became cyan, and the second blue, #3182ce beside #2b6cb0, near-black)"""
FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif"


def _esc(text) -> str:
    return escape(str(text), quote=True)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 2.5 or 5 times a power of ten apart).

    >>> nice_ticks(0, 117310)
    [0.0, 25000.0, 50000.0, 75000.0, 100000.0, 125000.0]
    """
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks, v = [], start
    while v < hi + step * 0.999:
        ticks.append(round(v, 10))
        v += step
    return ticks


def money(x: float) -> str:
    """Short dollar labels for axes: $1.2M, $85k, $950."""
    a = abs(x)
    sign = "-" if x < 0 else ""
    if a >= 1e6:
        return f"{sign}${a / 1e6:.3g}M"
    if a >= 1e3:
        return f"{sign}${a / 1e3:.3g}k"
    return f"{sign}${a:.0f}"


def _open(width: int, height: int, title: str) -> list[str]:
    return [f'<svg class="chart" role="img" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" style="{FONT};font-size:12px">',
            f"<title>{_esc(title)}</title>",
            f'<text x="0" y="16" font-size="14" font-weight="600" fill="#1a202c">{_esc(title)}</text>']


def hbar(items: list[tuple[str, float]], title: str, width: int = 540, fmt=money, note: str = "",
         faint: set[str] | None = None, clip: float | None = None) -> str:
    """Horizontal bars, one per (label, value), largest first as given; values >= 0. The labels'
    column is as wide as the longest label (about 7 px a character at 12 px), never cut off.
    faint: labels whose value is a bound, not a figure (drawn pale, the value prefixed '>= ').
    clip: the value the full width stands for; a longer bar is cut there and drawn with a break."""
    row, top = 24, 30
    left = max(150, 16 + 7 * max((len(label) for label, _ in items), default=0))
    width = max(width, left + 260)
    height = top + row * max(len(items), 1) + (34 if note else 20)
    out = _open(width, height, title)
    vmax = clip or max((v for _, v in items), default=0) or 1.0
    span = width - left - 90
    for i, (label, value) in enumerate(items):
        y = top + i * row
        w = max(span * min(value, vmax) / vmax, 1 if value > 0 else 0)
        pale = ' fill-opacity="0.4"' if faint and label in faint else ""
        said = (">= " if faint and label in faint else "") + fmt(value)
        out.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end" fill="#2d3748">{_esc(label)}</text>')
        out.append(f'<rect class="bar" x="{left}" y="{y + 3}" width="{w:.1f}" height="{row - 8}" '
                   f'fill="{PALETTE[i % len(PALETTE)]}"{pale}><title>{_esc(label)}: {_esc(said)}</title></rect>')
        if value > vmax:  # (a break across the cut bar: it runs on past the chart)
            out.append(f'<path d="M{left + w - 14:.1f},{y + 21} l6,-16 M{left + w - 8:.1f},{y + 21} l6,-16" '
                       'stroke="#fff" stroke-width="3"/>')
        out.append(f'<text x="{left + w + 6:.1f}" y="{y + 15}" fill="#2d3748">{_esc(said)}</text>')
    if note:
        out.append(f'<text x="0" y="{height - 8}" fill="#718096" font-size="11">{_esc(note)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def columns(categories: list[str], series: list[tuple[str, list[float], bool]], title: str,
            line: tuple[str, list[float | None]] | None = None, width: int = 540, height: int = 300) -> str:
    """Columns per category. `series` is (name, values, stacked): stacked series pile up in one
    column, the others stand beside it. `line` draws a dashed level per category (a budget)."""
    left, right, top, bottom = 70, 20, 50, 40
    stacks = [s for s in series if s[2]]
    singles = [s for s in series if not s[2]]
    groups = (1 if stacks else 0) + len(singles)
    totals = [sum(s[1][i] for s in stacks) for i in range(len(categories))]
    highs = totals + [v for s in singles for v in s[1]] + [v for v in (line[1] if line else []) if v is not None]
    ticks = nice_ticks(0, max(highs, default=1.0))
    vmax = ticks[-1] or 1.0
    plot_h = height - top - bottom
    plot_w = width - left - right
    y_of = lambda v: top + plot_h * (1 - v / vmax)  # noqa: E731
    out = _open(width, height, title)
    out += _legend([(n, PALETTE[i % len(PALETTE)]) for i, (n, _, _) in enumerate(series)]
                   + ([(line[0], "#e53e3e")] if line else []), left, 34)
    for t in ticks:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y_of(t):.1f}" y2="{y_of(t):.1f}" stroke="#e2e8f0"/>')
        out.append(f'<text x="{left - 6}" y="{y_of(t) + 4:.1f}" text-anchor="end" fill="#4a5568">{money(t)}</text>')
    slot = plot_w / max(len(categories), 1)
    bar_w = min(48.0, slot * 0.8 / max(groups, 1))
    for i, cat in enumerate(categories):
        x0 = left + i * slot + (slot - bar_w * groups) / 2
        base = 0.0
        for k, (name, values, stacked) in enumerate(series):
            if not stacked:
                continue
            v = values[i]
            out.append(_col(x0, y_of(base + v), bar_w, y_of(base) - y_of(base + v), PALETTE[k % len(PALETTE)],
                            f"{cat}, {name}: {money(v)}"))
            base += v
        g = 1 if stacks else 0
        for k, (name, values, stacked) in enumerate(series):
            if stacked:
                continue
            x = x0 + g * bar_w
            out.append(_col(x, y_of(values[i]), bar_w, y_of(0) - y_of(values[i]), PALETTE[k % len(PALETTE)],
                            f"{cat}, {name}: {money(values[i])}"))
            g += 1
        if line and line[1][i] is not None:
            yl = y_of(line[1][i])
            out.append(f'<line x1="{left + i * slot + 4:.1f}" x2="{left + (i + 1) * slot - 4:.1f}" y1="{yl:.1f}" '
                       f'y2="{yl:.1f}" stroke="#e53e3e" stroke-width="2" stroke-dasharray="6 3">'
                       f"<title>{_esc(cat)}, {_esc(line[0])}: {money(line[1][i])}</title></line>")
        out.append(f'<text x="{left + (i + 0.5) * slot:.1f}" y="{height - bottom + 16}" text-anchor="middle" '
                   f'fill="#2d3748">{_esc(cat)}</text>')
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{y_of(0):.1f}" y2="{y_of(0):.1f}" stroke="#4a5568"/>')
    out.append("</svg>")
    return "\n".join(out)


def _col(x: float, y: float, w: float, h: float, color: str, tip: str) -> str:
    return (f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{max(h, 0):.1f}" fill="{color}">'
            f"<title>{_esc(tip)}</title></rect>")


def _legend(entries: list[tuple[str, str]], x: float, y: float) -> list[str]:
    out = []
    for name, color in entries:
        out.append(f'<rect x="{x:.1f}" y="{y - 9}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14:.1f}" y="{y}" fill="#2d3748">{_esc(name)}</text>')
        x += 24 + 7 * len(name)
    return out


def lines(xs: list, series: list[tuple[str, list[float | None]]], title: str, x_label: str,
          marks: list[list[str]] | None = None, width: int = 760, height: int = 360,
          mark_names: list[str] | None = None) -> str:
    """Lines over x (numbers: a linear axis; otherwise evenly spaced categories, markers alone). `marks[s][i]` names
    the marker class of point i of series s (one colour and shape per distinct fleet); points where
    the mark changes from the previous one get a ring and a short label."""
    left, right, top, bottom = 80, 30, 66, 56
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs) and len(set(xs)) > 1
    plot_w, plot_h = width - left - right, height - top - bottom
    if numeric:
        lo, hi = min(xs), max(xs)
        x_of = lambda x: left + plot_w * (x - lo) / (hi - lo)  # noqa: E731
        xticks = [(x, _short(x)) for x in sorted(set(xs))] if len(set(xs)) <= 8 else \
            [(t, _short(t)) for t in nice_ticks(lo, hi) if lo <= t <= hi]
    else:
        x_of = lambda x: left + plot_w * (xs.index(x) + 0.5) / len(xs)  # noqa: E731
        xticks = [(x, str(x)) for x in xs]
    values = [v for _, vs in series for v in vs if v is not None]
    ticks = nice_ticks(0, max(values, default=1.0))
    y_of = lambda v: top + plot_h * (1 - v / (ticks[-1] or 1.0))  # noqa: E731
    out = _open(width, height, title)
    names = mark_names or sorted({m for ms in (marks or []) for m in ms if m})
    color = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(names)}
    for t in ticks:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y_of(t):.1f}" y2="{y_of(t):.1f}" stroke="#e2e8f0"/>')
        out.append(f'<text x="{left - 6}" y="{y_of(t) + 4:.1f}" text-anchor="end" fill="#4a5568">{money(t)}</text>')
    for x, text in xticks:
        out.append(f'<text x="{x_of(x):.1f}" y="{height - bottom + 18}" text-anchor="middle" fill="#2d3748">'
                   f"{_esc(text)}</text>")
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 12}" text-anchor="middle" fill="#2d3748">'
               f"{_esc(x_label)}</text>")
    boundaries = set()
    for s, (name, vs) in enumerate(series):
        pts = [(x_of(x), y_of(v)) for x, v in zip(xs, vs) if v is not None]
        if len(pts) > 1 and numeric:  # (categories: nothing lies between two of them to draw a line through)
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
            out.append(f'<polyline class="series" points="{path}" fill="none" stroke="#4a5568" stroke-width="1.5"'
                       f"{_dash(s)}><title>{_esc(name)}</title></polyline>")
        prev = None
        for i, (x, v) in enumerate(zip(xs, vs)):
            if v is None:
                prev = None
                continue
            m = marks[s][i] if marks else ""
            px, py = x_of(x), y_of(v)
            fill = color.get(m, "#4a5568")
            out.append(_point(s, px, py, fill, f"{_esc(name)} {_esc(x)}: {money(v)}; {_esc(m)}"))
            if marks and prev is not None and m != prev[1]:
                out.append(f'<circle class="change" cx="{px:.1f}" cy="{py:.1f}" r="9" fill="none" '
                           f'stroke="{fill}" stroke-width="2"><title>fleet changes to {_esc(m)}</title></circle>')
                boundaries.add(round((prev[0] + px) / 2, 1))
            prev = (px, m)
    for bx in sorted(boundaries):  # one guide per place where any line's fleet changes
        out.append(f'<line class="boundary" x1="{bx}" x2="{bx}" y1="{top - 4}" y2="{top + plot_h}" stroke="#a0aec0" '
                   'stroke-dasharray="3 3"/>')
        out.append(f'<text x="{bx}" y="{top - 8}" text-anchor="middle" fill="#4a5568" font-size="10">new fleet</text>')
    if len(series) > 1:  # each series' line style (numbers) and marker shape
        x = left
        for s, (name, _) in enumerate(series):
            if numeric:
                out.append(f'<line x1="{x}" x2="{x + 22}" y1="{36 - 4}" y2="{36 - 4}" stroke="#4a5568" stroke-width="2"'
                           f"{_dash(s)}/>")
            out.append(_point(s, x + 11, 32, "#4a5568", _esc(name)))
            out.append(f'<text x="{x + 26}" y="36" fill="#2d3748">{_esc(name)}</text>')
            x += 40 + 7 * len(name)
    out.append("</svg>")
    return "\n".join(out)


def _point(s: int, x: float, y: float, fill: str, title: str) -> str:
    """Series s's marker at (x, y): a circle, square, triangle or diamond, so that series read apart
    where no line joins their points (categories) and colour already says the fleet."""
    shape = s % 4
    if shape == 0:
        body = f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{fill}">'
        return body + f"<title>{title}</title></circle>"
    pts = {1: [(-4.5, -4.5), (4.5, -4.5), (4.5, 4.5), (-4.5, 4.5)], 2: [(0, -6), (5.5, 4), (-5.5, 4)],
           3: [(0, -6), (6, 0), (0, 6), (-6, 0)]}[shape]
    path = " ".join(f"{x + dx:.1f},{y + dy:.1f}" for dx, dy in pts)
    return f'<polygon class="point" points="{path}" fill="{fill}"><title>{title}</title></polygon>'


def _dash(s: int) -> str:
    return "" if s == 0 else f' stroke-dasharray="{2 + 3 * s} 3"'


def _short(x) -> str:
    if isinstance(x, float) and not x.is_integer():
        return f"{x:g}"
    x = int(x)
    if abs(x) >= 1e6 and x % 100000 == 0:
        return f"{x / 1e6:g}M"
    if abs(x) >= 1e4 and x % 1000 == 0:
        return f"{x / 1e3:g}k"
    return f"{x:,}"
