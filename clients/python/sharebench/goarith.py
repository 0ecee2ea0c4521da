"""The simulator's arithmetic, reproduced bit for bit, so that a Python policy computes the
same keys as the Go policies (policy/policy.go: Job.RemIters, Job.RemTime).

Times are integer nanoseconds, as on the wire; floats are IEEE doubles in both languages.
"""

import math

NS = 1_000_000_000


def seconds(ns):
    """Go's time.Duration.Seconds: whole seconds plus the nanosecond remainder / 1e9."""
    sec = abs(ns) // NS
    nsec = abs(ns) % NS
    if ns < 0:
        sec, nsec = -sec, -nsec
    return float(sec) + float(nsec) / 1e9


def go_round(x):
    """Go's math.Round (half away from zero) as an int; Python's round() rounds half to even."""
    if x < 0:
        return -go_round(-x)
    f = math.floor(x)
    return int(f) + 1 if x - f >= 0.5 else int(f)


def duration(s):
    """Seconds (float) to nanoseconds as the simulator rounds them (policy.seconds)."""
    return go_round(s * 1e9)
