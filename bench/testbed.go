package bench

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// TestbedRule is the documented rule that rebuilds the SJF-BSBF authors' 61-job physical
// trace (docs/paper.md §7.3) from Muri's Apache-2.0 400-job testbed trace, of which it is a subset:
// the authors' own file carries no licence, so only data derived from Muri's file is shipped
// (bench/traces/testbed61.csv; bench/traces/README.md).
type TestbedRule struct {
	// IDs are the job ids of the authors' trace, ascending.
	IDs []int
	// Anchor is the selected job whose submit time maps to SpanMS: the last one.
	Anchor int
	// SpanMS is the submit time of the anchor job in the rebuilt trace, in milliseconds.
	SpanMS int64
}

// Testbed returns the rule for the authors' trace_data_new_32.csv: its 61 job ids, and submit
// times scaled by 600,000 / submit_time(job 377), rounded down to the millisecond, which maps
// the last selected arrival to 600 s and reproduces every one of the authors' 61 submit times
// exactly. Every other column, iterations and num_gpu included, is Muri's.
func Testbed() TestbedRule {
	return TestbedRule{
		IDs: []int{3, 33, 35, 47, 48, 49, 51, 54, 55, 56, 79, 81, 84, 85, 86, 87, 102, 112, 114, 122,
			160, 161, 181, 242, 243, 244, 245, 246, 253, 254, 256, 257, 259, 260, 261, 262, 265, 276,
			281, 287, 288, 296, 299, 300, 302, 306, 310, 311, 313, 324, 326, 328, 356, 357, 358, 359,
			360, 362, 363, 374, 377},
		Anchor: 377,
		SpanMS: 600_000,
	}
}

// muriHeader is the 13-column header of the Muri trace dialect.
const muriHeader = "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,iteration_time,resource_time_0,resource_time_1,resource_time_2,priority"

// Rebuild applies the rule to Muri's trace in r (name labels errors) and returns the rebuilt
// trace in the Muri dialect: the header, then the selected rows in Muri's order with their
// fields as written there, except submit_time; lines end in LF.
func (rule TestbedRule) Rebuild(r io.Reader, name string) ([]byte, error) {
	rows, err := readMuriRows(r, name)
	if err != nil {
		return nil, err
	}
	byID := map[int][]string{}
	var order []int
	for _, row := range rows {
		id, err := strconv.Atoi(row[0])
		if err != nil {
			return nil, fmt.Errorf("bench: %s: job_id %q: %w", name, row[0], err)
		}
		byID[id] = row
		order = append(order, id)
	}
	anchor, ok := byID[rule.Anchor]
	if !ok {
		return nil, fmt.Errorf("bench: %s: anchor job %d not found", name, rule.Anchor)
	}
	anchorMS, err := strconv.ParseInt(anchor[2], 10, 64)
	if err != nil || anchorMS <= 0 {
		return nil, fmt.Errorf("bench: %s: anchor job %d: submit_time %q is not a positive integer", name, rule.Anchor, anchor[2])
	}
	var buf bytes.Buffer
	buf.WriteString(muriHeader + "\n")
	n := 0
	for _, id := range order {
		if _, want := slices.BinarySearch(rule.IDs, id); !want {
			continue
		}
		row := slices.Clone(byID[id])
		ms, err := strconv.ParseInt(row[2], 10, 64)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("bench: %s: job %d: submit_time %q is not a non-negative integer", name, id, row[2])
		}
		// floor(ms · SpanMS / anchorMS); both factors stay far below 2^63 for real traces.
		row[2] = strconv.FormatInt(ms*rule.SpanMS/anchorMS, 10)
		buf.WriteString(strings.Join(row, ",") + "\n")
		n++
	}
	if n != len(rule.IDs) {
		return nil, fmt.Errorf("bench: %s: found %d of the rule's %d job ids", name, n, len(rule.IDs))
	}
	return buf.Bytes(), nil
}

// readMuriRows reads a Muri-dialect CSV: the 13-column header, then the rows' raw fields.
func readMuriRows(r io.Reader, name string) ([][]string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 13
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("bench: %s: header: %w", name, err)
	}
	if strings.Join(header, ",") != muriHeader {
		return nil, fmt.Errorf("bench: %s: header %q is not the Muri dialect's", name, strings.Join(header, ","))
	}
	var rows [][]string
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", name, err)
		}
		rows = append(rows, rec)
	}
}

// ColumnDiff counts, for one column, the rows of two Muri-dialect traces (matched by job_id)
// whose values differ numerically (or textually for model names).
type ColumnDiff struct {
	Column string
	// Differ is the number of matched rows whose values differ.
	Differ int
	// IDs lists the job ids of those rows.
	IDs []int
}

// CompareMuri compares two Muri-dialect traces row by row (matched by job_id): per column,
// the rows whose values differ. Numbers are compared as numbers ("82" equals "82.0"). It also
// returns the ids present in only one of them.
func CompareMuri(a, b io.Reader) (diffs []ColumnDiff, onlyA, onlyB []int, err error) {
	ra, err := readMuriRows(a, "a")
	if err != nil {
		return nil, nil, nil, err
	}
	rb, err := readMuriRows(b, "b")
	if err != nil {
		return nil, nil, nil, err
	}
	index := func(rows [][]string) (map[int][]string, []int, error) {
		m := map[int][]string{}
		var ids []int
		for _, r := range rows {
			id, err := strconv.Atoi(r[0])
			if err != nil {
				return nil, nil, fmt.Errorf("bench: job_id %q: %w", r[0], err)
			}
			m[id] = r
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return m, ids, nil
	}
	ma, ida, err := index(ra)
	if err != nil {
		return nil, nil, nil, err
	}
	mb, idb, err := index(rb)
	if err != nil {
		return nil, nil, nil, err
	}
	cols := strings.Split(muriHeader, ",")
	diffs = make([]ColumnDiff, len(cols))
	for c := range cols {
		diffs[c].Column = cols[c]
	}
	for _, id := range ida {
		rowB, ok := mb[id]
		if !ok {
			onlyA = append(onlyA, id)
			continue
		}
		rowA := ma[id]
		for c := range cols {
			if !sameField(rowA[c], rowB[c]) {
				diffs[c].Differ++
				diffs[c].IDs = append(diffs[c].IDs, id)
			}
		}
	}
	for _, id := range idb {
		if _, ok := ma[id]; !ok {
			onlyB = append(onlyB, id)
		}
	}
	return diffs, onlyA, onlyB, nil
}

func sameField(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == b {
		return true
	}
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && x == y
}
