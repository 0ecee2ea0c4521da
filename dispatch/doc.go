// Package dispatch submits, follows and cancels batch work on cluster engines: Slurm job arrays
// (sbatch, squeue, scontrol, sacct, scancel) and Kubernetes Indexed Jobs (kubectl). It knows
// nothing of what the tasks compute: profiling campaigns (runner) and simulation sweeps
// (bench) describe their tasks as a script or a command with an index, and read each task's
// output themselves. Only the engines' command-line tools are used, never a client library,
// so the package adds no dependency and tests run against scripted stand-ins on PATH.
package dispatch
