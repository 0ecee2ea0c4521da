package schedulers

// NewSRSF returns Muri's "shortest-gpu" (Rivendile/Muri, simulator/run_sim.py
// shortest_first_sim_jobs with gputime): the walk of srtf.go ordered by remaining GPU-time,
// the remaining time times the job's GPUs, so that of two jobs with as much work left the one on
// fewer GPUs goes first.
func NewSRSF() *Shortest { return &Shortest{name: KeySRSF, gpuTime: true} }
