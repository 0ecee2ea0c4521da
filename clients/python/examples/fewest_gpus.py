"""Fewest GPUs first: start waiting jobs in order of GPU count, then submission, each on the
first GPUs with room and memory, sharing a GPU only with jobs the profile pairs it with.
No preemption."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sharebench import Plan, Policy, serve  # noqa: E402


class FewestGPUs(Policy):
    name = "fewest-gpus"

    def schedule(self, state):
        cl, plan, failed = state.cluster, Plan(), set()
        for job in sorted(state.pending, key=lambda j: (j.gpus, j.submit, j.id)):
            if job.family in failed:  # same options and GPU count: fails too, the cluster only fills up
                continue
            opt = job.fast
            mem = job.options[opt].mem

            def fits(g):
                return (len(cl.jobs[g]) < cl.max_share and cl.free[g] >= mem and
                        all(state.hello.xi(job, opt, state.jobs[k], cl.opt(k)) is not None for k in cl.jobs[g]))

            gpus = [g for g in range(cl.num_gpus) if fits(g)][:job.gpus]
            if len(gpus) < job.gpus:
                failed.add(job.family)
                continue
            cl.place(job.id, gpus, mem, opt)
            plan.start_job(job, gpus, opt)
        return plan


if __name__ == "__main__":
    serve(FewestGPUs())
