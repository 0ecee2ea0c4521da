package analysis

import (
	"slices"
	"strings"
)

// CompareClaims puts the claims tables of several reproductions (e.g. the paper's profile and a
// measured one) side by side: one row per experiment × trace × setting × claim, and for each
// reproduction its Δ average JCT, CI, draws, direction and magnitude. names label the
// reproductions; a row one of them lacks shows "–".
func CompareClaims(names []string, tables []Table) Table {
	key := func(h []string, r []string) (string, []string) {
		var k []string
		for i, c := range h {
			switch c {
			case "experiment", "trace", "setting", "claim", "comparison":
				k = append(k, r[i])
			}
		}
		return strings.Join(k, "\x00"), k
	}
	const nKey = 5
	var order []string
	keyCells := map[string][]string{}
	cells := make([]map[string][]string, len(tables))
	for ti, t := range tables {
		cells[ti] = map[string][]string{}
		col := func(name string) int { return slices.Index(t.Header, name) }
		want := []int{col("our Δ avg JCT (%)"), col("95% CI (%)"), col("draws"), col("direction"), col("magnitude")}
		for _, r := range t.Rows {
			k, kc := key(t.Header, r)
			if _, ok := keyCells[k]; !ok {
				order = append(order, k)
				for len(kc) < nKey {
					kc = append(kc, "")
				}
				keyCells[k] = kc
			}
			var v []string
			for _, i := range want {
				if i < 0 {
					v = append(v, "–")
				} else {
					v = append(v, r[i])
				}
			}
			cells[ti][k] = v
		}
	}
	out := Table{Title: "Paper claims under several reproductions (average JCT)",
		Header: []string{"experiment", "trace", "setting", "claim", "comparison"}}
	for _, n := range names {
		out.Header = append(out.Header, n+": Δ avg JCT (%)", n+": 95% CI (%)", n+": draws", n+": direction", n+": magnitude")
	}
	for _, k := range order {
		row := slices.Clone(keyCells[k])
		for ti := range tables {
			v, ok := cells[ti][k]
			if !ok {
				v = []string{"–", "–", "–", "–", "–"}
			}
			row = append(row, v...)
		}
		out.Rows = append(out.Rows, row)
	}
	out.Notes = []string{
		"Each reproduction's columns come from its own run directories (the claims table of docs/analysis.md: Δ = (sjf-bsbf − baseline) / baseline × 100, paired by seed; direction and magnitude as defined there).",
		"– : the reproduction has no such row.",
	}
	return out
}
