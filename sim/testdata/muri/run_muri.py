#!/usr/bin/env python3
"""Runs the Muri simulator on one trace and schedule and writes, for every job, its ID, its JCT
in seconds (end - submit, as Python prints the float) and its preemption count: the reference
files of this folder (README.md).

    run_muri.py MURI_SIMULATOR_DIR TRACE.csv SCHEDULE OUT.csv [--plain] [--centre]
    run_muri.py MURI_SIMULATOR_DIR --gittins-table OUT.csv

The second form writes instead the Gittins index table that Muri's parse_job_dist() computes:
every job size of the distribution, sorted, with its index as Python prints it
(policy/schedulers/testdata/gittins-index.csv).

MURI_SIMULATOR_DIR is the simulator/ folder of github.com/Rivendile/Muri, unchanged. The script
copies it to a temporary folder, adds stub modules cvxpy and numpy (only Themis uses them; the
other schedules never call them; for themis the script needs the real cvxpy with ECOS, README.md,
or, with --centre, installs centre_cvxpy.py in its place: sharebench's solver under cvxpy's names)
and, with --plain, switches off the two lineage effects there: the 1.015
factor on iteration times (jobs.py) and the start overhead subtracted at every event (the
commented-out "tmp_oh = 0" of shortest_first_sim_jobs and dlas_sim_jobs in run_sim.py, and the
same assignment added at the same place in antman_sim_jobs and multi_resource_blossom_same_sim_jobs,
which have none). It then
runs Muri's main() with the flags of sim_fig9.sh and sim_fig10.sh. Muri's main() does not
dispatch dlas-gpu-gittins, whose rules live inside dlas_sim_jobs; for it the script does what the
Tiresias simulator's main() does (github.com/SymbioticLab/Tiresias): load the job-size
distribution with Muri's parse_job_dist() from yarn-gput1000.csv (the Tiresias simulator's file,
policy/schedulers/data/tiresias-yarn-gput1000.csv here) and call dlas_sim_jobs(True).

CPython and PyPy give the same bytes; pypy3 runs the Gittins schedule much faster.
"""
import csv
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DIST = os.path.join(HERE, '..', '..', '..', 'policy', 'schedulers', 'data', 'tiresias-yarn-gput1000.csv')


def replace_once(path, old, new, within=None):
    with open(path) as f:
        text = f.read()
    lo, hi = 0, len(text)
    if within:
        lo = text.index(within[0])
        hi = text.index(within[1], lo)
    part = text[lo:hi]
    if part.count(old) != 1:
        sys.exit('%s: expected one %r' % (path, old))
    with open(path, 'w') as f:
        f.write(text[:lo] + part.replace(old, new) + text[hi:])


def main():
    args = [a for a in sys.argv[1:] if a not in ('--plain', '--centre')]
    plain = '--plain' in sys.argv[1:]
    centre = '--centre' in sys.argv[1:]
    table = len(args) == 3 and args[1] == '--gittins-table'
    if table:
        args = [args[0], '', '', args[2]]
    if len(args) != 4:
        sys.exit(__doc__)
    muri, trace, schedule, out = (os.path.abspath(a) if k in (0, 3) else a for k, a in enumerate(args))
    if trace:
        trace = os.path.abspath(trace)
    work = tempfile.mkdtemp(prefix='muri-')
    sim = os.path.join(work, 'simulator')
    shutil.copytree(muri, sim)
    if centre:
        shutil.copy(os.path.join(HERE, 'centre_cvxpy.py'), os.path.join(sim, 'cvxpy.py'))
    elif schedule != 'themis':
        with open(os.path.join(sim, 'cvxpy.py'), 'w') as f:
            f.write('class SolverError(Exception):\n    pass\n')
        with open(os.path.join(sim, 'numpy.py'), 'w') as f:
            f.write('')
    if plain:
        replace_once(os.path.join(sim, 'jobs.py'), '        self.itertime_overhead_list = [1.015, 1.33/1.015,',
                     '        self.itertime_overhead_list = [1.0, 1.33/1.015,')
        run_sim = os.path.join(sim, 'run_sim.py')
        replace_once(run_sim, '# tmp_oh = 0\n', 'tmp_oh = 0\n', ('def shortest_first_sim_jobs', 'def dlas_sim_jobs'))
        replace_once(run_sim, '# tmp_oh=0\n', 'tmp_oh=0\n', ('def dlas_sim_jobs', 'def get_gittins_index'))
        # antman_sim_jobs has no such line: the same assignment is added where the others have it.
        replace_once(run_sim, "tmp_oh = 10\n                tmp = max(", "tmp_oh = 10\n                tmp_oh = 0\n                tmp = max(",
                     ('def antman_sim_jobs', 'def get_scale_factors_array'))
        # Nor has multi_resource_blossom_same_sim_jobs, whose overhead is the group's.
        replace_once(run_sim, "tmp_oh = rjob['overhead']\n", "tmp_oh = rjob['overhead']\n                tmp_oh = 0\n",
                     ('def multi_resource_blossom_same_sim_jobs', 'def multi_resource_blossom_same_dlas_sim_jobs'))
    shutil.copy(DIST, os.path.join(sim, 'yarn-gput1000.csv'))
    sys.path.insert(0, sim)
    os.chdir(sim)
    sys.argv = ['run_sim.py', '--cluster_spec=cluster_spec/n8g8.csv', '--print', '--scheme=yarn',
                '--trace_file=' + trace, '--schedule=' + schedule, '--multi_resource', '4',
                '--log_path=' + os.path.join(work, 'log')]
    stdout = sys.stdout
    sys.stdout = open(os.devnull, 'w')
    import run_sim
    if table:
        dist = run_sim.parse_job_dist()
        sys.stdout = stdout
        with open(out, 'w', newline='') as f:
            w = csv.writer(f, lineterminator='\n')
            w.writerow(['size_s', 'rank'])
            for v, g in zip(dist['data'][:-1], dist['gittins'][:-1]):
                w.writerow([v, repr(g)])
        shutil.rmtree(work)
        return
    if schedule == 'dlas-gpu-gittins':
        run_sim.parse_job_file(run_sim.FLAGS.trace_file)
        run_sim.parse_cluster_spec()
        run_sim.LOG.init_log()
        run_sim.JOBS.prepare_job_start_events()
        run_sim.JOBS.job_dist_data = run_sim.parse_job_dist()
        run_sim.dlas_sim_jobs(True)
    else:
        run_sim.main()
    sys.stdout = stdout
    with open(out, 'w', newline='') as f:
        w = csv.writer(f, lineterminator='\n')
        w.writerow(['job_id', 'jct_s', 'preemptions'])
        for j in sorted(run_sim.JOBS.job_list, key=lambda j: int(j['job_id'])):
            if j['status'] != 'END':
                sys.exit('job %s did not finish' % j['job_id'])
            w.writerow([j['job_id'], repr(j['end_time'] - j['submit_time']), j['preempt']])
    shutil.rmtree(work)


if __name__ == '__main__':
    main()
