package sim

import "testing"

// The lineage's rules for tiresias (dlas-gpu of the Tiresias and Muri simulators), one scenario
// each, against tiresias-entry-order where the two differ.

func TestTiresiasNoPreemptionInsideQueue(t *testing.T) {
	// 1x2 GPUs. Job 1 (1 GPU) runs; job 2 (2 GPUs) arrives and waits; job 3 (1 GPU) backfills.
	// When job 1 finishes, job 2 entered the first queue before job 3: by entry order it preempts
	// job 3, but the lineage keeps waiting jobs behind the running ones of their queue.
	mk := func() *scenario {
		return newScenario(t, 1, 2, 48).model("a", cfgSpec{64, 1, 8}).
			job(1, "a", 1, 0, 100).job(2, "a", 2, 10, 50).job(3, "a", 1, 20, 500)
	}
	s := mk()
	s.run("tiresias")
	want := "0.000 start 1 [0-0] sub 64 with []\n20.000 start 3 [0-1] sub 64 with []\n520.000 start 2 [0-0 0-1] sub 64 with []\n"
	if s.log() != want {
		t.Errorf("tiresias log:\n%s\nwant:\n%s", s.log(), want)
	}
	s = mk()
	s.run("tiresias-entry-order")
	want = "0.000 start 1 [0-0] sub 64 with []\n20.000 start 3 [0-1] sub 64 with []\n100.000 preempt 3\n100.000 start 2 [0-0 0-1] sub 64 with []\n150.000 start 3 [0-0] sub 64 with []\n"
	if s.log() != want {
		t.Errorf("tiresias-entry-order log:\n%s\nwant:\n%s", s.log(), want)
	}
}

func TestTiresiasThreeQueues(t *testing.T) {
	// The lineage has num_queue = 3: a 1-GPU job is demoted at 3,250 and 7,200 GPU-seconds and
	// never again (the third limit, 18,000, is unused).
	s := newScenario(t, 1, 1, 48).model("a", cfgSpec{64, 1, 8}).job(1, "a", 1, 0, 30000)
	s.run("tiresias")
	if want := "0.000 start 1 [0-0] sub 64 with []\n3250.000 demote 1\n7200.000 demote 1\n"; s.log() != want {
		t.Errorf("log:\n%s\nwant:\n%s", s.log(), want)
	}
}

func TestTiresiasDemotionInstant(t *testing.T) {
	// A 3-GPU job crosses 100 GPU-seconds after 33.33 s of its own clock; the lineage's next event
	// for it comes at ceil(100 / 3) = 34 s, unless another event comes first (job 2 at 33.5 s).
	base := func() *scenario {
		return newScenario(t, 1, 4, 48).model("a", cfgSpec{64, 1, 8}).job(1, "a", 3, 0, 1000)
	}
	s := base()
	s.run(`tiresias{"limits_s":[100]}`)
	if want := "0.000 start 1 [0-0 0-1 0-2] sub 64 with []\n34.000 demote 1\n"; s.log() != want {
		t.Errorf("alone, log:\n%s\nwant:\n%s", s.log(), want)
	}
	s = base().job(2, "a", 1, 33.5, 10)
	s.run(`tiresias{"limits_s":[100]}`)
	if want := "0.000 start 1 [0-0 0-1 0-2] sub 64 with []\n33.500 demote 1\n33.500 start 2 [0-3] sub 64 with []\n"; s.log() != want {
		t.Errorf("with an arrival at 33.5 s, log:\n%s\nwant:\n%s", s.log(), want)
	}
	// Before the crossing an event changes nothing.
	s = base().job(2, "a", 1, 33.2, 10)
	s.run(`tiresias{"limits_s":[100]}`)
	if want := "0.000 start 1 [0-0 0-1 0-2] sub 64 with []\n33.200 start 2 [0-3] sub 64 with []\n34.000 demote 1\n"; s.log() != want {
		t.Errorf("with an arrival at 33.2 s, log:\n%s\nwant:\n%s", s.log(), want)
	}
}

func TestTiresiasCountsFreeGPUs(t *testing.T) {
	// 2x2 GPUs. When job 1 ends at 1000 s, one GPU is idle on each node: the lineage counts two
	// free GPUs and starts the 2-GPU job 4 across the nodes; YARN placement (tiresias-entry-order)
	// needs a node with both GPUs idle and waits for job 3 to end.
	mk := func() *scenario {
		return newScenario(t, 2, 2, 48).model("a", cfgSpec{64, 1, 8}).
			job(1, "a", 1, 0, 1000).job(2, "a", 1, 0, 2000).job(3, "a", 1, 0, 1500).job(4, "a", 2, 5, 100)
	}
	starts := "0.000 start 1 [0-0] sub 64 with []\n0.000 start 2 [0-1] sub 64 with []\n0.000 start 3 [1-0] sub 64 with []\n"
	for spec, want := range map[string]string{
		"tiresias":             starts + "1000.000 start 4 [0-0 1-1] sub 64 with []\n",
		"tiresias-entry-order": starts + "1500.000 start 4 [1-0 1-1] sub 64 with []\n",
	} {
		s := mk()
		s.run(spec)
		if s.log() != want {
			t.Errorf("%s log:\n%s\nwant:\n%s", spec, s.log(), want)
		}
	}
}

func TestTiresiasReDecidesEveryJob(t *testing.T) {
	// 1x2 GPUs, one limit of 100 s. Jobs 1 and 2 run; job 1 is demoted at 100 s. Job 3 (2 GPUs)
	// arrives at 150 s and waits behind running job 2 in the first queue. At 190 s job 2 is
	// demoted too: job 3 now comes first and takes both GPUs, and the walk preempts both running
	// jobs of the second queue (job 1 of the old order, then newcomer 2), which restart in that
	// order when job 3 ends.
	s := newScenario(t, 1, 2, 48).model("a", cfgSpec{64, 1, 8}).
		job(1, "a", 1, 0, 1000).job(2, "a", 1, 90, 1000).job(3, "a", 2, 150, 10)
	s.run(`tiresias{"limits_s":[100],"service":"time"}`)
	want := "0.000 start 1 [0-0] sub 64 with []\n90.000 start 2 [0-1] sub 64 with []\n100.000 demote 1\n190.000 demote 2\n190.000 preempt 1\n190.000 preempt 2\n190.000 start 3 [0-0 0-1] sub 64 with []\n200.000 start 1 [0-0] sub 64 with []\n200.000 start 2 [0-1] sub 64 with []\n"
	if s.log() != want {
		t.Errorf("log:\n%s\nwant:\n%s", s.log(), want)
	}
}
