"""Measured capacity: a replica's TPOT and TTFT read from the user's measurements (data.measurements)
instead of the physics model, where rows exist for its (model, system, TP, PP, precision).

Interpolation is monotone and never extrapolates far:
  concurrency  piecewise linear between measured concurrencies; each curve is first made
               non-decreasing (TPOT and TTFT never fall as concurrency rises); below the smallest
               measured concurrency the smallest one's values stand (an upper bound); above the
               largest, nothing: a replica serves at most the largest concurrency measured
  tokens       bilinear between the measured input and output lengths that bracket the request
               (each corner a concurrency curve); a request up to TOKEN_SLACK beyond the measured
               range takes the edge's values; further out, or where a bracketing corner is
               missing and no measured size at least as large in both exists, the physics model
               stands and the option says why (basis_note)
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

TOKEN_SLACK = 0.10
"""a request's tokens may exceed the largest measured by 10% and still read the edge's values"""


@dataclass(frozen=True)
class Capacity:
    users: int  # the largest concurrency within the targets, 0 if even the smallest measured misses
    tpot_ms: float
    ttft_ms: float | None  # None when the rows have no TTFT
    max_measured: int
    sources: str


def rows_for(rows, model: str, system: str, tp: int, pp: int, precision: str) -> list:
    return [r for r in rows if r.key == (model, system, tp, pp, precision)]


def keys(rows, model: str, system: str, precision: str) -> set[tuple[int, int]]:
    """(TP, PP) splits measured for a model on a system at a precision."""
    return {(r.tp, r.pp) for r in rows if (r.model, r.system, r.precision) == (model, system, precision)}


def _curve(rows) -> tuple[list[int], list[float], list[float] | None]:
    """Concurrencies with running-max TPOT and TTFT (None if any row lacks TTFT); repeated
    concurrencies keep their largest values."""
    by: dict[int, tuple[float, float | None]] = {}
    for r in rows:
        t, f = by.get(r.concurrency, (0.0, 0.0))
        by[r.concurrency] = (max(t, r.tpot_ms), None if r.ttft_ms is None or f is None else max(f, r.ttft_ms))
    cs = sorted(by)
    tp, ft, best_t, best_f = [], [], 0.0, 0.0
    for c in cs:
        best_t = max(best_t, by[c][0])
        tp.append(best_t)
        if ft is not None and by[c][1] is not None:
            best_f = max(best_f, by[c][1])
            ft.append(best_f)
        else:
            ft = None
    return cs, tp, ft


def _at(cs: list[int], ys: list[float], c: float) -> float:
    if c <= cs[0]:
        return ys[0]
    k = bisect.bisect_left(cs, c)
    if cs[k] == c:
        return ys[k]
    w = (c - cs[k - 1]) / (cs[k] - cs[k - 1])
    return ys[k - 1] + w * (ys[k] - ys[k - 1])


def _bracket(levels: list[int], x: int) -> tuple[int, int, float] | None:
    """(lower, upper, weight of upper) around x; the edge within TOKEN_SLACK; None beyond."""
    if x <= levels[0]:
        return levels[0], levels[0], 0.0
    if x >= levels[-1]:
        return (levels[-1], levels[-1], 0.0) if x <= levels[-1] * (1 + TOKEN_SLACK) else None
    k = bisect.bisect_left(levels, x)
    if levels[k] == x:
        return x, x, 0.0
    lo, hi = levels[k - 1], levels[k]
    return lo, hi, (x - lo) / (hi - lo)


def _surface(rows, input_tokens: int, output_tokens: int):
    """([(weight, concurrency curve)], largest concurrency measured at every corner) for a request
    size, or (None, why the measurements do not cover it)."""
    ins = sorted({r.input_tokens for r in rows})
    outs = sorted({r.output_tokens for r in rows})
    bi, bo = _bracket(ins, input_tokens), _bracket(outs, output_tokens)
    span = f"{ins[0]}-{ins[-1]} input and {outs[0]}-{outs[-1]} output tokens"
    if bi is None or bo is None:
        return None, f"measurements cover {span}; {input_tokens} in / {output_tokens} out is beyond them"
    out = []
    for i, wi in ((bi[0], 1 - bi[2]), (bi[1], bi[2])) if bi[0] != bi[1] else ((bi[0], 1.0),):
        for o, wo in ((bo[0], 1 - bo[2]), (bo[1], bo[2])) if bo[0] != bo[1] else ((bo[0], 1.0),):
            here = [r for r in rows if (r.input_tokens, r.output_tokens) == (i, o)]
            if not here:  # a gap in the grid: the smallest measured size at least as large in both
                big = sorted({(r.input_tokens, r.output_tokens) for r in rows
                              if r.input_tokens >= i and r.output_tokens >= o}, key=lambda t: (t[0] + 4 * t[1], t))
                if not big:
                    return None, f"no measurement at or above {i} in / {o} out (measurements cover {span})"
                here = [r for r in rows if (r.input_tokens, r.output_tokens) == big[0]]
            out.append((wi * wo, _curve(here)))
    return out, min(cur[0][-1] for _, cur in out)


def _mix(surface, c: float, which: int) -> float | None:
    total = 0.0
    for w, cur in surface:
        if cur[which] is None:
            return None
        total += w * _at(cur[0], cur[which], c)
    return total


def capacity(rows, input_tokens: int, output_tokens: int, min_tps: float,
             max_ttft_s: float | None) -> tuple[Capacity | None, str]:
    """The largest concurrency whose interpolated TPOT meets min_tps (and TTFT max_ttft_s, where
    measured) for this request size, or (None, why the measurements do not cover it)."""
    surface, cmax = _surface(rows, input_tokens, output_tokens)
    if surface is None:
        return None, cmax

    def ok(c: int) -> bool:
        t, f = _mix(surface, c, 1), _mix(surface, c, 2)
        return t <= 1000.0 / min_tps * (1 + 1e-9) and (
            max_ttft_s is None or f is None or f <= max_ttft_s * 1e3 * (1 + 1e-9))

    lo, hi = 0, cmax
    while lo < hi:  # TPOT and TTFT are non-decreasing in c: the last c that meets both
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    c = max(lo, 1)
    sources = sorted({r.source for r in rows})
    return Capacity(lo, _mix(surface, c, 1), _mix(surface, c, 2), cmax,
                    "; ".join(sources[:3]) + (" ..." if len(sources) > 3 else "")), ""


def at(rows, input_tokens: int, output_tokens: int, users: int) -> tuple[float, float | None] | None:
    """(TPOT ms, TTFT ms or None) at `users` concurrent users by the same interpolation; None where
    the measurements do not cover the request size or that concurrency."""
    surface, cmax = _surface(rows, input_tokens, output_tokens)
    if surface is None or users > cmax:
        return None
    return _mix(surface, users, 1), _mix(surface, users, 2)
