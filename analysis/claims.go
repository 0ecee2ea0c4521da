package analysis

import (
	"math"
	"strconv"

	"github.com/sharebench/sharebench/results"
)

// Claim is a claim of the paper about the average-JCT reduction of one policy against a
// baseline, as a range of reductions in percent (positive = lower JCT).
type Claim struct {
	// ID is the reproduction target, e.g. "T1" (docs/paper.md §10).
	ID string
	// Policy and Baseline are the compared series.
	Policy, Baseline string
	// Lo and Hi bound the claimed reduction in percent, e.g. 27 and 33.
	Lo, Hi float64
	// UpTo marks an "up to Hi %" claim: any reduction in (0, Hi] agrees with it.
	UpTo bool
	// Text is the claim as the paper states it.
	Text string
}

// PolicyTiresiasTestbed is Tiresias with the SJF-BSBF authors' testbed settings.
const PolicyTiresiasTestbed = "tiresias-testbed"

// PaperClaims returns the paper's average-JCT claims (abstract of arXiv 2407.13088; docs/paper.md
// §10): T1, SJF-BSBF reduces average JCT by 27–33% against Tiresias, checked against both
// Tiresias settings (the simulator lineage's dlas-gpu, and the authors' testbed settings); T2,
// by up to 17% against SJF-FFS on large-scale traces.
func PaperClaims() []Claim {
	return []Claim{
		{ID: "T1", Policy: PolicySJFBSBF, Baseline: PolicyTiresias, Lo: 27, Hi: 33,
			Text: "27–33% lower average JCT than Tiresias"},
		{ID: "T1", Policy: PolicySJFBSBF, Baseline: PolicyTiresiasTestbed, Lo: 27, Hi: 33,
			Text: "27–33% lower average JCT than Tiresias (the authors' testbed settings)"},
		{ID: "T2", Policy: PolicySJFBSBF, Baseline: PolicySJFFFS, Lo: 0, Hi: 17, UpTo: true,
			Text: "up to 17% lower average JCT than SJF-FFS (large-scale traces)"},
	}
}

// Directions of a verdict: is the policy better than the baseline?
const (
	// Holds: the policy has the lower average JCT — the 95% CI of Δ lies entirely below 0, or,
	// for a single draw, Δ ≤ −1 percentage point.
	Holds = "holds"
	// Contradicted: the baseline has the lower average JCT (CI entirely above 0; single draw:
	// Δ ≥ +1 pp).
	Contradicted = "contradicted"
	// Inconclusive: the CI includes 0 (single draw: |Δ| < 1 pp).
	Inconclusive = "inconclusive"
	// NoData: the runs lack the policy or the baseline.
	NoData = "n/a"
)

// Magnitudes of a verdict against the claimed range of reductions.
const (
	// Within: the reduction's interval (its CI, or the single value) meets the claimed range.
	Within = "within"
	// Exceeds: the whole interval lies above the claimed range.
	Exceeds = "exceeds"
	// Weaker: the whole interval lies below the claimed range (for an "up to" claim: no
	// reduction at all).
	Weaker = "weaker"
)

// SingleDrawPP is the smallest |Δ| (percentage points) that gives one deterministic draw a
// direction.
const SingleDrawPP = 1

// Judge gives the direction and the magnitude of a measured Δ average JCT (percent, negative =
// the policy better) against a claim. Values are rounded to 0.1 percentage point, as displayed.
// The reduction interval R is −CI, or −Δ for a single draw.
//
//   - Direction: holds if R lies entirely above 0, contradicted if entirely below, else
//     inconclusive; a single draw holds for a reduction of at least 1 pp, is contradicted by an
//     increase of at least 1 pp, and is inconclusive in between.
//   - Magnitude, for a claimed range [Lo, Hi]: exceeds if R lies entirely above Hi, weaker if
//     entirely below Lo (for "up to Hi": if R holds no reduction), else within.
func Judge(c Claim, d Delta) (direction, magnitude string) {
	if math.IsNaN(d.Mean) {
		return NoData, NoData
	}
	r1 := func(x float64) float64 { return math.Round(x*10) / 10 }
	lo, hi := r1(-d.Mean), r1(-d.Mean)
	if d.HasCI() {
		lo, hi = r1(-d.Hi()), r1(-d.Lo())
		switch {
		case lo > 0:
			direction = Holds
		case hi < 0:
			direction = Contradicted
		default:
			direction = Inconclusive
		}
	} else {
		switch {
		case lo >= SingleDrawPP:
			direction = Holds
		case lo <= -SingleDrawPP:
			direction = Contradicted
		default:
			direction = Inconclusive
		}
	}
	switch {
	case lo > c.Hi:
		magnitude = Exceeds
	case c.UpTo && hi <= 0, !c.UpTo && hi < c.Lo:
		magnitude = Weaker
	default:
		magnitude = Within
	}
	return direction, magnitude
}

// Claims puts the paper's claims beside our measurements: for every experiment × trace ×
// setting that has sjf-bsbf runs, one row per claim with the paper's Δ, our Δ average JCT
// (paired by seed, with its 95% CI), the number of independent draws (paired seeds) and the
// verdict's direction and magnitude (see Judge). The rules are repeated in the table notes.
func Claims(runs []*results.Run) (Table, error) {
	groups, err := GroupRuns(runs)
	if err != nil {
		return Table{}, err
	}
	claims := PaperClaims()
	var cells []*Group // one representative group (the policy's) per cell
	for _, g := range groups {
		if g.Series == claims[0].Policy {
			cells = append(cells, g)
		}
	}
	l := newLayout(cells)
	l.perExperiment(cells)
	t := Table{
		Title: "Paper claims vs this reproduction (average JCT)",
		Header: l.header("claim", "comparison", "paper Δ avg JCT (%)", "our Δ avg JCT (%)", "95% CI (%)",
			"draws", "direction", "magnitude", "remark"),
	}
	for _, g := range cells {
		for _, c := range claims {
			paper := "−" + fmtFixed(c.Hi, 0) + " to −" + fmtFixed(c.Lo, 0)
			if c.UpTo {
				paper = "up to −" + fmtFixed(c.Hi, 0)
			}
			comparison := c.Policy + " vs " + c.Baseline
			b := findSeries(groups, g.cell(), c.Baseline)
			if b == nil {
				continue
			}
			d := RelDelta(g, b, AvgJCT)
			dir, mag := Judge(c, d)
			ci, rem := "", ""
			if d.HasCI() {
				ci = "[" + fmtSigned(d.Lo(), 1) + ", " + fmtSigned(d.Hi(), 1) + "]"
			} else {
				rem = "one draw: no CI"
			}
			if !d.Paired {
				rem = joinRemark(rem, "seeds unpaired: ratio of means")
			}
			t.Rows = append(t.Rows, l.row(g, c.ID, comparison, paper, fmtSigned(d.Mean, 1), ci, strconv.Itoa(d.N), dir, mag, rem))
		}
	}
	t.Notes = []string{
		"Δ avg JCT = (sjf-bsbf − baseline) / baseline × 100, paired by seed; negative means sjf-bsbf has the lower (better) average JCT. The paper's reductions are written as negative Δ.",
		"Claims (docs/analysis.md): T1 sjf-bsbf 27–33% lower average JCT than Tiresias, checked against tiresias (the simulator lineage's dlas-gpu) and tiresias-testbed (the authors' testbed settings); T2 up to 17% lower than sjf-ffs on large-scale traces. The paper states them over its traces; they are checked per trace and setting here.",
		"draws: independent draws behind the row (seeds that change the trace or its model assignment); one deterministic trace is one draw.",
		"direction: holds if the 95% CI of Δ lies entirely below 0, contradicted if entirely above, inconclusive if it includes 0; with one draw: holds for Δ ≤ −1 pp, contradicted for Δ ≥ +1 pp, inconclusive in between.",
		"magnitude: the reduction −Δ (its CI, or its one value) against the claimed range: exceeds if entirely above it, weaker if entirely below it (T2: no reduction), within if it meets the range. Values are compared rounded to 0.1 pp, as shown.",
		"95% CI: two-sided Student-t interval over the per-draw Δ (n−1 degrees of freedom).",
		"Nothing is tuned to agree with the paper: the profile, traces and policies are those of the runs.",
	}
	if len(cells) == 0 {
		t.Notes = append(t.Notes, "No sjf-bsbf runs: nothing to compare.")
	}
	return t, nil
}

func joinRemark(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
