package trace

import (
	"fmt"
	"github.com/sharebench/sharebench/internal/clip"
	"github.com/sharebench/sharebench/internal/simtime"
	"math"
	"math/rand/v2"
	"time"
)

// ModelSpec describes one model that the Philly mapping and the generator may assign to a job.
type ModelSpec struct {
	Name     string        // model key, e.g. "resnet18"
	Batch    int           // per-GPU batch given to the job; 0 = not given
	IterTime time.Duration // exclusive time per iteration; must be positive
	Weight   float64       // relative probability of the model; must be ≥ 0 and finite
}

// defaultModels is the table behind [DefaultModels]. Each iteration time is the median
// iteration_time of that model in Muri's 400-job testbed trace (github.com/Rivendile/Muri,
// commit 4e69a78, cluster_exp/trace-data/cluster_trace.csv, Apache-2.0; V100 measurements in
// milliseconds). TestDefaultModelsMatchMuriTestbed recomputes the medians from that file.
var defaultModels = [...]ModelSpec{
	{Name: "resnet18", Batch: 128, IterTime: 1010 * time.Millisecond, Weight: 1},
	{Name: "shufflenet_v2_x1_0", Batch: 128, IterTime: 957 * time.Millisecond, Weight: 1},
	{Name: "vgg16", Batch: 16, IterTime: 214 * time.Millisecond, Weight: 1},
	{Name: "vgg19", Batch: 16, IterTime: 226 * time.Millisecond, Weight: 1},
	{Name: "bert", Batch: 4, IterTime: 192 * time.Millisecond, Weight: 1},
	{Name: "gpt2", Batch: 4, IterTime: 437 * time.Millisecond, Weight: 1},
	{Name: "dqn", Batch: 128, IterTime: 509 * time.Millisecond, Weight: 1},
	{Name: "a2c", Batch: 64, IterTime: 555 * time.Millisecond, Weight: 1},
}

// DefaultModels returns the eight models of the Muri and SJF-BSBF traces (resnet18,
// shufflenet_v2_x1_0, vgg16, vgg19, bert, gpt2, dqn, a2c) with their per-GPU batches
// (128/128/16/16/4/4/128/64), equal weights, and as iteration time the median iteration_time
// of the model in Muri's 400-job testbed trace (Apache-2.0). The result is a fresh copy.
func DefaultModels() []ModelSpec {
	return append([]ModelSpec(nil), defaultModels[:]...)
}

// checkModels validates a model list and returns its total weight.
func checkModels(models []ModelSpec) (float64, error) {
	if len(models) == 0 {
		return 0, fmt.Errorf("no models")
	}
	var total float64
	for i, m := range models {
		if msg := checkModelName(m.Name); msg != "" {
			return 0, fmt.Errorf("model %d: %s", i, msg)
		}
		switch {
		case m.Batch < 0:
			return 0, fmt.Errorf("model %s: negative batch %d", clip.Quote(m.Name), m.Batch)
		case m.IterTime <= 0:
			return 0, fmt.Errorf("model %s: iteration time %v is not positive", clip.Quote(m.Name), m.IterTime)
		case !(m.Weight >= 0) || math.IsInf(m.Weight, 0):
			return 0, fmt.Errorf("model %s: weight %v is not a finite number ≥ 0", clip.Quote(m.Name), m.Weight)
		}
		total += m.Weight
	}
	if !(total > 0) || math.IsInf(total, 0) {
		return 0, fmt.Errorf("model weights sum to %v, want a finite positive number", total)
	}
	return total, nil
}

// pickModel returns the index of the model chosen by the uniform 64-bit draw u, with
// probability proportional to the weights; total is their sum. Only multiplications and
// additions in a fixed order are used, so the choice is the same on every platform.
func pickModel(models []ModelSpec, total float64, u uint64) int {
	x := float64(u>>11) * 0x1p-53 * total
	var cum float64
	last := 0
	for i := range models {
		if models[i].Weight <= 0 {
			continue
		}
		cum += models[i].Weight
		if x < cum {
			return i
		}
		last = i
	}
	return last // x ≥ the rounded total: only possible through rounding
}

// splitmix64 is the SplitMix64 finaliser: a bijective mix of the bits of x.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// phillyModelDraw returns the uniform draw that chooses the model of data row i.
func phillyModelDraw(seed uint64, row int) uint64 {
	var g rand.PCG
	g.Seed(seed, splitmix64(uint64(row)))
	return g.Uint64()
}

// phillyRow is one valid data row of the Philly table.
type phillyRow struct {
	line  int
	index int   // 0-based data row index in file order, counting skipped rows
	unix  int64 // timestamp in seconds since 1970-01-01 00:00:00 UTC
	gpus  int
	dur   time.Duration
}

// phillyState holds a Philly table read in full.
type phillyState struct {
	rows     []phillyRow
	pos      int
	earliest int64
	models   []ModelSpec
	total    float64
}

// scanPhilly implements Scan for the Philly table.
func (r *Reader) scanPhilly() bool {
	if r.philly == nil {
		models := r.opt.PhillyModels
		if len(models) == 0 && r.opt.PhillyModelsFrom != nil {
			models = r.opt.PhillyModelsFrom()
		}
		if len(models) == 0 {
			models = defaultModels[:]
		}
		total, err := checkModels(models)
		if err != nil {
			return r.fail(fmt.Errorf("trace: %s: philly models: %w", r.name, err))
		}
		st := &phillyState{models: models, total: total}
		if err := r.loadPhilly(st); err != nil {
			return r.fail(err)
		}
		r.philly = st
	}
	st := r.philly
	if st.pos == len(st.rows) {
		return r.finish()
	}
	row := st.rows[st.pos]
	st.pos++
	r.line = row.line
	delta := row.unix - st.earliest // < 400 years for 4-digit years, so no overflow
	if delta > int64(Horizon/time.Second) {
		return r.fail(&SyntaxError{File: r.name, Line: row.line, Column: r.names[r.col.timestamp],
			Msg: fmt.Sprintf("more than the %d-year horizon after the earliest timestamp", simtime.HorizonYears)})
	}
	m := st.models[pickModel(st.models, st.total, phillyModelDraw(r.opt.Seed, row.index))]
	r.job = Job{
		ID:       JobID(row.index),
		Submit:   time.Duration(delta) * time.Second,
		GPUs:     row.gpus,
		Iters:    max(1, divRound(int64(row.dur), int64(m.IterTime))),
		Model:    m.Name,
		Batch:    m.Batch,
		IterTime: m.IterTime,
		Line:     row.line,
	}
	if err := r.checkHorizon(r.job, r.col.timestamp, r.col.duration); err != nil {
		return r.fail(err)
	}
	r.n++
	return true
}

// loadPhilly reads every data row of a Philly table into st.
func (r *Reader) loadPhilly(st *phillyState) error {
	index := 0
	for r.next() {
		row, ok, err := r.parsePhillyRow(index)
		if err != nil {
			return err
		}
		if index == 0 || row.unix < st.earliest {
			st.earliest = row.unix
		}
		index++
		if ok {
			st.rows = append(st.rows, row)
		} else {
			r.skipped++
		}
	}
	return r.err
}

// parsePhillyRow parses the current line as data row index of a Philly table. It returns
// ok = false for an invalid row that Options.SkipInvalid allows to skip.
func (r *Reader) parsePhillyRow(index int) (row phillyRow, ok bool, err error) {
	if len(r.fields) != len(r.names) {
		return row, false, &SyntaxError{File: r.name, Line: r.line,
			Msg: fmt.Sprintf("wrong number of fields: got %d, want %d", len(r.fields), len(r.names))}
	}
	row.line, row.index = r.line, index
	unix, msg := parseTimestamp(r.fields[r.col.timestamp])
	if msg != "" {
		return row, false, r.errAt(r.col.timestamp, msg)
	}
	row.unix = unix
	gpus, err := r.number(r.col.gpus, 0)
	if err != nil {
		return row, false, err
	}
	dur, err := r.number(r.col.duration, scaleSeconds)
	if err != nil {
		return row, false, err
	}
	switch {
	case gpus > math.MaxInt32:
		return row, false, r.errAt(r.col.gpus, fmt.Sprintf("number %s out of range", clip.Quote(r.fields[r.col.gpus])))
	case gpus <= 0 && !r.opt.SkipInvalid:
		return row, false, r.errAt(r.col.gpus, fmt.Sprintf("must be positive, got %s", clip.Quote(r.fields[r.col.gpus])))
	case dur <= 0 && !r.opt.SkipInvalid:
		return row, false, r.errAt(r.col.duration, fmt.Sprintf("must be positive, got %s", clip.Quote(r.fields[r.col.duration])))
	case gpus <= 0 || dur <= 0:
		return row, false, nil
	}
	row.gpus, row.dur = int(gpus), time.Duration(dur)
	return row, true, nil
}

// parseTimestamp parses "YYYY-MM-DD hh:mm:ss" (UTC) and returns seconds since the Unix epoch,
// or a message saying what is wrong.
func parseTimestamp(b []byte) (int64, string) {
	const layout = "0000-00-00 00:00:00"
	if len(b) != len(layout) {
		return 0, fmt.Sprintf("invalid timestamp %s (want YYYY-MM-DD hh:mm:ss)", clip.Quote(b))
	}
	for i := range len(layout) {
		if layout[i] == '0' && !isDigit(b[i]) || layout[i] != '0' && b[i] != layout[i] {
			return 0, fmt.Sprintf("invalid timestamp %s (want YYYY-MM-DD hh:mm:ss)", clip.Quote(b))
		}
	}
	num := func(i, n int) int64 {
		var v int64
		for _, c := range b[i : i+n] {
			v = v*10 + int64(c-'0')
		}
		return v
	}
	y, mo, d := num(0, 4), num(5, 2), num(8, 2)
	h, mi, s := num(11, 2), num(14, 2), num(17, 2)
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59 {
		return 0, fmt.Sprintf("invalid timestamp %s: field out of range", clip.Quote(b))
	}
	return daysFromCivil(y, mo, d)*86400 + h*3600 + mi*60 + s, ""
}

// daysIn returns the number of days in month m of year y (proleptic Gregorian calendar).
func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the number of days from 1970-01-01 to y-m-d (H. Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
