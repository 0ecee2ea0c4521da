package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplayFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A simulation's run directory has neither file: no rows, no error.
	if s, err := ReadSegments(dir); s != nil || err != nil {
		t.Errorf("no segments.csv: %v %v", s, err)
	}
	if a, err := ReadAttempts(dir); a != nil || err != nil {
		t.Errorf("no attempts.csv: %v %v", a, err)
	}
	write(DecisionsFile, `{"t_s":0.000,"event":"submit","job":1}`+"\n\n"+`{"t_s":1.5,"event":"start","job":1,"gpus":["0-0"],"sub_batch":8,"partners":[2]}`+"\n")
	ds, err := ReadDecisions(dir)
	if err != nil || len(ds) != 2 || ds[1].Line != 3 || ds[1].SubBatch != 8 || ds[1].Partners[0] != 2 {
		t.Fatalf("decisions: %+v, %v", ds, err)
	}
	write(DecisionsFile, `{"t_s":0,"event":"submit","job":1}`+"\n"+`{"t_s":`+"\n")
	if _, err := ReadDecisions(dir); err == nil || !strings.Contains(err.Error(), "decisions.jsonl:2:") {
		t.Errorf("malformed line: %v", err)
	}
	write(SegmentsFile, SegmentsColumns+"\n3,1,0.000,1.500,8,1 2,10,0.100000,0.090000,1.1111,1.2000,1.3333,measured\n")
	segs, err := ReadSegments(dir)
	if err != nil || len(segs) != 1 || len(segs[0].Partners) != 2 || segs[0].Ratio != 1.1111 || segs[0].SoloRef != "measured" {
		t.Fatalf("segments: %+v, %v", segs, err)
	}
	write(AttemptsFile, AttemptsColumns+"\n3,2,vgg16,16,8,0 1,40,40,2.000,-1,9.000,7.000,maybe,exit code 0\n")
	if _, err := ReadAttempts(dir); err == nil || !strings.Contains(err.Error(), "attempts.csv:2:") || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("bad stopped field: %v", err)
	}
}
