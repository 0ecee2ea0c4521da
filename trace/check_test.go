package trace

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckModels(t *testing.T) {
	t.Parallel()
	jobs := []Job{{ID: 1, Model: "bert", Line: 2}, {ID: 2, Model: "x", Line: 3}, {ID: 3, Model: "y", Line: 4}}
	tests := []struct {
		name  string
		known []string
		want  string
	}{
		{"all known", []string{"y", "x", "bert"}, ""},
		{"first unknown named", []string{"vgg16", "bert", "resnet18"}, `t.csv:3: model: unknown model "x" (known: bert, resnet18, vgg16)`},
		{"nothing known", nil, `t.csv:2: model: unknown model "bert" (known: )`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckModels(jobs, "t.csv", tt.known)
			got := ""
			if err != nil {
				got = err.Error()
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Errorf("error %T is not a *SyntaxError", err)
				}
			}
			if got != tt.want {
				t.Errorf("CheckModels = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDropOversized(t *testing.T) {
	t.Parallel()
	jobs := []Job{{ID: 1, GPUs: 8, Line: 2}, {ID: 2, GPUs: 64, Line: 3}, {ID: 3, GPUs: 32, Line: 4}, {ID: 4, GPUs: 16, Line: 5}}
	tests := []struct {
		name        string
		max         int
		drop        bool
		wantIDs     []JobID
		wantDropped int
		wantErr     string
	}{
		{"all fit", 64, false, []JobID{1, 2, 3, 4}, 0, ""},
		{"drop", 16, true, []JobID{1, 4}, 2, ""},
		{"error names the first", 16, false, nil, 0, "t.csv:3: num_gpu: job 2 needs 64 GPUs, more than the cluster's 16"},
		{"bad cluster", 0, true, nil, 0, "trace: t.csv: cluster size 0 is not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kept, dropped, err := DropOversized(jobs, "t.csv", tt.max, tt.drop)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Fatalf("error = %q, want %q", gotErr, tt.wantErr)
			}
			var ids []JobID
			for _, j := range kept {
				ids = append(ids, j.ID)
			}
			if d := cmp.Diff(tt.wantIDs, ids); d != "" || dropped != tt.wantDropped {
				t.Errorf("dropped %d (want %d), kept (-want +got):\n%s", dropped, tt.wantDropped, d)
			}
		})
	}
	if len(jobs) != 4 || jobs[1].ID != 2 {
		t.Error("DropOversized modified its input")
	}
}
