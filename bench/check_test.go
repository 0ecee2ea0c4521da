package bench

import (
	"strings"
	"testing"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// TestCheckModels requires the first job whose model, through the model map, the profile does
// not know, named by its mapped model and line, and no change to the jobs.
func TestCheckModels(t *testing.T) {
	prof, err := profile.LoadFile("../results/profiles/gavel-v100.json")
	if err != nil {
		t.Fatal(err)
	}
	mm, err := profile.LoadModelMap(strings.NewReader("trace_model,trace_batch,profile_model,profile_batch,note\n"+
		"vgg,*,resnet50,*,\nbert,*,gpt9,*,\n"), "m.csv")
	if err != nil {
		t.Fatal(err)
	}
	jobs := []trace.Job{{ID: 1, Model: "resnet50", Line: 2}, {ID: 2, Model: "vgg", Line: 3}, {ID: 3, Model: "bert", Line: 4}, {ID: 4, Model: "zzz", Line: 5}}
	if err := CheckModels(jobs[:2], "t.csv", prof, mm); err != nil {
		t.Errorf("known models: %v", err)
	}
	err = CheckModels(jobs, "t.csv", prof, mm)
	if want := `t.csv:4: model: unknown model "gpt9"`; err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "(use --model-map to map trace models onto the profile)") {
		t.Errorf("err = %v, want %s…", err, want)
	}
	err = CheckModels(jobs[1:], "t.csv", prof, nil)
	if want := `t.csv:3: model: unknown model "vgg"`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("without a map: err = %v, want %s…", err, want)
	}
	if jobs[1].Model != "vgg" || jobs[2].Model != "bert" {
		t.Errorf("the jobs were renamed: %+v", jobs)
	}
}
