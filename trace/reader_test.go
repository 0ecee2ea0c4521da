package trace

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadAll(t *testing.T) {
	t.Parallel()
	const muriHeader = "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval," +
		"iteration_time,resource_time_0,resource_time_1,resource_time_2,priority\n"
	tests := []struct {
		name   string
		format Format
		in     string
		want   []Job
	}{
		{
			name:   "canonical/minimal",
			format: FormatAuto,
			in:     "job_id,submit_s,num_gpu,model,batch_size,iterations\n7,1.5,2,resnet18,128,100\n",
			want:   []Job{{ID: 7, Submit: 1500 * time.Millisecond, GPUs: 2, Iters: 100, Model: "resnet18", Batch: 128, Line: 2}},
		},
		{
			name:   "canonical/iteration time, nanosecond precision, batch 0",
			format: FormatCanonical,
			in: "job_id,submit_s,num_gpu,model,batch_size,iterations,iteration_time_s\n" +
				"1,0.000000001,1,bert,0,5,0.192\n2,3600,8,vgg16,16,1,0\n",
			want: []Job{
				{ID: 1, Submit: 1, GPUs: 1, Iters: 5, Model: "bert", IterTime: 192 * time.Millisecond, Line: 2},
				{ID: 2, Submit: time.Hour, GPUs: 8, Iters: 1, Model: "vgg16", Batch: 16, Line: 3},
			},
		},
		{
			name:   "canonical/columns in another order",
			format: FormatAuto,
			in:     "model,iterations,job_id,batch_size,num_gpu,submit_s\nvgg19,10,3,16,4,2\n",
			want:   []Job{{ID: 3, Submit: 2 * time.Second, GPUs: 4, Iters: 10, Model: "vgg19", Batch: 16, Line: 2}},
		},
		{
			name:   "canonical/sorted by submit then id; blanks, spaces and trailing zeros",
			format: FormatAuto,
			in: "\xef\xbb\xbf job_id , submit_s,num_gpu,model,batch_size,iterations\r\n\r\n" +
				"5, 10.0 ,1,a,1,1\r\n  \n4,10,1,b,1,1\r\n3,9.5000000000,1,c,1,1",
			want: []Job{
				{ID: 3, Submit: 9500 * time.Millisecond, GPUs: 1, Iters: 1, Model: "c", Batch: 1, Line: 6},
				{ID: 4, Submit: 10 * time.Second, GPUs: 1, Iters: 1, Model: "b", Batch: 1, Line: 5},
				{ID: 5, Submit: 10 * time.Second, GPUs: 1, Iters: 1, Model: "a", Batch: 1, Line: 3},
			},
		},
		{
			name:   "muri/milliseconds, decimal ms, CRLF",
			format: FormatAuto,
			in: strings.ReplaceAll(muriHeader, "\n", "\r\n") +
				"0,8,0,10956,gpt2,4,5095000,91000,437,0.6,419,49,0\r\n" +
				"33,8,6568.5,294,a2c,64,162000.7,16000,555.25,502.0,14,0.4,1\r\n",
			want: []Job{
				{ID: 0, Submit: 0, GPUs: 8, Iters: 10956, Model: "gpt2", Batch: 4, IterTime: 437 * time.Millisecond, Line: 2,
					Stages: &Stages{Time: [3]time.Duration{600 * time.Microsecond, 419 * time.Millisecond, 49 * time.Millisecond}, Duration: 5095 * time.Second}},
				{ID: 33, Submit: 6568500 * time.Microsecond, GPUs: 8, Iters: 294, Model: "a2c", Batch: 64,
					IterTime: 555250 * time.Microsecond, Line: 3,
					Stages: &Stages{Time: [3]time.Duration{502 * time.Millisecond, 14 * time.Millisecond, 400 * time.Microsecond}, Priority: 1, Duration: 162 * time.Second}}, // whole ms, as the lineage reads them
			},
		},
		{
			name:   "muri/forced",
			format: FormatMuri,
			in:     muriHeader + "1,1,1000,1,dqn,128,0,0,0,0,0,0,0\n",
			want:   []Job{{ID: 1, Submit: time.Second, GPUs: 1, Iters: 1, Model: "dqn", Batch: 128, Line: 2, Stages: &Stages{}}},
		},
		{
			name:   "tiresias/seconds, iteration time from duration",
			format: FormatAuto,
			in: "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n" +
				"0,1,0,606,vgg19,164,30\n1,8,30,133,vgg11,147,23\n2,2,53,3,alexnet,0,0\n3,1,60,3,alexnet,2,0\n",
			want: []Job{
				{ID: 0, Submit: 0, GPUs: 1, Iters: 606, Model: "vgg19", IterTime: 270627063, Line: 2},
				{ID: 1, Submit: 30 * time.Second, GPUs: 8, Iters: 133, Model: "vgg11", IterTime: 1105263158, Line: 3},
				{ID: 2, Submit: 53 * time.Second, GPUs: 2, Iters: 3, Model: "alexnet", Line: 4},
				{ID: 3, Submit: time.Minute, GPUs: 1, Iters: 3, Model: "alexnet", IterTime: 666666667, Line: 5},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadAll(strings.NewReader(tt.in), "t.csv", tt.format, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d := diffJobs(tt.want, got, false); d != "" {
				t.Errorf("ReadAll mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestReaderScanKeepsFileOrder(t *testing.T) {
	t.Parallel()
	in := "job_id,submit_s,num_gpu,model,batch_size,iterations\n2,5,1,a,1,1\n1,0,1,b,1,1\n"
	r := NewReader(strings.NewReader(in), "t.csv", FormatAuto, Options{})
	if f := r.Format(); f != FormatAuto {
		t.Errorf("Format before Scan = %v, want auto", f)
	}
	var ids []JobID
	for r.Scan() {
		ids = append(ids, r.Job().ID)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]JobID{2, 1}, ids); d != "" {
		t.Errorf("ids (-want +got):\n%s", d)
	}
	if f := r.Format(); f != FormatCanonical {
		t.Errorf("Format = %v, want canonical", f)
	}
	if r.Scan() {
		t.Error("Scan after the end returned true")
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	const (
		can     = "job_id,submit_s,num_gpu,model,batch_size,iterations\n"
		canIter = "job_id,submit_s,num_gpu,model,batch_size,iterations,iteration_time_s\n"
		muri    = "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval," +
			"iteration_time,resource_time_0,resource_time_1,resource_time_2,priority\n"
		tir    = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
		philly = "timestamp,duration,num_gpus,gpu_time,cluster\n"
	)
	tests := []struct {
		name   string
		format Format
		in     string
		line   int
		want   string
	}{
		{"empty file", FormatAuto, "", 1, "x.csv:1: empty file: no header line"},
		{"blank lines only", FormatAuto, "\n \n\r\n", 3, "x.csv:3: empty file: no header line"},
		{"header only", FormatAuto, can, 1, "x.csv:1: no jobs after the header"},
		{"header only after blank lines", FormatAuto, "\n\n" + tir + "\n", 3, "x.csv:3: no jobs after the header"},
		{"unknown header", FormatAuto, "a,b\n1,2\n", 1, `x.csv:1: unknown header "a,b" (known headers: ` +
			"canonical: job_id,submit_s,num_gpu,model,batch_size,iterations[,iteration_time_s]; " +
			"muri: job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,iteration_time," +
			"resource_time_0,resource_time_1,resource_time_2,priority; " +
			"tiresias: job_id,num_gpu,submit_time,iterations,model_name,duration,interval; " +
			"philly: timestamp,duration,num_gpus,gpu_time,cluster)"},
		{"muri header missing a column", FormatAuto, strings.Replace(muri, ",priority", "", 1) + "0\n", 1,
			`x.csv:1: unknown header "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,` +
				`iteration_time,resource_time_0,resource_time_1,resource_time_2" (known headers: ` +
				"canonical: job_id,submit_s,num_gpu,model,batch_size,iterations[,iteration_time_s]; " +
				"muri: job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,iteration_time," +
				"resource_time_0,resource_time_1,resource_time_2,priority; " +
				"tiresias: job_id,num_gpu,submit_time,iterations,model_name,duration,interval; " +
				"philly: timestamp,duration,num_gpus,gpu_time,cluster)"},
		{"header of another format", FormatMuri, tir + "0,1,0,1,a,1,1\n", 1,
			`x.csv:1: header "job_id,num_gpu,submit_time,iterations,model_name,duration,interval" does not match ` +
				"the muri format (want job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval," +
				"iteration_time,resource_time_0,resource_time_1,resource_time_2,priority)"},
		{"duplicate column", FormatAuto, "job_id,job_id\n", 1, `x.csv:1: duplicate column "job_id" in the header`},
		{"non-numeric submit", FormatAuto, muri + "0,1,0,1,a,1,0,0,1,0,0,0,0\n5,1,2o20,1,a,1,0,0,1,0,0,0,0\n", 3,
			`x.csv:3: submit_time: invalid number "2o20"`},
		{"non-numeric gpus", FormatAuto, can + "0,0,four,a,1,1\n", 2, `x.csv:2: num_gpu: invalid number "four"`},
		{"fractional gpus", FormatAuto, can + "0,0,1.5,a,1,1\n", 2, `x.csv:2: num_gpu: invalid number "1.5": not an integer`},
		{"missing value", FormatAuto, can + "0,,1,a,1,1\n", 2, `x.csv:2: submit_s: missing value`},
		{"too few fields", FormatAuto, can + "0,0,1,a,1\n", 2, "x.csv:2: wrong number of fields: got 5, want 6"},
		{"too many fields", FormatAuto, tir + "0,1,0,1,a,1,1,9\n", 2, "x.csv:2: wrong number of fields: got 8, want 7"},
		{"zero gpus", FormatAuto, can + "0,0,0,a,1,1\n", 2, `x.csv:2: num_gpu: must be positive, got "0"`},
		{"negative gpus", FormatAuto, tir + "0,-2,0,1,a,1,1\n", 2, `x.csv:2: num_gpu: must be positive, got "-2"`},
		{"too many gpus", FormatAuto, can + "0,0,3000000000,a,1,1\n", 2, `x.csv:2: num_gpu: number "3000000000" out of range`},
		{"zero iterations", FormatAuto, can + "0,0,1,a,1,0\n", 2, `x.csv:2: iterations: must be positive, got "0"`},
		{"negative iterations", FormatAuto, muri + "0,1,0,-5,a,1,0,0,1,0,0,0,0\n", 2, `x.csv:2: iterations: must be positive, got "-5"`},
		{"negative submit", FormatAuto, tir + "0,1,-1,1,a,1,1\n", 2, `x.csv:2: submit_time: must not be negative, got "-1"`},
		{"negative job id", FormatAuto, can + "-1,0,1,a,1,1\n", 2, `x.csv:2: job_id: must not be negative, got "-1"`},
		{"negative batch", FormatAuto, can + "0,0,1,a,-4,1\n", 2, `x.csv:2: batch_size: must not be negative, got "-4"`},
		{"negative iteration time", FormatAuto, muri + "0,1,0,1,a,1,0,0,-1,0,0,0,0\n", 2,
			`x.csv:2: iteration_time: must not be negative, got "-1"`},
		{"negative resource time", FormatAuto, muri + "0,1,0,1,a,1,0,0,1,0,-8,0,0\n", 2,
			`x.csv:2: resource_time_1: must not be negative, got "-8"`},
		{"non-numeric resource time", FormatAuto, muri + "0,1,0,1,a,1,0,0,1,0,0,x,0\n", 2,
			`x.csv:2: resource_time_2: invalid number "x"`},
		{"fractional priority", FormatAuto, muri + "0,1,0,1,a,1,0,0,1,0,0,0,0.5\n", 2,
			`x.csv:2: priority: invalid number "0.5": not an integer`},
		{"negative priority", FormatAuto, muri + "0,1,0,1,a,1,0,0,1,0,0,0,-1\n", 2,
			`x.csv:2: priority: must not be negative, got "-1"`},
		{"negative tiresias duration", FormatAuto, tir + "0,1,0,1,a,-1,1\n", 2, `x.csv:2: duration: must not be negative, got "-1"`},
		{"NaN", FormatAuto, can + "0,NaN,1,a,1,1\n", 2, `x.csv:2: submit_s: invalid number "NaN": not finite`},
		{"Inf", FormatAuto, muri + "0,1,0,1,a,1,0,0,+Inf,0,0,0,0\n", 2, `x.csv:2: iteration_time: invalid number "+Inf": not finite`},
		{"infinity", FormatAuto, tir + "0,1,-infinity,1,a,1,1\n", 2, `x.csv:2: submit_time: invalid number "-infinity": not finite`},
		{"exponent", FormatAuto, can + "0,1e3,1,a,1,1\n", 2, `x.csv:2: submit_s: invalid number "1e3"`},
		{"below a nanosecond", FormatAuto, can + "0,0.0000000001,1,a,1,1\n", 2,
			`x.csv:2: submit_s: invalid number "0.0000000001": finer than a nanosecond`},
		{"below a nanosecond in ms", FormatAuto, muri + "0,1,0.0000001,1,a,1,0,0,1,0,0,0,0\n", 2,
			`x.csv:2: submit_time: invalid number "0.0000001": finer than a nanosecond`},
		{"submit overflow", FormatAuto, can + "0,9223372037,1,a,1,1\n", 2, `x.csv:2: submit_s: number "9223372037" out of range`},
		{"iterations overflow", FormatAuto, can + "0,0,1,a,1,9223372036854775808\n", 2,
			`x.csv:2: iterations: number "9223372036854775808" out of range`},
		{"duplicate job id", FormatAuto, can + "4,0,1,a,1,1\n5,0,1,a,1,1\n\n4,1,1,a,1,1\n", 5,
			"x.csv:5: job_id: duplicate job id 4 (first on line 2)"},
		{"empty model", FormatAuto, can + "0,0,1,,1,1\n", 2, "x.csv:2: model: missing value"},
		{"model with a quote", FormatAuto, tir + `0,1,0,1,"a",1,1` + "\n", 2, `x.csv:2: model_name: invalid model name "\"a\""`},
		{"model not UTF-8", FormatAuto, can + "0,0,1,\xff,1,1\n", 2, `x.csv:2: model: invalid model name "\xff": not UTF-8`},
		{"line too long", FormatAuto, can + "0,0,1," + strings.Repeat("a", maxLine) + ",1,1\n", 2,
			"x.csv:2: line longer than 1048576 bytes"},
		{"philly zero duration", FormatAuto, philly + "2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 07:01:56,0.0,1,0,a\n", 3,
			`x.csv:3: duration: must be positive, got "0.0"`},
		{"philly zero gpus", FormatPhilly, philly + "2017-10-09 07:01:55,66.0,0,66.0,a\n", 2,
			`x.csv:2: num_gpus: must be positive, got "0"`},
		{"philly negative gpus", FormatAuto, philly + "2017-10-09 07:01:55,66.0,-8,66.0,a\n", 2,
			`x.csv:2: num_gpus: must be positive, got "-8"`},
		{"philly bad timestamp", FormatAuto, philly + "2017-10-09T07:01:55,66.0,1,66.0,a\n", 2,
			`x.csv:2: timestamp: invalid timestamp "2017-10-09T07:01:55" (want YYYY-MM-DD hh:mm:ss)`},
		{"philly impossible date", FormatAuto, philly + "2017-02-29 07:01:55,66.0,1,66.0,a\n", 2,
			`x.csv:2: timestamp: invalid timestamp "2017-02-29 07:01:55": field out of range`},
		{"philly NaN duration", FormatAuto, philly + "2017-10-09 07:01:55,nan,1,66.0,a\n", 2,
			`x.csv:2: duration: invalid number "nan": not finite`},
		{"philly span beyond the time range", FormatAuto, philly + "1700-01-01 00:00:00,1,1,1,a\n2017-01-01 00:00:00,1,1,1,a\n", 3,
			"x.csv:3: timestamp: more than the 100-year horizon after the earliest timestamp"},
		{"philly header only", FormatAuto, philly, 1, "x.csv:1: no jobs after the header"},
		// The horizon (internal/simtime): no job submits after 100 years or, run alone, ends after.
		{"2^63 iterations", FormatAuto, can + "0,0,1,a,1,9223372036854775807\n", 0, ""},
		{"2^63 iterations of 1 s", FormatAuto, canIter + "0,0,1,a,1,9223372036854775807,1\n", 2,
			"x.csv:2: iterations: 9223372036854775807 × 1 s per iteration ends after more than 292 years, beyond the 100-year horizon"},
		{"10^12 iterations of 1000 s", FormatAuto, canIter + "0,0,1,a,1,1000000000000,1000\n", 2,
			"x.csv:2: iterations: 1000000000000 × 1000 s per iteration ends after more than 292 years, beyond the 100-year horizon"},
		{"run ends past the horizon", FormatAuto, canIter + "0,3000000000,1,a,1,1000,200000\n", 2,
			"x.csv:2: iterations: 1000 × 2.315 days per iteration ends after 101.5 years, beyond the 100-year horizon"},
		{"submit past the horizon", FormatAuto, can + "0,9223372036,1,a,1,1\n", 2,
			"x.csv:2: submit_s: submits after 292.5 years, beyond the 100-year horizon"},
		{"muri run past the horizon", FormatAuto, muri + "0,1,0,1000000000000,a,1,0,0,1000000,0,0,0,0\n", 2,
			"x.csv:2: iterations: 1000000000000 × 1000 s per iteration ends after more than 292 years, beyond the 100-year horizon"},
		{"tiresias duration past the horizon", FormatAuto, tir + "0,1,0,1,a,9223372036,1\n", 2,
			"x.csv:2: duration: 1 × 292.5 years per iteration ends after 292.5 years, beyond the 100-year horizon"},
		{"philly duration past the horizon", FormatAuto, philly + "2017-10-09 07:01:55,9223372036,1,66.0,a\n", 2,
			"x.csv:2: duration: "},
		{"1 MB header", FormatAuto, strings.Repeat("h", 1<<20-1) + "\n", 1,
			`x.csv:1: unknown header "` + strings.Repeat("h", 256) + `…" (1048575 bytes) (known headers: ` +
				"canonical: job_id,submit_s,num_gpu,model,batch_size,iterations[,iteration_time_s]; " +
				"muri: job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,iteration_time," +
				"resource_time_0,resource_time_1,resource_time_2,priority; " +
				"tiresias: job_id,num_gpu,submit_time,iterations,model_name,duration,interval; " +
				"philly: timestamp,duration,num_gpus,gpu_time,cluster)"},
		{"1 MB number", FormatAuto, can + "0," + strings.Repeat("1", 1<<19) + "x,1,a,1,1\n", 2,
			`x.csv:2: submit_s: invalid number "` + strings.Repeat("1", 256) + `…" (524289 bytes)`},
		{"philly wrong field count", FormatAuto, philly + "2017-10-09 07:01:55,66.0,1\n", 2, "x.csv:2: wrong number of fields: got 3, want 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			jobs, err := ReadAll(strings.NewReader(tt.in), "x.csv", tt.format, Options{})
			if tt.want == "" { // valid: without an iteration time nothing is beyond the horizon yet
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ReadAll = %d jobs, want error %q", len(jobs), tt.want)
			}
			if jobs != nil {
				t.Errorf("ReadAll returned %d jobs with its error", len(jobs))
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *SyntaxError", err, err)
			}
			if se.Line != tt.line || se.File != "x.csv" {
				t.Errorf("position = %s:%d, want x.csv:%d", se.File, se.Line, tt.line)
			}
			if got := err.Error(); got != tt.want && !(strings.HasSuffix(tt.want, ": ") && strings.HasPrefix(got, tt.want)) {
				t.Errorf("error:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestSkipInvalidPhilly(t *testing.T) {
	t.Parallel()
	in := "timestamp,duration,num_gpus,gpu_time,cluster\n" +
		"2017-10-09 07:01:55,66.0,1,66.0,a\n" +
		"2017-10-09 07:00:00,0,1,0,a\n" + // invalid, but still the earliest timestamp
		"2017-10-09 07:02:00,10,0,0,a\n" + // invalid
		"2017-10-09 07:03:00,10,2,20,a\n"
	r := NewReader(strings.NewReader(in), "p.csv", FormatAuto, Options{SkipInvalid: true})
	var got []Job
	for r.Scan() {
		got = append(got, r.Job())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Skipped() != 2 {
		t.Errorf("Skipped = %d, want 2", r.Skipped())
	}
	type idSubmit struct {
		ID     JobID
		Submit time.Duration
		Line   int
	}
	var short []idSubmit
	for _, j := range got {
		short = append(short, idSubmit{j.ID, j.Submit, j.Line})
	}
	want := []idSubmit{{0, 115 * time.Second, 2}, {3, 180 * time.Second, 5}}
	if d := cmp.Diff(want, short); d != "" {
		t.Errorf("jobs (-want +got):\n%s", d)
	}

	allBad := "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:00:00,0,1,0,a\n"
	_, err := ReadAll(strings.NewReader(allBad), "p.csv", FormatPhilly, Options{SkipInvalid: true})
	if want := "p.csv:1: no valid jobs after the header (1 invalid rows skipped)"; err == nil || err.Error() != want {
		t.Errorf("all rows invalid: error %v, want %s", err, want)
	}
}

func TestPhillyMapping(t *testing.T) {
	t.Parallel()
	const header = "timestamp,duration,num_gpus,gpu_time,cluster\n"
	rows := []string{
		"2017-10-09 07:01:55,66.0,1,66.0,11cb48\n",
		"2017-10-09 06:13:03,2951.0,1,2951.0,6214e9\n",
		"2017-09-29 07:58:32,860662.0,4,3442648.0,6c71a0\n",
		"2017-10-09 06:13:36,0.1,1,0.1,6214e9\n",
	}
	read := func(t *testing.T, in string, opt Options) []Job {
		t.Helper()
		jobs, err := ReadAll(strings.NewReader(in), "p.csv", FormatAuto, opt)
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	one := []ModelSpec{{Name: "m", Batch: 32, IterTime: 2 * time.Second, Weight: 1}}
	got := read(t, header+strings.Join(rows, ""), Options{PhillyModels: one})
	earliest := time.Date(2017, 9, 29, 7, 58, 32, 0, time.UTC)
	at := func(s string) time.Duration {
		ts, err := time.Parse(time.DateTime, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts.Sub(earliest)
	}
	want := []Job{
		{ID: 2, Submit: 0, GPUs: 4, Iters: 430331, Model: "m", Batch: 32, IterTime: 2 * time.Second, Line: 4},
		{ID: 1, Submit: at("2017-10-09 06:13:03"), GPUs: 1, Iters: 1476, Model: "m", Batch: 32, IterTime: 2 * time.Second, Line: 3},
		{ID: 3, Submit: at("2017-10-09 06:13:36"), GPUs: 1, Iters: 1, Model: "m", Batch: 32, IterTime: 2 * time.Second, Line: 5},
		{ID: 0, Submit: at("2017-10-09 07:01:55"), GPUs: 1, Iters: 33, Model: "m", Batch: 32, IterTime: 2 * time.Second, Line: 2},
	}
	if d := diffJobs(want, got, false); d != "" {
		t.Errorf("single-model mapping (-want +got):\n%s", d)
	}

	// PhillyModelsFrom stands for PhillyModels: asked once, for a Philly table only.
	calls := 0
	from := func() []ModelSpec { calls++; return one }
	got = read(t, header+strings.Join(rows, ""), Options{PhillyModelsFrom: from})
	if d := diffJobs(want, got, false); d != "" || calls != 1 {
		t.Errorf("models from a function, asked %d times (-want +got):\n%s", calls, d)
	}
	read(t, "job_id,submit_s,num_gpu,model,batch_size,iterations\n1,0,1,m,32,10\n", Options{PhillyModelsFrom: from})
	if calls != 1 {
		t.Errorf("a canonical trace asked for the Philly models")
	}

	// The model of a row depends on the seed and the row index only: changing the other rows
	// leaves it alone.
	models := func(jobs []Job) map[JobID]string {
		m := make(map[JobID]string)
		for _, j := range jobs {
			m[j.ID] = j.Model
		}
		return m
	}
	base := models(read(t, header+strings.Join(rows, ""), Options{Seed: 7}))
	changed := header + rows[0] + "2017-01-01 00:00:00,5,8,40,x\n" + rows[2] + rows[3]
	other := models(read(t, changed, Options{Seed: 7}))
	for _, id := range []JobID{0, 2, 3} {
		if base[id] != other[id] {
			t.Errorf("row %d: model %q became %q when row 1 changed", id, base[id], other[id])
		}
	}

	// A zero weight is never drawn.
	weighted := []ModelSpec{
		{Name: "never", IterTime: time.Second, Weight: 0},
		{Name: "always", IterTime: time.Second, Weight: 3},
	}
	for _, j := range read(t, header+strings.Join(rows, ""), Options{Seed: 1, PhillyModels: weighted}) {
		if j.Model != "always" {
			t.Errorf("job %d got model %q with weight 0", j.ID, j.Model)
		}
	}
}

func TestPhillyModelsInvalid(t *testing.T) {
	t.Parallel()
	in := "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,a\n"
	tests := []struct {
		name   string
		models []ModelSpec
		want   string
	}{
		{"zero iteration time", []ModelSpec{{Name: "a", Weight: 1}}, `trace: p.csv: philly models: model "a": iteration time 0s is not positive`},
		{"negative weight", []ModelSpec{{Name: "a", IterTime: 1, Weight: -1}}, `trace: p.csv: philly models: model "a": weight -1 is not a finite number ≥ 0`},
		{"all weights zero", []ModelSpec{{Name: "a", IterTime: 1}}, "trace: p.csv: philly models: model weights sum to 0, want a finite positive number"},
		{"bad name", []ModelSpec{{Name: "a,b", IterTime: 1, Weight: 1}}, `trace: p.csv: philly models: model 0: invalid model name "a,b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadAll(strings.NewReader(in), "p.csv", FormatAuto, Options{PhillyModels: tt.models})
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %s", err, tt.want)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	for _, f := range []Format{FormatAuto, FormatCanonical, FormatMuri, FormatTiresias, FormatPhilly} {
		got, err := ParseFormat(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", f.String(), got, err, f)
		}
	}
	if _, err := ParseFormat("gavel"); err == nil {
		t.Error("ParseFormat(gavel) succeeded")
	}
	if s := Format(42).String(); s != "Format(42)" {
		t.Errorf("Format(42).String() = %q", s)
	}
}

func TestParseFixed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		scale int
		want  int64
		err   numErr
	}{
		{"0", 9, 0, numOK},
		{"-0", 9, 0, numOK},
		{"+12", 0, 12, numOK},
		{"1.5", 9, 1500000000, numOK},
		{".5", 6, 500000, numOK},
		{"5.", 6, 5000000, numOK},
		{"007.000000001", 9, 7000000001, numOK},
		{"1.0000000000000", 9, 1000000000, numOK},
		{"9223372036.854775807", 9, 9223372036854775807, numOK},
		{"9223372036.854775808", 9, 0, numRange},
		{"-9223372036.854775807", 9, -9223372036854775807, numOK},
		{"99999999999999999999999", 0, 0, numRange},
		{"1.0000000001", 9, 0, numPrecision},
		{"2.5", 0, 0, numPrecision},
		{"", 0, 0, numEmpty},
		{"-", 0, 0, numSyntax},
		{".", 0, 0, numSyntax},
		{"1..2", 0, 0, numSyntax},
		{"1 2", 0, 0, numSyntax},
		{"0x10", 0, 0, numSyntax},
		{"1_000", 0, 0, numSyntax},
		{"NAN", 0, 0, numNotFinite},
		{"-Infinity", 0, 0, numNotFinite},
		{"infinit", 0, 0, numSyntax},
	}
	for _, tt := range tests {
		got, err := parseFixed([]byte(tt.in), tt.scale)
		if got != tt.want || err != tt.err {
			t.Errorf("parseFixed(%q, %d) = %d, %d; want %d, %d", tt.in, tt.scale, got, err, tt.want, tt.err)
		}
	}
}

// TestReadStagesInterned checks that the jobs of a Muri trace with the same stage times and
// priority share one Stages, and jobs that differ in either do not.
func TestReadStagesInterned(t *testing.T) {
	t.Parallel()
	in := "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval," +
		"iteration_time,resource_time_0,resource_time_1,resource_time_2,priority\n" +
		"0,1,0,1,dqn,1,0,0,490,446,8,0,1\n1,1,0,1,dqn,1,0,0,490,446,8,0,1\n" +
		"2,1,0,1,dqn,1,0,0,490,446,8,0,0\n3,1,0,1,dqn,1,0,0,490,446,8.5,0,1\n"
	jobs, err := ReadAll(strings.NewReader(in), "t.csv", FormatMuri, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].Stages != jobs[1].Stages || jobs[0].Stages == jobs[2].Stages || jobs[0].Stages == jobs[3].Stages {
		t.Errorf("stages not interned by value: %p %p %p %p", jobs[0].Stages, jobs[1].Stages, jobs[2].Stages, jobs[3].Stages)
	}
	if !jobs[0].Stages.Opportunistic() || jobs[2].Stages.Opportunistic() {
		t.Errorf("priorities 1 and 0 read as opportunistic %v and %v", jobs[0].Stages.Opportunistic(), jobs[2].Stages.Opportunistic())
	}
}
