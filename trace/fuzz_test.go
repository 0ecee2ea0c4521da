package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addSeeds adds the named files under testdata/ and the given strings to the seed corpus.
// The testdata files are excerpts of Apache-2.0 traces; testdata/README.md gives their sources.
func addSeeds(f *testing.F, files []string, inputs ...string) {
	f.Helper()
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range inputs {
		f.Add([]byte(s))
	}
}

// checkRead is the property every fuzz target checks: reading never panics; an error is a
// positioned *SyntaxError; a trace that reads without error is written canonically, read back
// and found identical (apart from source lines), and Write∘Read is then a fixed point.
func checkRead(t *testing.T, data []byte, format Format) {
	jobs, err := ReadAll(bytes.NewReader(data), "fuzz.csv", format, Options{Seed: 3})
	if err != nil {
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("error %v (%T) is not a *SyntaxError", err, err)
		}
		if se.Line < 1 || se.File != "fuzz.csv" || !strings.HasPrefix(err.Error(), "fuzz.csv:") {
			t.Fatalf("badly positioned error %q (%+v)", err, *se)
		}
		if jobs != nil {
			t.Fatalf("ReadAll returned %d jobs with error %v", len(jobs), err)
		}
		return
	}
	if len(jobs) == 0 {
		t.Fatal("ReadAll returned no jobs and no error")
	}
	var b bytes.Buffer
	if err := Write(&b, jobs); err != nil {
		t.Fatalf("Write rejected jobs that were read: %v", err)
	}
	first := b.String()
	back, err := ReadAll(&b, "canonical.csv", FormatCanonical, Options{})
	if err != nil {
		t.Fatalf("reading the canonical form back: %v\n%s", err, first)
	}
	if d := diffJobs(jobs, back, true); d != "" {
		t.Fatalf("canonical round trip (-read +reread):\n%s", d)
	}
	var again bytes.Buffer
	if err := Write(&again, back); err != nil {
		t.Fatal(err)
	}
	if again.String() != first {
		t.Fatalf("Write∘Read is not a fixed point:\n%s\n---\n%s", first, again.String())
	}
}

const (
	fuzzCanonicalHeader = "job_id,submit_s,num_gpu,model,batch_size,iterations"
	fuzzMuriHeader      = "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval," +
		"iteration_time,resource_time_0,resource_time_1,resource_time_2,priority"
	fuzzTiresiasHeader = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval"
	fuzzPhillyHeader   = "timestamp,duration,num_gpus,gpu_time,cluster"
)

func FuzzReadCanonical(f *testing.F) {
	addSeeds(f, []string{"canonical_sample.csv"},
		fuzzCanonicalHeader+"\n0,0,1,m,0,1\n",
		fuzzCanonicalHeader+",iteration_time_s\n1,9223372036.854775807,2147483647,a b,2147483647,9223372036854775807,0.000000001\n",
		fuzzCanonicalHeader+"\n1,1.5,1,m,1,1\n1,2,1,m,1,1\n",
		fuzzCanonicalHeader+"\r\n\r\n 2 , .5 ,1,x,0,3\r\n",
		fuzzCanonicalHeader+"\n0,-0,1,m,0,1.000\n",
		"")
	f.Fuzz(func(t *testing.T, data []byte) { checkRead(t, data, FormatCanonical) })
}

func FuzzReadMuri(f *testing.F) {
	addSeeds(f, []string{"muri_sample.csv"},
		fuzzMuriHeader+"\n33,8,6568.5,294,a2c,64,162000,16000,555.25,502.0,14,0.4,0\n",
		fuzzMuriHeader+"\n0,1,0.000001,1,m,0,,,0,,,,\n",
		fuzzMuriHeader+"\n0,1,1e3,1,m,0,0,0,0,0,0,0,0\n")
	f.Fuzz(func(t *testing.T, data []byte) { checkRead(t, data, FormatMuri) })
}

func FuzzReadTiresias(f *testing.F) {
	addSeeds(f, []string{"tiresias_sample.csv"},
		fuzzTiresiasHeader+"\n0,1,0,3,alexnet,2,0\n1,1,0,7,alexnet,0,0\n",
		fuzzTiresiasHeader+"\n0,1,0,9223372036854775807,m,9223372036.854775807,0\n")
	f.Fuzz(func(t *testing.T, data []byte) { checkRead(t, data, FormatTiresias) })
}

func FuzzReadPhilly(f *testing.F) {
	addSeeds(f, []string{"philly_sample.csv"},
		fuzzPhillyHeader+"\n2017-10-09 07:01:55,0.000000001,1,0,a\n",
		fuzzPhillyHeader+"\n0000-01-01 00:00:00,1,1,1,a\n2000-02-29 23:59:59,9223372036.854775807,128,1,b\n",
		fuzzPhillyHeader+"\n2017-10-09 07:01:55,66.0,0,0,a\n")
	f.Fuzz(func(t *testing.T, data []byte) { checkRead(t, data, FormatPhilly) })
}

func FuzzAuto(f *testing.F) {
	addSeeds(f, []string{"canonical_sample.csv", "muri_sample.csv", "tiresias_sample.csv", "philly_sample.csv"},
		"a,b\n1,2\n", "job_id,job_id\n", "\xef\xbb\xbf"+fuzzTiresiasHeader+"\n0,1,0,1,m,1,1\n", "\n\n")
	f.Fuzz(func(t *testing.T, data []byte) { checkRead(t, data, FormatAuto) })
}
