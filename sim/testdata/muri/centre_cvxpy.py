"""A stand-in for the cvxpy calls of Muri's themis_sim_jobs (run_sim.py), which run_muri.py
--centre installs as the module cvxpy: it records the program that code builds, minimise
max_i (c_i + a_i / (k_i x_i)) subject to 0 <= x <= 1 and sum_i g_i x_i <= G, and solves it as
sharebench's themis does (policy/schedulers/themis.go): the least largest ratio by bisection and,
where that optimum is not unique, the analytic centre of the optimal shares. Muri's code then
runs unchanged around another solver's choice among equal optima, which tells the rule apart
from the solver (README.md).
"""
import numpy as np


class SolverError(Exception):
    pass


class _Ratio:
    """c + a / (k * x[i])"""

    def __init__(self, c, a, i, k):
        self.c, self.a, self.i, self.k = c, a, i, k

    def __radd__(self, o):
        return _Ratio(self.c + o, self.a, self.i, self.k)

    __add__ = __radd__

    def __truediv__(self, d):
        return _Ratio(self.c / d, self.a / d, self.i, self.k)


class _Scaled:
    def __init__(self, i, k):
        self.i, self.k = i, k


class _InvPos:
    def __init__(self, s):
        self.s = s

    def __rmul__(self, a):
        return _Ratio(0.0, a, self.s.i, self.s.k)

    __mul__ = __rmul__


class _Entry:
    def __init__(self, i):
        self.i = i

    def __rmul__(self, k):
        return _Scaled(self.i, k)

    __mul__ = __rmul__


class _Constraint:
    def __init__(self, gpus=None, total=None):
        self.gpus, self.total = gpus, total


class _Variable:
    def __init__(self, n):
        self.n, self.value = n, None

    def __getitem__(self, i):
        return _Entry(i)

    def __ge__(self, o):
        return _Constraint()

    def __le__(self, o):
        return _Constraint()


class _Weighted:
    def __init__(self, g):
        self.g = np.asarray(g, dtype=float)

    def __le__(self, total):
        return _Constraint(self.g, float(total))


_last = [None]


def Variable(n):
    _last[0] = _Variable(n)
    return _last[0]


def inv_pos(s):
    return _InvPos(s)


def multiply(g, x):
    return _Weighted(g)


def sum(w, axis=0):
    return w


def maximum(*ratios):
    return list(ratios)


def Minimize(e):
    return e if isinstance(e, list) else [e]


def _bisect(f, lo, hi):
    """The smallest float in (lo, hi] where the non-decreasing f is >= 0, f(hi) >= 0 > f(lo)."""
    while True:
        mid = lo + (hi - lo) / 2
        if mid <= lo or mid >= hi:
            return hi
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid


class Problem:
    def __init__(self, ratios, constraints):
        self.ratios, self.constraints, self.status = ratios, constraints, None
        self.var = _last[0]

    def solve(self, solver=None):
        cap = [c for c in self.constraints if c.gpus is not None][0]
        g, total = cap.gpus, cap.total
        c = np.array([r.c for r in self.ratios])
        b = np.array([r.a / r.k for r in self.ratios])

        def share(rho):
            d = rho - c
            return np.where(d <= b, 1.0, b / np.where(d <= b, 1.0, d))

        if g.sum() <= total:
            x = np.ones(len(c))
        else:
            lo, top = (c + b).min(), (c + b).max()
            hi = max(2 * lo, 1.0)
            while (g * share(hi)).sum() > total:
                lo, hi = hi, 2 * hi
            hi = _bisect(lambda rho: total - (g * share(rho)).sum(), lo, hi)
            x = share(max(hi, top))
            if hi < top:
                free = x < 1
                room = total - g[~free].sum()
                lb = x.copy()

                def centre(lam):
                    qa = lam * g
                    qb = qa * (1 + lb) + 3
                    qc = 2 + lb + qa * lb
                    return np.minimum(2 * qc / (qb + np.sqrt(qb * qb - 4 * qa * qc)), 1.0)

                lo, hi = 0.0, 1.0
                excess = lambda lam: lam * (room - (g * centre(lam))[free].sum()) - 1
                while excess(hi) < 0:
                    lo, hi = hi, 2 * hi
                x = np.where(free, centre(_bisect(excess, lo, hi)), 1.0)
        self.var.value = x
        self.status = 'optimal'
        return float((c + b / x).max())
