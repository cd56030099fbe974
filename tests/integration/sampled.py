"""Checks of a share of sampled CPU stacks against a truth measured another
way (the program's own clock, or equal work by construction). Taking the n
samples as independent draws, a share p has a standard deviation of
sqrt(p(1-p)/n) (repeated runs of hot3 and py_nested3 spread that much or
less); a fixed bound in points is too tight for few samples and fails by
chance (5 points on 272 samples at p = 0.5 is under 2 sd: one run in 20).
share_check bounds each check by max(its floor, 4 sd) plus the systematic
allowance the test documents, and says the count and the bound in its
ok/not ok line. A share of CPU time (samples weighted by the CPU time since
the thread's last one) counts its samples as effective_n says: a busy
machine fires CPU-time timers unevenly (at a kernel tick that finds the
thread running), which the weights make up for and the count does not. With
RS_SAMPLED_LOG=FILE each check also appends a JSON line there for
tools/scripts/sampled_checks.py."""
import json
import math
import os
import sys

from rstest import ROOT, check, dump, trace_files

SDS = 4.0
# Where 4 sd alone is wider than this at a test's usual count, the check
# says little: the test must take more samples (a longer workload), not
# loosen its bound (tools/scripts/sampled_checks.py flags it). A run that
# gets fewer (a busy machine's kernel ticks find the thread running less
# often) keeps its 4 sd and says "few"; weighted by CPU time its share
# stays right, so failing it would blame the agent for the machine.
MAX_POINTS = 15.0


def sd_points(want, n):
    """The standard deviation, in points, of the share of n independent
    samples when the true share is want percent (0 for n = 0)."""
    p = min(max(want / 100.0, 0.0), 1.0)
    return 100.0 * math.sqrt(p * (1 - p) / n) if n > 0 else 0.0


def bound_points(want, n, floor, allow=0.0, sd=None):
    """The bound in points: the test's floor or 4 sd, whichever is wider,
    plus its systematic allowance."""
    return max(floor, SDS * (sd_points(want, n) if sd is None else sd)) + allow


def change_sd(wants, ns):
    """The standard deviation, in points, of the change between two shares
    whose truths are wants (percent) and counts ns, each a pair."""
    return math.hypot(sd_points(wants[0], ns[0]), sd_points(wants[1], ns[1]))


def effective_n(weights):
    """How many equally weighted samples a share of these weights is as good
    as: (sum w)^2 / sum w^2 (Kish's effective sample size), their count
    when they weigh the same, fewer when some are heavier."""
    sq = sum(w * w for w in weights)
    return int(sum(weights) ** 2 / sq) if sq else 0


def cpu_samples(out):
    """(effective count, weight in ns) of the CPU samples of the traces under
    out (a folder, or one trace file), read with ringside dump."""
    weights = []
    for path in [out] if os.path.isfile(out) else trace_files(out):
        weights += [r["weight_ns"] for r in dump(path)[0] if r.get("type") == "sample" and r.get("kind") == "cpu"]
    return effective_n(weights), sum(weights)


def samples_in(weight_ns, counted):
    """How many samples weight_ns of a flame graph stands for: its part of
    the effective count of counted, cpu_samples()'s answer for the traces
    it came from."""
    count, weight = counted
    return int(weight_ns * count / weight) if weight else 0


def share_check(name, got, want, n, floor, allow=0.0, allow_below=0.0, detail="", sd=None):
    """One ok/not ok line: got (percent, from n samples) within the bound of
    want (percent, the truth). allow_below widens the bound below want only,
    for an effect that can only take samples away. sd, in points, where got
    is not one share of n draws (change_sd's, for a change of a share).
    Fails when n is 0 or so small that the bound holds all of 0-100% (no
    share could fail it); past MAX_POINTS the line says "few". detail is
    added to a failure's line. Returns whether it passed."""
    sd = sd_points(want, n) if sd is None else sd
    b = bound_points(want, n, floor, allow, sd)
    lo, hi = want - b - allow_below, want + b
    blind = n <= 0 or (lo <= 0 and hi >= 100)
    span = "within %.1f points" % b if not allow_below else "%.1f below to %.1f above" % (b + allow_below, b)
    line = "%s %.1f%%, truth %.1f%%, %s (%d samples%s; %s)" % (
        name, got, want, span, n, ", few" if SDS * sd > MAX_POINTS else "",
        "bound %.1f sd" % (b / sd) if sd else "sd 0")
    if n <= 0:
        why = "no samples"
    elif blind:
        why = "%d samples: a bound of %.1f points holds every share; the test needs more samples" % (n, b)
    else:
        why = "%.1f%% is %.1f points from %.1f%%" % (got, got - want, want)
    if detail:
        why += "; " + detail
    ok = not blind and lo <= got <= hi
    _log(name, got, want, n, floor, allow, allow_below, sd, b, ok)
    return check(line, ok, why)


def _log(name, got, want, n, floor, allow, allow_below, sd, b, ok):
    """One JSON line for RS_SAMPLED_LOG, with the test's file and the line
    of its share_check call."""
    path = os.environ.get("RS_SAMPLED_LOG")
    if not path:
        return
    caller = sys._getframe(2)
    row = {"file": os.path.relpath(caller.f_code.co_filename, ROOT), "line": caller.f_lineno, "name": name,
           "got": got, "want": want, "n": n, "floor": floor, "allow": allow, "allow_below": allow_below,
           "sd": sd, "bound": b, "ok": ok}
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")

