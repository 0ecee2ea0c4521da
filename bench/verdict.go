package bench

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/results"
	"github.com/sharebench/sharebench/trace"
)

// The answer REPRODUCE.md opens with is generated, like every number it cites: one sentence
// per claim (T1, T2, T3) with the conditions under which it holds, computed from the claims
// rows and the runs beside them (the never-share variant, E6-xi's interference scales, E0's
// lineage effects). The sentences are built from counts and ranges by fixed rules, written
// here, so that what they say changes with the results and never by hand.

// Series names the report relies on besides the policies: the variants of the experiments
// that check the claims.
const (
	// SeriesNeverShare is SJF-BSBF on one job per GPU: its order and placement, no sharing.
	SeriesNeverShare = "never-share"
	// SeriesFixed is SJF-BSBF without its sub-batch choice.
	SeriesFixed = "sjf-bsbf-fixed"
)

// evidence is what the generated answer reads: the claims rows, and every group of the runs
// of the experiments that check the claims, by cell.
type evidence struct {
	set   *analysis.ClaimSet
	cells []*cell // in claims-table order
}

// cell is one experiment × trace × setting of the claims table with its groups by series.
type cell struct {
	exp, trace, where, vary string
	series                  map[string]*analysis.Group
	rows                    []*analysis.ClaimRow // the claims rows of the cell
}

// counted reports whether the cell's rows count as evidence (none is a sensitivity row or a
// repeat of another row's runs).
func (c *cell) counted() bool {
	for _, r := range c.rows {
		if !r.Counted() {
			return false
		}
	}
	return len(c.rows) > 0
}

// sensitivity returns the cell's counterfactual ("" for evidence).
func (c *cell) sensitivity() string {
	for _, r := range c.rows {
		if r.Sensitivity != "" {
			return r.Sensitivity
		}
	}
	return ""
}

// row returns the cell's row of a claim against baseline, or nil.
func (c *cell) row(baseline string) *analysis.ClaimRow {
	for _, r := range c.rows {
		if r.Claim.Baseline == baseline {
			return r
		}
	}
	return nil
}

func newEvidence(runs []*results.Run) (*evidence, error) {
	set, err := analysis.CheckClaims(runs)
	if err != nil {
		return nil, err
	}
	groups, err := analysis.GroupRuns(runs)
	if err != nil {
		return nil, err
	}
	type key struct{ exp, trace, setting string }
	byKey := map[key]map[string]*analysis.Group{}
	for _, g := range groups {
		k := key{g.Experiment, g.Trace, g.Setting}
		if byKey[k] == nil {
			byKey[k] = map[string]*analysis.Group{}
		}
		byKey[k][g.Series] = g
	}
	ev := &evidence{set: set}
	index := map[*analysis.Group]*cell{}
	for i := range set.Rows {
		r := &set.Rows[i]
		c := index[r.Group]
		if c == nil {
			g := r.Group
			c = &cell{exp: g.Experiment, trace: g.Trace, where: r.Where, vary: r.Setting, series: byKey[key{g.Experiment, g.Trace, g.Setting}]}
			index[r.Group] = c
			ev.cells = append(ev.cells, c)
		}
		c.rows = append(c.rows, r)
	}
	return ev, nil
}

// pairedDelta is Δ of metric m of x against base in percent, paired by seed, over the seeds
// where both values are finite and the baseline's is not 0, with its 95% CI.
func pairedDelta(x, base *analysis.Group, m func(*results.Summary) float64) analysis.Estimate {
	if x == nil || base == nil {
		return analysis.Estimate{Mean: math.NaN()}
	}
	bySeed := map[uint64]float64{}
	for _, r := range base.Runs {
		bySeed[r.Summary.Seed] = m(&r.Summary)
	}
	var ds []float64
	for _, r := range x.Runs {
		b, ok := bySeed[r.Summary.Seed]
		v := m(&r.Summary)
		if !ok || b == 0 || math.IsNaN(b) || math.IsNaN(v) {
			continue
		}
		ds = append(ds, (v-b)/b*100)
	}
	return analysis.CI95(ds)
}

// sign classifies an estimate: +1 if its 95% CI (rounded to 0.1) lies above 0, −1 below, 0
// otherwise or without a CI from enough draws.
func sign(e analysis.Estimate) int {
	if e.N < analysis.MinDraws || !e.HasCI() {
		return 0
	}
	r1 := func(x float64) float64 { return math.Round(x*10) / 10 }
	switch {
	case r1(e.Lo()) > 0:
		return 1
	case r1(e.Hi()) < 0:
		return -1
	}
	return 0
}

// fmtEst writes an estimate as "−12.3 [−15.0, −9.6]" (percent points), "–" when absent.
func fmtEst(e analysis.Estimate) string {
	if math.IsNaN(e.Mean) || e.N == 0 {
		return "–"
	}
	s := analysis.FormatSigned(e.Mean, 1)
	if e.HasCI() {
		s += " [" + analysis.FormatSigned(e.Lo(), 1) + ", " + analysis.FormatSigned(e.Hi(), 1) + "]"
	}
	return s
}

// pctRange writes the range of values as "a to b%" ("a%" when equal), with signs.
func pctRange(v []float64) string {
	lo, hi := slices.Min(v), slices.Max(v)
	a, b := analysis.FormatSigned(lo, 0), analysis.FormatSigned(hi, 0)
	if a == b {
		return a + "%"
	}
	return a + " to " + b + "%"
}

// magRange writes the range of magnitudes |v| as "a–b%".
func magRange(v []float64) string {
	var m []float64
	for _, x := range v {
		m = append(m, math.Abs(x))
	}
	lo, hi := strconv.FormatFloat(slices.Min(m), 'f', 0, 64), strconv.FormatFloat(slices.Max(m), 'f', 0, 64)
	if lo == hi {
		return lo + "%"
	}
	return lo + "–" + hi + "%"
}

// describe names a set of cells compactly: per experiment, the experiment alone when the set
// holds all its evidence cells, else its traces whose cells are all in the set, or the values
// of the one setting key that varies ("E6-load at load 0.75–1").
func (ev *evidence) describe(cells []*cell) string {
	var exps []string
	byExp := map[string][]*cell{}
	for _, c := range cells {
		if _, ok := byExp[c.exp]; !ok {
			exps = append(exps, c.exp)
		}
		byExp[c.exp] = append(byExp[c.exp], c)
	}
	var parts []string
	for _, e := range exps {
		sel := byExp[e]
		var all []*cell
		cellsOfExp := 0
		for _, c := range ev.cells {
			if c.exp == e {
				cellsOfExp++
				if c.counted() {
					all = append(all, c)
				}
			}
		}
		if len(sel) == len(all) && (len(all) > 1 || cellsOfExp == 1) {
			parts = append(parts, e)
			continue
		}
		several := len(allTraces(all)) > 1
		var items []string
		for _, t := range allTraces(sel) {
			var in, of []*cell
			for _, c := range sel {
				if c.trace == t {
					in = append(in, c)
				}
			}
			for _, c := range all {
				if c.trace == t {
					of = append(of, c)
				}
			}
			// A trace is named alone when the set holds all its cells, none of them left out
			// of the evidence.
			whole := len(in) == len(of)
			for _, c := range ev.cells {
				whole = whole && (c.exp != e || c.trace != t || c.counted())
			}
			if whole {
				items = append(items, t)
				continue
			}
			var every []*cell
			for _, c := range ev.cells {
				if c.exp == e && c.trace == t {
					every = append(every, c)
				}
			}
			items = append(items, settingValues(in, every, several, t))
		}
		parts = append(parts, e+" "+strings.Join(items, ", "))
	}
	return joinAnd(parts)
}

func allTraces(cells []*cell) []string {
	var out []string
	for _, c := range cells {
		if !slices.Contains(out, c.trace) {
			out = append(out, c.trace)
		}
	}
	return out
}

// settingValues writes the settings of cells of one trace, among all of that trace's cells:
// "at load 0.75–1" when one key varies and the cells are a contiguous run of all, else the
// varying settings listed.
func settingValues(cells, all []*cell, withTrace bool, tr string) string {
	// Only the keys whose values differ among the trace's cells name them (E1's cluster size
	// follows from its trace).
	values := map[string]map[string]bool{}
	for _, c := range all {
		for _, kv := range strings.Fields(c.vary) {
			k, v, _ := strings.Cut(kv, "=")
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][v] = true
		}
	}
	varying := func(c *cell) []string {
		var out []string
		for _, kv := range strings.Fields(c.vary) {
			k, _, _ := strings.Cut(kv, "=")
			if len(values[k]) > 1 {
				out = append(out, kv)
			}
		}
		return out
	}
	key := ""
	var vals []string
	one := true
	for _, c := range cells {
		f := varying(c)
		if len(f) != 1 {
			one = false
			break
		}
		k, v, _ := strings.Cut(f[0], "=")
		if key != "" && k != key {
			one = false
			break
		}
		key = k
		vals = append(vals, v)
	}
	prefix := ""
	if withTrace {
		prefix = tr + " "
	}
	if !one || key == "" {
		var s []string
		for _, c := range cells {
			s = append(s, strings.TrimSpace(prefix+strings.Join(varying(c), " ")))
		}
		return strings.Join(s, ", ")
	}
	if len(vals) == 1 {
		return prefix + "at " + key + " " + vals[0]
	}
	first := slices.Index(all, cells[0])
	contiguous := first >= 0 && first+len(cells) <= len(all)
	for i := 0; contiguous && i < len(cells); i++ {
		contiguous = all[first+i] == cells[i]
	}
	if !contiguous {
		return prefix + "at " + key + " " + joinAnd(vals)
	}
	return prefix + "at " + key + " " + vals[0] + "–" + vals[len(vals)-1]
}

// joinAnd joins "a", "b" and "c" as "a, b and c".
func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// t1Status classifies a cell by its T1 rows: +1 SJF-BSBF wins (holds against one Tiresias
// setting at least and is contradicted by none), −1 loses, 2 mixed (holds against one and is
// contradicted by the other), 0 neither.
func t1Status(c *cell) int {
	h, x := 0, 0
	for _, r := range c.rows {
		if r.Claim.ID != "T1" {
			continue
		}
		switch r.Direction {
		case analysis.Holds:
			h++
		case analysis.Contradicted:
			x++
		}
	}
	switch {
	case h > 0 && x > 0:
		return 2
	case h > 0:
		return 1
	case x > 0:
		return -1
	}
	return 0
}

// xiCells returns the cells along an interference scale (the xi_scale setting), sorted by s.
func (ev *evidence) xiCells() ([]*cell, []float64) {
	type pt struct {
		c *cell
		s float64
	}
	var pts []pt
	for _, c := range ev.cells {
		k, v, ok := strings.Cut(c.vary, "=")
		if !ok || k != "xi_scale" || strings.Contains(v, " ") {
			continue
		}
		s, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		pts = append(pts, pt{c, s})
	}
	slices.SortFunc(pts, func(a, b pt) int {
		switch {
		case a.s < b.s:
			return -1
		case a.s > b.s:
			return 1
		}
		return 0
	})
	var cells []*cell
	var ss []float64
	for _, p := range pts {
		cells = append(cells, p.c)
		ss = append(ss, p.s)
	}
	return cells, ss
}

func fmtS(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) }

// t1Verdict is the sentence on T1.
func (ev *evidence) t1Verdict() string {
	var rows []*analysis.ClaimRow
	for i := range ev.set.Rows {
		r := &ev.set.Rows[i]
		if r.Claim.ID == "T1" && r.Counted() {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return "**T1 (27–33% lower average JCT than Tiresias) is not checked:** no run compares SJF-BSBF with Tiresias."
	}
	count := map[string]int{}
	for _, r := range rows {
		count[r.Direction]++
		count["m:"+r.Magnitude]++
	}
	var wins, loses, mixed, open []*cell
	for _, c := range ev.cells {
		if !c.counted() || c.row(analysis.PolicyTiresias) == nil && c.row(analysis.PolicyTiresiasTestbed) == nil {
			continue
		}
		switch t1Status(c) {
		case 1:
			wins = append(wins, c)
		case -1:
			loses = append(loses, c)
		case 2:
			mixed = append(mixed, c)
		default:
			open = append(open, c)
		}
	}
	word := "holds only in part"
	switch {
	case count[analysis.Holds] == len(rows):
		word = "holds"
	case count[analysis.Holds] == 0:
		word = "does not hold"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**T1 (27–33%% lower average JCT than Tiresias) %s.** SJF-BSBF beats Tiresias in %d of %d independent comparisons (both Tiresias settings) and loses in %d",
		word, count[analysis.Holds], len(rows), count[analysis.Contradicted])
	var where []string
	if len(wins) > 0 {
		where = append(where, "it wins on "+ev.describe(wins))
	}
	if len(loses) > 0 {
		where = append(where, "loses on "+ev.describe(loses))
	}
	if len(mixed) > 0 {
		where = append(where, "wins or loses with the Tiresias setting on "+ev.describe(mixed))
	}
	if len(open) > 0 {
		where = append(where, "is undecided on "+ev.describe(open))
	}
	if len(where) > 0 {
		b.WriteString(": " + joinAnd(where))
	}
	fmt.Fprintf(&b, "; the paper's 27–33%% is met in %d of the %d", count["m:"+analysis.Within], len(rows))
	if xs, ss := ev.xiCells(); len(xs) > 0 {
		lastWin, firstLose := math.NaN(), math.NaN()
		for i, c := range xs {
			st := t1Status(c)
			if st == 1 {
				lastWin = ss[i]
			}
			if st == -1 && math.IsNaN(firstLose) {
				firstLose = ss[i]
			}
		}
		e := xs[0].exp
		switch {
		case !math.IsNaN(lastWin) && !math.IsNaN(firstLose):
			fmt.Fprintf(&b, "; with the interference scaled (%s), it wins only while the interference is at most %s× the measured one and loses from %s×",
				e, fmtS(lastWin), fmtS(firstLose))
		case !math.IsNaN(lastWin):
			fmt.Fprintf(&b, "; with the interference scaled (%s), it wins up to %s× the measured one", e, fmtS(lastWin))
		case !math.IsNaN(firstLose):
			fmt.Fprintf(&b, "; with the interference scaled (%s), it loses from %s× the measured one", e, fmtS(firstLose))
		}
	}
	// Where it wins, how much of the reduction never sharing at the same order already gives.
	orderMost, sharingHurts, n := 0, 0, 0
	for _, r := range rows {
		if r.Direction != analysis.Holds {
			continue
		}
		c := ev.cellOf(r)
		ns := pairedDelta(c.series[SeriesNeverShare], r.Baseline, analysis.AvgJCT)
		if math.IsNaN(ns.Mean) || ns.N == 0 {
			continue
		}
		n++
		total := math.Log1p(r.Delta.Mean / 100)
		order := math.Log1p(ns.Mean / 100)
		if order/total >= 0.5 {
			orderMost++
		}
		if ns.Mean < r.Delta.Mean {
			sharingHurts++
		}
	}
	if n > 0 {
		if 2*orderMost > n {
			fmt.Fprintf(&b, "; where it wins, most of the gain comes from SJF order with known durations, not from sharing: never sharing, at the same order and placement, already gives at least half of the reduction in %d of %d comparisons, and all of it or more in %d",
				orderMost, n, sharingHurts)
		} else {
			fmt.Fprintf(&b, "; where it wins, sharing gives most of the gain: never sharing, at the same order and placement, gives at least half of the reduction in only %d of %d comparisons", orderMost, n)
		}
	}
	b.WriteString(".")
	return b.String()
}

// xiWhere names the traces of the interference sweep: "synthetic-philly traces".
func xiWhere(c *cell) string { return c.trace + " traces" }

// cellOf returns the cell of a claims row.
func (ev *evidence) cellOf(r *analysis.ClaimRow) *cell {
	for _, c := range ev.cells {
		if slices.Contains(c.rows, r) {
			return c
		}
	}
	return nil
}

// t2Verdict is the sentence on T2.
func (ev *evidence) t2Verdict() string {
	var rows []*analysis.ClaimRow
	for i := range ev.set.Rows {
		r := &ev.set.Rows[i]
		if r.Claim.ID == "T2" && r.Counted() {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return "**T2 (up to 17% lower average JCT than SJF-FFS) is not checked:** no run compares SJF-BSBF with SJF-FFS."
	}
	count := map[string]int{}
	for _, r := range rows {
		count[r.Direction]++
		count["m:"+r.Magnitude]++
	}
	// The direction holds when no row contradicts it and most rows establish it; the size, when
	// most of those rows are within the claimed range.
	word := "holds only in part"
	direction := count[analysis.Contradicted] == 0 && 2*count[analysis.Holds] > len(rows)
	switch {
	case direction && 2*count["m:"+analysis.Within] > len(rows):
		word = "holds"
	case direction:
		word = "holds in direction but not in size"
	case count[analysis.Holds] == 0:
		word = "does not hold"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**T2 (up to 17%% lower average JCT than SJF-FFS) %s.** SJF-BSBF beats SJF-FFS in %d of %d independent rows and loses in %d; the reduction exceeds the paper's 17%% in %d and is within it in %d",
		word, count[analysis.Holds], len(rows), count[analysis.Contradicted], count["m:"+analysis.Exceeds], count["m:"+analysis.Within])
	// How always sharing (SJF-FFS) compares with never sharing at the same order.
	worse, m := 0, 0
	var by []float64
	for _, r := range rows {
		c := ev.cellOf(r)
		d := pairedDelta(c.series[analysis.PolicySJFFFS], c.series[SeriesNeverShare], analysis.AvgJCT)
		if d.N == 0 {
			continue
		}
		m++
		if sign(d) > 0 {
			worse++
			by = append(by, d.Mean)
		}
	}
	if m > 0 && worse > 0 {
		fmt.Fprintf(&b, "; but with the measured interference, sharing whenever there is room (SJF-FFS) is itself worse than never sharing in %d of %d rows (by %s), so the margin mostly measures what SJF-FFS loses by sharing badly, not what SJF-BSBF gains",
			worse, m, magRange(by))
	}
	if xs, ss := ev.xiCells(); len(xs) > 0 {
		var within []string
		for i, c := range xs {
			if r := c.row(analysis.PolicySJFFFS); r != nil && r.Magnitude == analysis.Within && r.Direction == analysis.Holds {
				within = append(within, fmtS(ss[i]))
			}
		}
		if len(within) > 0 {
			fmt.Fprintf(&b, "; with the interference scaled (%s), the paper's \"up to 17%%\" appears only at %s× the measured one", xs[0].exp, joinAnd(within))
		}
	}
	b.WriteString(".")
	return b.String()
}

// t3Verdict is the sentence on T3, from E0's lineage effects.
func t3Verdict(e0 []*results.Run) string {
	var b strings.Builder
	b.WriteString("**T3 (the simulator's \"high fidelity\" to real runs) is not tested at the paper's scale.** No run here is physical; the one physical replay so far, a few short jobs on one H200 ([Measured on a GPU](#measured-on-a-gpu-the-h200-profile-and-the-first-physical-replay)), is far too small to test it; what is measured is that sharebench's Tiresias equals Muri's simulator job by job on Muri's four traces (`TestMuriDlasGPU`)")
	if eff := lineageEffects(e0); len(eff) > 0 {
		fmt.Fprintf(&b, ", and that the Muri simulator's non-scheduling effects alone change Tiresias's average JCT by %s (E0), a scale for how much simulator details move the results", pctRange(eff))
	}
	b.WriteString(".")
	return b.String()
}

// lineageEffects returns, per trace of E0, Δ average JCT of tiresias with the Muri
// simulator's effects against sharebench's default engine.
func lineageEffects(e0 []*results.Run) []float64 {
	avg := map[string]float64{}
	var keys []string
	for _, r := range e0 {
		if r.Summary.Policy != analysis.PolicyTiresias || r.Summary.PolicySpec != analysis.PolicyTiresias {
			continue
		}
		if v, _ := r.Label(results.LabelVariant); v != "" {
			continue
		}
		eng, _ := r.Label("engine")
		k := r.Trace() + "|" + eng
		avg[k] = r.Summary.AvgJCTS
		keys = append(keys, r.Trace())
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var out []float64
	for _, t := range keys {
		a, okA := avg[t+"|muri"]
		b, okB := avg[t+"|default"]
		if okA && okB && b > 0 {
			out = append(out, (a-b)/b*100)
		}
	}
	return out
}

// verdicts renders the three sentences, one paragraph each.
func (ev *evidence) verdicts(e0 []*results.Run) string {
	return ev.t1Verdict() + "\n\n" + ev.t2Verdict() + "\n\n" + t3Verdict(e0) + "\n"
}

// tally renders the evidence tally: per claim and comparison, the independent rows by
// verdict, and the rows left out of the count.
func (ev *evidence) tally() string {
	t := analysis.Table{Header: []string{"claim", "comparison", "paper Δ (%)", "independent rows", "holds", "contradicted", "inconclusive",
		"within", "exceeds", "weaker", "magnitude inconclusive", "sensitivity rows", "repeats (not counted)"}}
	type key struct{ id, base string }
	var order []key
	for _, r := range ev.set.Rows {
		k := key{r.Claim.ID, r.Claim.Baseline}
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	for _, k := range order {
		count := map[string]int{}
		var claim analysis.Claim
		for _, r := range ev.set.Rows {
			if r.Claim.ID != k.id || r.Claim.Baseline != k.base {
				continue
			}
			claim = r.Claim
			switch {
			case r.Sensitivity != "":
				count["sens"]++
			case r.SameAs >= 0:
				count["same"]++
			default:
				count["n"]++
				count[r.Direction]++
				count["m:"+r.Magnitude]++
			}
		}
		n := func(k string) string { return strconv.Itoa(count[k]) }
		t.Rows = append(t.Rows, []string{claim.ID, claim.Comparison(), claim.PaperRange(), n("n"), n(analysis.Holds), n(analysis.Contradicted),
			n(analysis.Inconclusive), n("m:" + analysis.Within), n("m:" + analysis.Exceeds), n("m:" + analysis.Weaker), n("m:" + analysis.Inconclusive),
			n("sens"), n("same")})
	}
	return render(t)
}

// rowsTable renders every claims row compactly: one line per cell, one column per
// comparison, "Δ [CI] direction, magnitude" in each; † marks a sensitivity row, ‡ a row whose
// runs another row counts.
func (ev *evidence) rowsTable() string {
	type key struct{ id, base string }
	var comps []key
	var claims []analysis.Claim
	for _, r := range ev.set.Rows {
		k := key{r.Claim.ID, r.Claim.Baseline}
		if !slices.Contains(comps, k) {
			comps = append(comps, k)
			claims = append(claims, r.Claim)
		}
	}
	t := analysis.Table{Header: []string{"cell", "draws"}}
	for _, c := range claims {
		t.Header = append(t.Header, c.ID+": "+c.Comparison()+" ("+c.PaperRange()+"%)")
	}
	for _, c := range ev.cells {
		draws := 0
		for _, r := range c.rows {
			draws = max(draws, r.Delta.N)
		}
		row := []string{c.where, strconv.Itoa(draws)}
		for _, k := range comps {
			r := c.row(k.base)
			if r == nil || r.Claim.ID != k.id {
				row = append(row, "–")
				continue
			}
			s := fmtEst(r.Delta.Estimate) + " " + r.Direction + ", " + r.Magnitude
			switch {
			case r.Sensitivity != "":
				s += " †"
			case r.SameAs >= 0:
				s += " ‡"
			}
			row = append(row, s)
		}
		t.Rows = append(t.Rows, row)
	}
	return render(t)
}

// decomposition renders where T1's reduction comes from, per cell: never sharing at SJF-BSBF's
// order against each Tiresias setting (the order), then against it sharing by Theorem 1
// (SJF-BSBF) or whenever there is room (SJF-FFS), and SJF-BSBF against Tiresias (the total).
func (ev *evidence) decomposition() string {
	t := analysis.Table{Header: []string{"cell", "never-share vs tiresias (order)", "never-share vs tiresias-testbed (order)",
		"sjf-bsbf vs never-share (sharing by Theorem 1)", "sjf-ffs vs never-share (sharing always)", "sjf-bsbf vs tiresias (T1, total)"}}
	for _, c := range ev.cells {
		ns := c.series[SeriesNeverShare]
		if ns == nil || c.sensitivity() != "" {
			continue
		}
		t.Rows = append(t.Rows, []string{c.where,
			fmtEst(pairedDelta(ns, c.series[analysis.PolicyTiresias], analysis.AvgJCT)),
			fmtEst(pairedDelta(ns, c.series[analysis.PolicyTiresiasTestbed], analysis.AvgJCT)),
			fmtEst(pairedDelta(c.series[analysis.PolicySJFBSBF], ns, analysis.AvgJCT)),
			fmtEst(pairedDelta(c.series[analysis.PolicySJFFFS], ns, analysis.AvgJCT)),
			fmtEst(pairedDelta(c.series[analysis.PolicySJFBSBF], c.series[analysis.PolicyTiresias], analysis.AvgJCT))})
	}
	if len(t.Rows) == 0 {
		return ""
	}
	text := render(t)
	// The sentence under the table: how often each part is significant.
	orderWins, sharingHelps, sharingHurts, alwaysHurts, n := 0, 0, 0, 0, 0
	for _, c := range ev.cells {
		ns := c.series[SeriesNeverShare]
		if ns == nil || !c.counted() {
			continue
		}
		n++
		if sign(pairedDelta(ns, c.series[analysis.PolicyTiresias], analysis.AvgJCT)) < 0 {
			orderWins++
		}
		switch sign(pairedDelta(c.series[analysis.PolicySJFBSBF], ns, analysis.AvgJCT)) {
		case -1:
			sharingHelps++
		case 1:
			sharingHurts++
		}
		if sign(pairedDelta(c.series[analysis.PolicySJFFFS], ns, analysis.AvgJCT)) > 0 {
			alwaysHurts++
		}
	}
	text += fmt.Sprintf("\nOf %d independent cells: SJF order without sharing beats the lineage's Tiresias in %d; sharing by Theorem 1 improves on never sharing in %d and makes it worse in %d (the rest within the CI); sharing whenever there is room makes it worse in %d.\n",
		n, orderWins, sharingHelps, sharingHurts, alwaysHurts)
	return text
}

// buckets are the GPU-demand buckets of summary.json's by_gpus.
var buckets = []string{"1", "2", "3–4", "5–8", "≥9"}

// breakdownMetric returns the average JCT of the jobs of key in a summary's breakdown (by
// GPU bucket or by model), NaN when the run has none.
func breakdownMetric(byModel bool, key string) func(*results.Summary) float64 {
	return func(s *results.Summary) float64 {
		list := s.ByGPUs
		if byModel {
			list = s.ByModel
		}
		for _, b := range list {
			if b.Key == key {
				return b.AvgJCTS
			}
		}
		return math.NaN()
	}
}

// jobShare returns the mean over a group's runs of the share of jobs in key (percent).
func jobShare(g *analysis.Group, byModel bool, key string) float64 {
	var v []float64
	for _, r := range g.Runs {
		list := r.Summary.ByGPUs
		if byModel {
			list = r.Summary.ByModel
		}
		n := 0
		for _, b := range list {
			if b.Key == key {
				n = b.Jobs
			}
		}
		if r.Summary.Jobs > 0 {
			v = append(v, 100*float64(n)/float64(r.Summary.Jobs))
		}
	}
	return analysis.Mean(v)
}

// bySize renders Δ average JCT of SJF-BSBF against Tiresias by job size (GPUs), per
// evidence cell, with each bucket's share of the jobs, and the sentence the table supports.
func (ev *evidence) bySize() string {
	t := analysis.Table{Header: []string{"cell"}}
	for _, b := range buckets {
		t.Header = append(t.Header, b+" GPU"+plural(b))
	}
	oneWorse, bigBetter, both, n := 0, 0, 0, 0
	var oneShare []float64
	for _, c := range ev.cells {
		x, base := c.series[analysis.PolicySJFBSBF], c.series[analysis.PolicyTiresias]
		if x == nil || base == nil || !c.counted() {
			continue
		}
		row := []string{c.where}
		signs := map[string]int{}
		for _, b := range buckets {
			d := pairedDelta(x, base, breakdownMetric(false, b))
			share := jobShare(base, false, b)
			if d.N == 0 || share == 0 {
				row = append(row, "–")
				continue
			}
			signs[b] = sign(d)
			dec := 0
			if share < 1 {
				dec = 1
			}
			row = append(row, fmtEst(d)+" ("+strconv.FormatFloat(share, 'f', dec, 64)+"% of jobs)")
		}
		t.Rows = append(t.Rows, row)
		n++
		big := signs["5–8"] < 0 || signs["≥9"] < 0
		if signs["1"] > 0 {
			oneWorse++
			oneShare = append(oneShare, jobShare(base, false, "1"))
		}
		if big {
			bigBetter++
		}
		if signs["1"] > 0 && big {
			both++
		}
	}
	if n == 0 {
		return ""
	}
	text := render(t)
	text += fmt.Sprintf("\nIn %d of %d independent cells one-GPU jobs finish later under SJF-BSBF than under Tiresias", oneWorse, n)
	if len(oneShare) > 0 {
		text += " (they are " + magRange(oneShare) + " of the jobs there)"
	}
	text += fmt.Sprintf("; in %d, jobs of five or more GPUs finish sooner; in %d, both at once.\n", bigBetter, both)
	return text
}

// byModel renders Δ average JCT of SJF-BSBF against Tiresias by the trace's model, per
// evidence cell.
func (ev *evidence) byModel() string {
	models := trace.DefaultModels()
	t := analysis.Table{Header: []string{"cell"}}
	for _, m := range models {
		t.Header = append(t.Header, m.Name)
	}
	for _, c := range ev.cells {
		x, base := c.series[analysis.PolicySJFBSBF], c.series[analysis.PolicyTiresias]
		if x == nil || base == nil || !c.counted() {
			continue
		}
		row := []string{c.where}
		for _, m := range models {
			d := pairedDelta(x, base, breakdownMetric(true, m.Name))
			if d.N == 0 {
				row = append(row, "–")
				continue
			}
			row = append(row, analysis.FormatSigned(d.Mean, 0))
		}
		t.Rows = append(t.Rows, row)
	}
	if len(t.Rows) == 0 {
		return ""
	}
	return render(t)
}

func plural(bucket string) string {
	if bucket == "1" {
		return ""
	}
	return "s"
}

// metricsRegion renders the metrics beyond average JCT for SJF-BSBF against Tiresias, per
// evidence cell, with the sentences they support.
func (ev *evidence) metricsRegion() string {
	t := analysis.Table{Header: []string{"cell", "Δ avg JCT (%)", "Δ p95 JCT (%)", "Δ p99 JCT (%)", "Δ makespan (%)",
		"mean slowdown: sjf-bsbf / tiresias", "p99 slowdown: sjf-bsbf / tiresias", "fairness: sjf-bsbf / tiresias",
		"GPU busy / effective (%): sjf-bsbf", "GPU busy / effective (%): never-share"}}
	mean := func(g *analysis.Group, f func(*results.Summary) float64) float64 {
		if g == nil {
			return math.NaN()
		}
		return g.Estimate(f).Mean
	}
	f := func(v float64, dec int) string {
		if math.IsNaN(v) {
			return "–"
		}
		return strconv.FormatFloat(v, 'f', dec, 64)
	}
	var mk, p99 []float64
	mkWorse, p99Worse, fairWorse, slowWorse, lost, n := 0, 0, 0, 0, 0, 0
	for _, c := range ev.cells {
		x, base, ns := c.series[analysis.PolicySJFBSBF], c.series[analysis.PolicyTiresias], c.series[SeriesNeverShare]
		if x == nil || base == nil || !c.counted() {
			continue
		}
		n++
		dm := pairedDelta(x, base, func(s *results.Summary) float64 { return s.MakespanS })
		d99 := pairedDelta(x, base, func(s *results.Summary) float64 { return s.P99JCTS })
		if sign(dm) > 0 {
			mkWorse++
			mk = append(mk, dm.Mean)
		}
		if sign(d99) > 0 {
			p99Worse++
			p99 = append(p99, d99.Mean)
		}
		fx, fb := mean(x, func(s *results.Summary) float64 { return s.SlowdownFairness }), mean(base, func(s *results.Summary) float64 { return s.SlowdownFairness })
		if fx < fb {
			fairWorse++
		}
		if mean(x, func(s *results.Summary) float64 { return s.SlowdownMean }) > mean(base, func(s *results.Summary) float64 { return s.SlowdownMean }) {
			slowWorse++
		}
		if mean(x, func(s *results.Summary) float64 { return s.EffectiveGPUUtil }) < mean(x, func(s *results.Summary) float64 { return s.GPUUtil })-0.005 {
			lost++
		}
		busy := func(g *analysis.Group) string {
			return f(mean(g, func(s *results.Summary) float64 { return 100 * s.GPUUtil }), 0) + " / " +
				f(mean(g, func(s *results.Summary) float64 { return 100 * s.EffectiveGPUUtil }), 0)
		}
		t.Rows = append(t.Rows, []string{c.where,
			fmtEst(pairedDelta(x, base, analysis.AvgJCT)),
			fmtEst(pairedDelta(x, base, func(s *results.Summary) float64 { return s.P95JCTS })),
			fmtEst(d99), fmtEst(dm),
			f(mean(x, func(s *results.Summary) float64 { return s.SlowdownMean }), 1) + " / " + f(mean(base, func(s *results.Summary) float64 { return s.SlowdownMean }), 1),
			f(mean(x, func(s *results.Summary) float64 { return s.SlowdownP99 }), 0) + " / " + f(mean(base, func(s *results.Summary) float64 { return s.SlowdownP99 }), 0),
			f(fx, 3) + " / " + f(fb, 3), busy(x), busy(ns)})
	}
	if n == 0 {
		return ""
	}
	text := render(t)
	text += fmt.Sprintf("\nAgainst the lineage's Tiresias, in %d independent cells: SJF-BSBF's makespan is longer in %d", n, mkWorse)
	if len(mk) > 0 {
		text += " (by " + magRange(mk) + ")"
	}
	text += fmt.Sprintf(", its p99 JCT longer in %d", p99Worse)
	if len(p99) > 0 {
		text += " (by " + magRange(p99) + ")"
	}
	text += fmt.Sprintf(", its mean slowdown higher in %d, and its slowdowns less evenly spread (a lower fairness index) in %d. Its effective GPU utilization is below its busy time in %d of the %d: on average its co-located jobs deliver less than a GPU's worth of progress together (Σ 1/ξ < 1), so sharing with this profile costs throughput instead of adding it.\n",
		slowWorse, fairWorse, lost, n)
	return text
}

// subBatch renders how often the headline SJF-BSBF runs a job on a sub-batch and what its
// sub-batch choice changes against the same policy at the full batch (sjf-bsbf-fixed).
func (ev *evidence) subBatch() string {
	t := analysis.Table{Header: []string{"cell", "jobs on a sub-batch (%)", "jobs shared only at a smaller sub-batch", "Δ avg JCT sjf-bsbf vs sjf-bsbf-fixed (%)"}}
	helps, hurts, n := 0, 0, 0
	var pct []float64
	for _, c := range ev.cells {
		x, fixed := c.series[analysis.PolicySJFBSBF], c.series[SeriesFixed]
		if x == nil || fixed == nil || !c.counted() {
			continue
		}
		n++
		p := x.Estimate(func(s *results.Summary) float64 {
			if s.SubBatchJobs < 0 || s.Jobs == 0 {
				return math.NaN()
			}
			return 100 * float64(s.SubBatchJobs) / float64(s.Jobs)
		}).Mean
		pct = append(pct, p)
		d := pairedDelta(x, fixed, analysis.AvgJCT)
		switch sign(d) {
		case -1:
			helps++
		case 1:
			hurts++
		}
		t.Rows = append(t.Rows, []string{c.where, strconv.FormatFloat(p, 'f', 1, 64),
			strconv.FormatFloat(x.Estimate(func(s *results.Summary) float64 { return float64(s.SubBatchSharedJobs) }).Mean, 'f', 1, 64), fmtEst(d)})
	}
	if n == 0 {
		return ""
	}
	lo, hi := slices.Min(pct), slices.Max(pct)
	return render(t) + fmt.Sprintf("\nSJF-BSBF runs %s–%s%% of the jobs on a sub-batch; its sub-batch choice lowers average JCT significantly in %d of %d independent cells and raises it in %d.\n",
		strconv.FormatFloat(lo, 'f', 1, 64), strconv.FormatFloat(hi, 'f', 1, 64), helps, n, hurts)
}

// prediction renders the interference range under which the paper's magnitudes appear, from
// E6-xi, as a prediction a measured profile can test; meanExcess is the profile's mean excess
// slowdown over pairs of the authors' models (NaN when unknown).
func (ev *evidence) prediction(meanExcess float64) string {
	xs, ss := ev.xiCells()
	if len(xs) == 0 {
		return ""
	}
	meets := func(c *cell, baseline string) bool {
		r := c.row(baseline)
		return r != nil && (r.Magnitude == analysis.Within || r.Magnitude == analysis.Inconclusive) && r.Direction == analysis.Holds
	}
	var b strings.Builder
	var lo, hi = math.Inf(1), math.Inf(-1)
	for _, base := range []string{analysis.PolicyTiresias, analysis.PolicyTiresiasTestbed, analysis.PolicySJFFFS} {
		var at []string
		for i, c := range xs {
			if meets(c, base) {
				at = append(at, fmtS(ss[i]))
				if base != analysis.PolicySJFFFS {
					lo, hi = min(lo, ss[i]), max(hi, ss[i])
				}
			}
		}
		claim := "T1"
		if base == analysis.PolicySJFFFS {
			claim = "T2"
		}
		if len(at) == 0 {
			fmt.Fprintf(&b, "- %s against %s: the CI meets the paper's range at no interference scale.\n", claim, base)
			continue
		}
		fmt.Fprintf(&b, "- %s against %s: the CI meets the paper's range at s = %s.\n", claim, base, joinAnd(at))
	}
	if !math.IsInf(lo, 0) {
		fmt.Fprintf(&b, "\n**Prediction.** On %s's %s, SJF-BSBF's reduction against Tiresias reaches the paper's 27–33%% only with interference between %s and %s times the measured one",
			xs[0].exp, xiWhere(xs[0]), fmtS(lo), fmtS(hi))
		if !math.IsNaN(meanExcess) {
			fmt.Fprintf(&b, ": over the ordered pairs of the authors' eight models, the shipped profile's mean excess slowdown mean(ξ − 1) is %s, so the paper's magnitude should appear with a profile whose mean excess lies between %s and %s (mean ξ %s to %s)",
				strconv.FormatFloat(meanExcess, 'f', 2, 64), strconv.FormatFloat(lo*meanExcess, 'f', 2, 64), strconv.FormatFloat(hi*meanExcess, 'f', 2, 64),
				strconv.FormatFloat(1+lo*meanExcess, 'f', 2, 64), strconv.FormatFloat(1+hi*meanExcess, 'f', 2, 64))
		}
		b.WriteString(". A measured profile tests it: `sharebench reproduce --profile P --label L` reruns the experiments with it.\n")
	}
	return b.String()
}

// meanExcessXi returns mean(max(ξ, 1) − 1) over the ordered pairs of the authors' eight
// models (with their traces' batches, through the model map) that the profile has on one GPU,
// time-sliced: the scalar by which E6-xi's scales translate into profiles.
func meanExcessXi(prof *profile.Table, mm *profile.ModelMap) float64 {
	models := trace.DefaultModels()
	var v []float64
	for _, a := range models {
		for _, c := range models {
			ma, ba := mm.Resolve(a.Name, a.Batch)
			mc, bc := mm.Resolve(c.Name, c.Batch)
			if ba == 0 {
				ba = prof.DefaultBatch(ma)
			}
			if bc == 0 {
				bc = prof.DefaultBatch(mc)
			}
			xi, ok := prof.Slowdown(profile.Config{Model: ma, Batch: ba, SubBatch: ba}, profile.Config{Model: mc, Batch: bc, SubBatch: bc}, 1, profile.Timeslice)
			if ok {
				v = append(v, math.Max(xi, 1)-1)
			}
		}
	}
	return analysis.Mean(v)
}

// render writes a table as Markdown without title or notes.
func render(t analysis.Table) string {
	var buf bytes.Buffer
	if err := t.Render(&buf, analysis.Markdown); err != nil {
		return ""
	}
	return buf.String()
}
