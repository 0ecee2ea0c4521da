package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// TestImportPolluxShipped checks step times against values computed by hand from the raw rows of
// imagenet/placements.csv and imagenet/scalability.csv (quoted).
func TestImportPolluxShipped(t *testing.T) {
	dir := filepath.Dir(dataFile(t, "pollux-step-times/imagenet/placements.csv"))
	apps := []string{"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}
	tb, err := ImportPollux(os.DirFS(filepath.Dir(dir)), apps, PolluxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// placement 1: local_bsz 28 → 0.20809321403503417 s (sync 0.0012060832023620606),
	// local_bsz 40 → 0.2534669876098633 s (sync 0.0012079136133193971). Sub-batch 32 lies 4/12 of the way.
	step1 := 0.20809321403503417 + (0.2534669876098633-0.20809321403503417)*4/12
	sync1 := 0.0012060832023620606 + (0.0012079136133193971-0.0012060832023620606)*4/12
	wantIter(t, tb, Config{"imagenet", 32, 32}, 1, step1)
	wantIter(t, tb, Config{"imagenet", 64, 32}, 1, step1+(step1-sync1))
	wantIter(t, tb, Config{"imagenet", 256, 32}, 1, step1+7*(step1-sync1))
	// placement 44 (8 GPUs): 28 → 0.5383406400680542 (sync 0.3363949096679688), 40 → 0.5778855800628662 (0.32333564300537104).
	step8 := 0.5383406400680542 + (0.5778855800628662-0.5383406400680542)*4/12
	sync8 := 0.3363949096679688 + (0.32333564300537104-0.3363949096679688)*4/12
	wantIter(t, tb, Config{"imagenet", 64, 32}, 8, 2*step8-sync8)
	// scalability 8 nodes, 32 replicas: 28 → 0.607877230644226 (0.4081695800781249), 40 → 0.6591570138931274 (0.4079818328857422).
	step32 := 0.607877230644226 + (0.6591570138931274-0.607877230644226)*4/12
	sync32 := 0.4081695800781249 + (0.4079818328857422-0.4081695800781249)*4/12
	wantIter(t, tb, Config{"imagenet", 64, 32}, 32, 2*step32-sync32)
	// cifar10 placement 1, local_bsz 32 (measured): 0.0427886962890625 s, sync 0.0004995360016822816.
	wantIter(t, tb, Config{"cifar10", 128, 32}, 1, 0.0427886962890625+3*(0.0427886962890625-0.0004995360016822816))
	// yolov3 is capped at sub-batch 8 (Pollux's max_local_bsz).
	if subs := tb.SubBatches("yolov3", 16); len(subs) != 2 || subs[0] != 8 {
		t.Errorf("yolov3 batch 16 sub-batches %v, want [8 4]", subs)
	}
	if len(tb.Pairs) != 0 || len(tb.Models) != 6 {
		t.Errorf("%d models, %d pairs", len(tb.Models), len(tb.Pairs))
	}
	checkTable(t, tb)
}

func TestImportPolluxFixture(t *testing.T) {
	fsys := os.DirFS("testdata/import/pollux")
	tb, err := ImportPollux(fsys, []string{"tiny"}, PolluxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantIter(t, tb, Config{"tiny", 8, 8}, 1, 0.1)
	wantIter(t, tb, Config{"tiny", 8, 8}, 2, 0.15)
	wantIter(t, tb, Config{"tiny", 8, 8}, 8, 0.4)
	wantIter(t, tb, Config{"tiny", 8, 8}, 32, 1.0)
	wantIter(t, tb, Config{"tiny", 32, 8}, 1, 0.1+3*0.09)
	wantIter(t, tb, Config{"tiny", 32, 8}, 8, 0.4+3*0.1)
	wantIter(t, tb, Config{"tiny", 32, 8}, 32, 1.0+3*0.1)
	wantIter(t, tb, Config{"tiny", 16, 16}, 2, 0.25)
	wantIter(t, tb, Config{"tiny", 128, 16}, 1, 0.2+7*0.19)
	m := tb.Model("tiny")
	if len(m.Configs) != 8 {
		t.Errorf("%d configs, want 8", len(m.Configs))
	}
	for _, s := range m.Configs {
		if _, ok := s.IterS[4]; ok {
			t.Errorf("%d/%d: no 4-GPU placement was measured", s.Batch, s.SubBatch)
		}
	}
	a := checkTable(t, tb)
	tb2, err := ImportPollux(fsys, []string{"tiny"}, PolluxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, checkTable(t, tb2)) {
		t.Error("importing twice gave different bytes")
	}
	tb, err = ImportPollux(fsys, []string{"tiny"}, PolluxOptions{MaxAccum: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tb.Model("tiny").Configs); n != 2 {
		t.Errorf("max accumulation 1: %d configs, want 2", n)
	}
}

func TestPolluxPlacement(t *testing.T) {
	for g, want := range map[int]string{1: "1", 3: "3", 4: "4", 5: "14", 8: "44", 11: "344", 16: "4444"} {
		if got := polluxPlacement(g); got != want {
			t.Errorf("polluxPlacement(%d) = %q, want %q", g, got, want)
		}
	}
}

func TestImportPolluxErrors(t *testing.T) {
	const ph = "placement,local_bsz,step_time,sync_time\n"
	for _, tc := range []struct {
		name, placements string
		want             []string
	}{
		{"header", "a,b,c,d\n", []string{"m/placements.csv:1: header"}},
		{"placement", ph + "0,8,0.1,0.01\n", []string{"m/placements.csv:2: placement"}},
		{"bsz", ph + "1,x,0.1,0.01\n", []string{"m/placements.csv:2: local_bsz"}},
		{"step", ph + "1,8,0,0\n", []string{"m/placements.csv:2: step_time"}},
		{"sync", ph + "1,8,0.1,0.2\n", []string{"m/placements.csv:2: sync_time"}},
		{"dup", ph + "1,8,0.1,0.01\n1,8,0.2,0.01\n", []string{"m/placements.csv:3:", "first on line 2"}},
		{"fields", ph + "1,8,0.1\n", []string{"m/placements.csv:2: want 4 fields"}},
		{"no pow2", ph + "1,9,0.1,0.01\n1,15,0.1,0.01\n", []string{"no power-of-two"}},
		{"empty", "", []string{"empty file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"m/placements.csv": {Data: []byte(tc.placements)}}
			_, err := ImportPollux(fsys, []string{"m"}, PolluxOptions{})
			wantErr(t, err, tc.want...)
		})
	}
	_, err := ImportPollux(fstest.MapFS{}, []string{"m"}, PolluxOptions{})
	wantErr(t, err, "placements.csv")
	_, err = ImportPollux(fstest.MapFS{}, nil, PolluxOptions{})
	wantErr(t, err, "no application")
	fsys := fstest.MapFS{
		"m/placements.csv":  {Data: []byte(ph + "1,8,0.1,0.01\n")},
		"m/scalability.csv": {Data: []byte("num_nodes,num_replicas,local_bsz,step_time,sync_time\n8,4,8,1,0.5\n")},
	}
	_, err = ImportPollux(fsys, []string{"m"}, PolluxOptions{})
	wantErr(t, err, "m/scalability.csv:2:", "num_nodes")
}

// FuzzImportPollux checks that no input panics and that every imported table normalizes and
// survives Write→Load byte for byte.
func FuzzImportPollux(f *testing.F) {
	f.Add(readFile(f, "testdata/import/pollux/tiny/placements.csv"), readFile(f, "testdata/import/pollux/tiny/scalability.csv"))
	f.Add([]byte("placement,local_bsz,step_time,sync_time\n1,1,1,0\n"), []byte(""))
	f.Fuzz(func(t *testing.T, placements, scalability []byte) {
		fsys := fstest.MapFS{"m/placements.csv": {Data: placements}}
		if len(scalability) > 0 {
			fsys["m/scalability.csv"] = &fstest.MapFile{Data: scalability}
		}
		tb, err := ImportPollux(fsys, []string{"m"}, PolluxOptions{})
		if err != nil {
			return
		}
		checkTable(t, tb)
	})
}
