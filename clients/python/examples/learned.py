"""A tiny learned scheduler: a linear scorer of pending jobs, trained by random search.

Each instant, pending jobs are ranked by w · features(job) (lowest first) and started in that
order wherever they fit exclusively (the YARN rule, no preemption). The features are the
job's remaining exclusive time, its GPU count and its waiting time (log scales). Training is
random search by hill climbing: perturb the best weights with Gaussian noise, run one episode
of sharebench with them, keep them if the episode's return (minus the sum of JCTs) is higher.

Train, then run the trained policy like any other:

    make build
    python3 clients/python/examples/learned.py train --sharebench bin/sharebench \\
        --episodes 12 --weights /tmp/w.json -- --trace data/traces/muri-philly/trace3.csv \\
        --cluster 4x8 --profile results/profiles/gavel-v100.json --model-map bench/modelmaps/gavel.csv
    bin/sharebench simulate ... --policy "external:python3 clients/python/examples/learned.py --weights /tmp/w.json"
"""

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from sharebench import Env, Plan, Policy, serve  # noqa: E402
from sjf import yarn  # noqa: E402

HOUR = 3600e9  # ns


def features(j, now):
    return (
        math.log1p(j.rem_time(now) / HOUR),
        math.log2(j.gpus),
        math.log1p((now - j.submit) / HOUR),
    )


class Linear(Policy):
    name = "learned.py"

    def __init__(self, w):
        self.w = list(w)

    def schedule(self, st):
        now, cl, w = st.now, st.cluster, self.w
        plan = Plan()
        if cl.idle == 0:
            return plan
        ranked = sorted(st.pending, key=lambda j: (sum(a * b for a, b in zip(w, features(j, now))), j.submit, j.id))
        for j in ranked:
            if j.gpus > cl.idle:
                continue
            gpus = yarn(cl, j.gpus)
            if gpus is not None:
                cl.place(j.id, gpus, j.options[j.fast].mem, j.fast)
                plan.start_job(j, gpus, opt=j.fast)
                if cl.idle == 0:
                    break
        return plan


def episode(env, w):
    """Run one episode with weights w; return (return, end message)."""
    pol = Linear(w)
    state = env.reset()
    total = 0.0
    while True:
        state, reward, done, info = env.step(pol.schedule(state))
        total += reward
        if done:
            return total, info


def builtin(sharebench, args, spec):
    """Average JCT of a built-in policy on the same run, from its summary.json."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "run")
        subprocess.run(list(sharebench) + ["simulate"] + args + ["--policy", spec, "--out", out, "--no-decisions"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "summary.json")) as f:
            return json.load(f)["avg_jct_s"]


def train(a):
    rng = random.Random(a.seed)
    sharebench = a.sharebench.split()
    env = Env(a.args, sharebench=sharebench, name="learned.py (training)")
    best_w = [0.0, 0.0, 0.0]  # all ties: (submit, id) order, i.e. FIFO without preemption
    best_r, end = episode(env, best_w)
    jobs = end["jobs"]
    first = round(-best_r / jobs, 3)
    print("episode  return (s)       avg JCT (s)  weights", file=sys.stderr)
    print("%7d  %15.1f  %11.3f  %s" % (0, best_r, -best_r / jobs, fmt(best_w)), file=sys.stderr)
    for ep in range(1, a.episodes):
        w = [x + rng.gauss(0.0, a.sigma) for x in best_w]
        r, _ = episode(env, w)
        kept = r > best_r
        if kept:
            best_w, best_r = w, r
        print("%7d  %15.1f  %11.3f  %s%s" % (ep, r, -r / jobs, fmt(w), "  (kept)" if kept else ""), file=sys.stderr)
    result = {"weights": best_w, "return_s": best_r, "avg_jct_s": round(-best_r / jobs, 3), "jobs": jobs,
              "episodes": a.episodes, "first_avg_jct_s": first}
    if a.baselines:
        for spec in ("fifo-no-preempt", "sjf-no-preempt"):
            result[spec + "_avg_jct_s"] = builtin(sharebench, a.args, spec)
    if a.weights:
        with open(a.weights, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    print(json.dumps(result))


def fmt(w):
    return "[" + ", ".join("%+.3f" % x for x in w) + "]"


def main():
    if sys.argv[1:2] == ["train"]:
        p = argparse.ArgumentParser(prog="learned.py train", description="train the linear scorer by random search")
        p.add_argument("--sharebench", default="sharebench", help="command that runs sharebench (default: sharebench)")
        p.add_argument("--episodes", type=int, default=12, help="episodes, the first with zero weights (default 12)")
        p.add_argument("--sigma", type=float, default=1.0, help="standard deviation of the perturbations")
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--weights", help="write the best weights and their result to this JSON file")
        p.add_argument("--baselines", action="store_true", help="also report fifo-no-preempt and sjf-no-preempt")
        p.add_argument("args", nargs="+", help="after --: the `sharebench simulate` arguments (trace, cluster, profile)")
        train(p.parse_args(sys.argv[2:]))
        return
    p = argparse.ArgumentParser(prog="learned.py", description="serve the trained linear scorer as an external policy")
    p.add_argument("--weights", required=True, help="JSON file written by `learned.py train`")
    a = p.parse_args()
    with open(a.weights) as f:
        serve(Linear(json.load(f)["weights"]))


if __name__ == "__main__":
    main()
