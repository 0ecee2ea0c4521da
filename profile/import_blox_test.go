package profile

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestImportBloxShipped spot-checks slowdowns against the raw rows of norm_speed.csv (quoted).
func TestImportBloxShipped(t *testing.T) {
	path := dataFile(t, "blox-colocation/norm_speed.csv")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tb, err := ImportBlox(f, "norm_speed.csv", BloxOptions{Relative: true})
	if err != nil {
		t.Fatal(err)
	}
	r32, r64 := Config{"resnet50", 32, 32}, Config{"resnet50", 64, 64}
	// row 294: resnet50 1 GPU 32, 0.55 | resnet50 1 GPU 32, 0.51 → both speeds of r32 next to r32.
	wantXi(t, tb, r32, r32, 1, Timeslice, 2/(0.55+0.51))
	// row 295: resnet50 32 0.5 with resnet50 64 0.72; row 297: resnet50 64 0.64 with resnet50 32 0.43.
	wantXi(t, tb, r32, r64, 1, Timeslice, 2/(0.5+0.43))
	wantXi(t, tb, r64, r32, 1, Timeslice, 2/(0.72+0.64))
	// row 625: Bert-Large 4 GPUs 256/16 0.6, DP24, resnet50 4 GPUs 64 0.57 → per GPU 64/16.
	bert := Config{"bert-large", 64, 16}
	wantXi(t, tb, bert, r64, 4, Timeslice, 1/0.6)
	wantXi(t, tb, r64, bert, 4, Timeslice, 1/0.57)
	for _, p := range tb.Pairs {
		if p.A == r32 && p.B == r64 && p.N != 2 {
			t.Errorf("resnet50/32 | resnet50/64: n = %d, want 2", p.N)
		}
	}
	if _, ok := tb.Solo(Config{"gpt2-medium", 256, 8}); !ok {
		t.Error("gpt2-medium 512/8 on 2 GPUs should give config 256/8")
	}
	wantIter(t, tb, bert, 1, 1)
	if !hasNote(tb, "RELATIVE") || !hasNote(tb, "312 pipeline- or tensor-parallel rows") {
		t.Errorf("notes: %q", tb.Notes)
	}
	checkTable(t, tb)
}

func TestImportBloxFixture(t *testing.T) {
	data := readFile(t, "testdata/import/blox.csv")
	tb, err := ImportBlox(bytes.NewReader(data), "blox.csv", BloxOptions{Relative: true})
	if err != nil {
		t.Fatal(err)
	}
	bert, r64, r32, v32 := Config{"bert-large", 128, 16}, Config{"resnet50", 64, 64}, Config{"resnet50", 32, 32}, Config{"vgg19", 32, 32}
	wantXi(t, tb, bert, r64, 2, Timeslice, 2)
	wantXi(t, tb, r64, bert, 2, Timeslice, 1/0.8)
	wantXi(t, tb, r32, v32, 1, Timeslice, 2/(0.5+0.5))
	wantXi(t, tb, v32, r32, 1, Timeslice, 2/(0.25+0.3))
	noPair(t, tb, Config{"vgg19", 64, 64}, Config{"vgg19", 64, 64})
	if len(tb.Pairs) != 4 {
		t.Errorf("%d pairs, want 4", len(tb.Pairs))
	}
	checkTable(t, tb)

	// Without --relative the missing solo times are an error; with a solo profile they are not.
	_, err = ImportBlox(bytes.NewReader(data), "blox.csv", BloxOptions{})
	wantErr(t, err, "no solo step times", "--solo-from", "--relative")
	solo := &Table{Source: "test", Models: []Model{
		{Name: "resnet50", DefaultBatch: 32, Configs: []Solo{{Batch: 32, SubBatch: 32, IterS: GPUMap{1: 0.1, 2: 0.12}, MemBytes: 5 << 30}}},
	}}
	if err := solo.Normalize(); err != nil {
		t.Fatal(err)
	}
	tb, err = ImportBlox(bytes.NewReader(data), "blox.csv", BloxOptions{Solo: solo, SoloName: "solo.json", Relative: true})
	if err != nil {
		t.Fatal(err)
	}
	wantIter(t, tb, r32, 2, 0.12)
	if s, _ := tb.Solo(r32); s.MemBytes != 5<<30 || s.MemEstimated {
		t.Errorf("resnet50/32 memory %d (estimated %v), want the solo profile's", s.MemBytes, s.MemEstimated)
	}
	if !hasNote(tb, "come from solo.json") {
		t.Errorf("notes: %q", tb.Notes)
	}
}

func TestImportBloxErrors(t *testing.T) {
	h := bloxHeader + "\n"
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"b.csv: empty file"}},
		{"header", "a,b\n", []string{"b.csv:1: header"}},
		{"fields", h + "0,resnet50,I,1,32,0.5\n", []string{"b.csv:2: want 13 fields"}},
		{"speed", h + "0,resnet50,I,1,32,x,0,NA,vgg19,I,1,32,0.5\n", []string{"b.csv:2: speed1"}},
		{"negative speed", h + "0,resnet50,I,1,32,0.5,0,NA,vgg19,I,1,32,-1\n", []string{"b.csv:2: speed2"}},
		{"gpus", h + "0,resnet50,I,x,32,0.5,0,NA,vgg19,I,1,32,0.5\n", []string{"b.csv:2: gpu_num1"}},
		{"batch", h + "\n0,resnet50,I,1,3x,0.5,0,NA,vgg19,I,1,32,0.5\n", []string{"b.csv:3: batch_size1"}},
		{"micro", h + "0,Bert-Large,W,2,256/x,0.5,0,DP24,vgg19,I,2,32,0.5\n", []string{"b.csv:2: batch_size1", "micro-batch"}},
		{"zero gpus", h + "0,resnet50,I,0,32,0.5,0,NA,vgg19,I,0,32,0.5\n", []string{"gpu_num must be ≥ 1"}},
		{"quote", h + "0,\"resnet50,I\n", []string{"b.csv", "quote"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ImportBlox(strings.NewReader(tc.in), "b.csv", BloxOptions{Relative: true})
			wantErr(t, err, tc.want...)
		})
	}
}

// FuzzImportBlox checks that no input panics and that every imported table normalizes and
// survives Write→Load byte for byte.
func FuzzImportBlox(f *testing.F) {
	f.Add(readFile(f, "testdata/import/blox.csv"))
	f.Add([]byte(bloxHeader + "\n0,a,x,1,8/2,0.5,0,DP2,b,x,1,4,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := ImportBlox(bytes.NewReader(data), "fuzz.csv", BloxOptions{Relative: true})
		if err != nil {
			return
		}
		checkTable(t, tb)
	})
}
