package bench

import (
	"fmt"
	"time"
)

// The experiment table: the only declaration of what "sharebench reproduce" runs. REPRODUCE.md
// explains each experiment, its inputs and its deviations from the paper.

// experimentTable declares every experiment. Settings with Labels run only under those labels;
// the others run under every label of their experiment.
func experimentTable() []Experiment {
	// Cluster shapes and the default profile (Gavel's V100 throughputs with the model map).
	testbed4x8 := ClusterSpec{Nodes: 4, GPUsPerNode: 8, MemGiB: 48}  // the authors' testbed (n4g8, 49,140 MiB ≈ 48 GiB)
	muri8x8 := ClusterSpec{Nodes: 8, GPUsPerNode: 8, MemGiB: 48}     // Muri's simulator default (n8g8)
	philly80x8 := ClusterSpec{Nodes: 80, GPUsPerNode: 8, MemGiB: 48} // E3: offered load 0.80 (REPRODUCE.md)
	gavel := ProfileSpec{File: ProfileGavelV100, ModelMap: ModelMapGavel}
	smoke := []string{LabelSmoke}
	paper := []string{LabelPaper}
	both := []string{LabelSmoke, LabelPaper}
	testbed := TraceSpec{Name: "testbed61", File: TraceTestbed61, Format: "muri"}
	muri400 := TraceSpec{Name: "muri400", File: TraceMuri400, Format: "muri"}
	philly := func(n int) TraceSpec {
		return TraceSpec{Name: fmt.Sprintf("trace%d", n), File: MuriPhilly(n), Format: "muri"}
	}
	subbatch := gavel
	subbatch.Derive = DeriveSubBatch

	// E1: the testbed experiment (61 jobs on 4×8 GPUs, 150 s rounds, and event-driven for
	// comparison), and Muri's full 400-job testbed trace on 8×8.
	var e1 []Setting
	for _, tr := range []struct {
		spec   TraceSpec
		c      ClusterSpec
		labels []string
	}{{testbed, testbed4x8, nil}, {muri400, muri8x8, paper}} {
		for _, iv := range []time.Duration{150 * time.Second, 0} {
			name := fmt.Sprintf("%s-interval%d", tr.spec.Name, int(iv.Seconds()))
			if iv == 0 {
				name = tr.spec.Name + "-event"
			}
			e1 = append(e1, Setting{Name: name, Labels: tr.labels, Trace: tr.spec, Profile: gavel, Cluster: tr.c,
				Interval: iv, Params: []Param{{"interval_s", num(iv.Seconds())}}})
		}
	}

	// E2 and E4: Muri's Philly-derived traces on 64 GPUs, event-driven.
	var e2, e4 []Setting
	for n := 1; n <= 4; n++ {
		s := Setting{Name: fmt.Sprintf("trace%d", n), Labels: paper, Trace: philly(n), Profile: gavel, Cluster: muri8x8}
		e2 = append(e2, s)
		e4 = append(e4, s)
	}
	e4 = append(e4, Setting{Name: "testbed61", Labels: smoke, Trace: testbed, Profile: gavel, Cluster: testbed4x8, Interval: 150 * time.Second})

	// E5: GPU memory × sub-batch choice, on the derived sub-batch profile.
	var e5 []Setting
	for n := 1; n <= 4; n++ {
		for _, mem := range []float64{16, 24, 32, 48, 80} {
			c := muri8x8
			c.MemGiB = mem
			e5 = append(e5, Setting{Name: fmt.Sprintf("trace%d-mem%s", n, num(mem)), Labels: paper, Trace: philly(n),
				Profile: subbatch, Cluster: c, Params: []Param{{"gpu_mem_gib", num(mem)}}})
		}
	}
	for _, mem := range []float64{16, 48} {
		c := testbed4x8
		c.MemGiB = mem
		e5 = append(e5, Setting{Name: "testbed61-mem" + num(mem), Labels: smoke, Trace: testbed, Profile: subbatch,
			Cluster: c, Interval: 150 * time.Second, Params: []Param{{"gpu_mem_gib", num(mem)}}})
	}

	// E6: sensitivity to the load and to the interference, on synthetic traces drawn from the
	// Philly job sizes (smoke: from the testbed trace's), 5 seeds each.
	synth := func(load float64, labels []string) TraceSpec {
		if labels[0] == LabelSmoke {
			return TraceSpec{Name: "synthetic-testbed", Gen: &GenSpec{Jobs: 60, Load: load, Pool: TraceTestbed61}}
		}
		return TraceSpec{Name: "synthetic-philly", Gen: &GenSpec{Jobs: 10000, Load: load, Pool: TracePhilly}}
	}
	var e6load, e6xi []Setting
	for _, l := range []struct {
		prefix string
		labels []string
		c      ClusterSpec
		loads  []float64
		xis    []float64
	}{
		{"", paper, muri8x8, []float64{0.5, 0.75, 1, 1.5, 2}, []float64{0.8, 1, 1.2, 1.5}},
		{"testbed-", smoke, testbed4x8, []float64{0.5, 1}, []float64{0.8, 1.5}},
	} {
		for _, load := range l.loads {
			e6load = append(e6load, Setting{Name: fmt.Sprintf("%sload%s", l.prefix, num(load)), Labels: l.labels,
				Trace: synth(load, l.labels), Profile: gavel, Cluster: l.c, Params: []Param{{"load", num(load)}}})
		}
		for _, xi := range l.xis {
			p := gavel
			p.XiScale = xi
			e6xi = append(e6xi, Setting{Name: fmt.Sprintf("%sxi%s", l.prefix, num(xi)), Labels: l.labels,
				Trace: synth(1, l.labels), Profile: p, Cluster: l.c, Params: []Param{{"xi_scale", num(xi)}}})
		}
	}

	withTiresiasVariants := append(fivePolicies(),
		Series{Name: "tiresias-testbed", Policy: "tiresias-testbed", Variant: true},
		Series{Name: "tiresias-authors", Policy: "tiresias-authors", Variant: true})
	seeds5 := []uint64{1, 2, 3, 4, 5}
	return []Experiment{
		{
			Name: "E1", Title: "testbed: the authors' 61 jobs on 4×8 GPUs (150 s rounds and event-driven); Muri's 400 jobs on 8×8",
			Labels: both, Settings: e1, Series: withTiresiasVariants, Seeds: []uint64{1},
			Keep: Keep{DecisionsUpTo: 100, UtilRows: 200},
			Analysis: Analysis{Baselines: []string{"tiresias", "tiresias-authors"}, Claims: true, PerCell: true,
				CellSettings: []string{"testbed61-interval150", "muri400-interval150"}, Jobs: true, Bars: true},
		},
		{
			Name: "E2", Title: "Muri's Philly traces trace1–trace4 on 8×8 GPUs, event-driven",
			Labels: paper, Settings: e2, Series: fivePolicies(), Seeds: []uint64{1},
			Keep:     Keep{JobRows: 1000, UtilRows: 200},
			Analysis: Analysis{Baselines: []string{"tiresias"}, Claims: true, PerCell: true, Bars: true},
		},
		{
			Name: "E3", Title: "Philly scale: the 82,247-job Philly table on 80×8 GPUs (offered load 0.80)",
			Labels: paper,
			Settings: []Setting{{Name: "philly", Trace: TraceSpec{Name: "philly", File: TracePhilly, Format: "philly"},
				Profile: gavel, Cluster: philly80x8,
				LoadCandidates: []int{64, 128, 256, 384, 512, 576, 640, 768, 1024, 2490}}},
			Series: fivePolicies(), Seeds: []uint64{1},
			Keep:     Keep{JobRows: 1000, UtilRows: 200},
			Analysis: Analysis{Baselines: []string{"tiresias"}, Claims: true, PerCell: true, Bars: true},
		},
		{
			Name: "E4", Title: "sharing-time ablation: never share vs always share vs Theorem 1",
			Labels: both, Settings: e4,
			Series: []Series{
				{Name: "never-share", Policy: "sjf-no-preempt", Variant: true},
				{Name: "always-share", Policy: "sjf-ffs", Variant: true},
				{Name: "theorem-1", Policy: "sjf-bsbf", Variant: true},
			},
			Seeds:    []uint64{1},
			Keep:     Keep{JobRows: 50, UtilRows: 100},
			Analysis: Analysis{Baselines: []string{"never-share"}, Bars: true},
		},
		{
			Name: "E5", Title: "sub-batch ablation: GPU memory × {SJF-BSBF fixed batch, SJF-BSBF with sub-batch choice, SJF-FFS} on the derived sub-batch profile",
			Labels: both, Settings: e5,
			Series: []Series{
				{Name: "sjf-ffs", Policy: "sjf-ffs"},
				{Name: "sjf-bsbf", Policy: "sjf-bsbf"},
				{Name: "sjf-bsbf-fixed", Policy: "sjf-bsbf-fixed", Variant: true},
			},
			Seeds:    []uint64{1},
			Keep:     Keep{JobRows: 50, UtilRows: 100},
			Analysis: Analysis{Baselines: []string{"sjf-ffs"}, CurveX: "gpu_mem_gib"},
		},
		{
			Name: "E6-load", Title: "load sensitivity: synthetic traces at offered load 0.5–2, 5 seeds",
			Labels: both, Settings: e6load, Series: fivePolicies(), Seeds: seeds5,
			Keep:     Keep{JobRows: 50, UtilRows: 100},
			Analysis: Analysis{Baselines: []string{"tiresias"}, Claims: true, CurveX: "load"},
		},
		{
			Name: "E6-xi", Title: "interference sensitivity: ξ' = 1 + (ξ − 1)·s for s = 0.8–1.5, synthetic traces at load 1, 5 seeds",
			Labels: both, Settings: e6xi, Series: fivePolicies(), Seeds: seeds5,
			Keep:     Keep{JobRows: 50, UtilRows: 100},
			Analysis: Analysis{Baselines: []string{"tiresias"}, CurveX: "xi_scale"},
		},
	}
}
