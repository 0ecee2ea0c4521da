package trace

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"testing"
)

// readData reads a file of the shared data directory, skipping the benchmark when absent.
func readData(b *testing.B, rel string) []byte {
	raw, err := os.ReadFile(dataFile(b, rel))
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func BenchmarkReadPhilly(b *testing.B) {
	raw := readData(b, "pollux-philly-jobs/philly.csv")
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		jobs, err := ReadAll(bytes.NewReader(raw), "philly.csv", FormatAuto, Options{Seed: 1})
		if err != nil || len(jobs) != 82247 {
			b.Fatal(len(jobs), err)
		}
	}
}

func BenchmarkReadPhillyPool(b *testing.B) {
	raw := readData(b, "pollux-philly-jobs/philly.csv")
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ReadPhillyPool(bytes.NewReader(raw), "philly.csv", Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadMuri(b *testing.B) {
	raw := readData(b, "muri-philly/trace2.csv")
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadAll(bytes.NewReader(raw), "trace2.csv", FormatAuto, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	pool := testPool(82247)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(GenConfig{Jobs: 1_000_000, Load: 1, GPUs: 64, Pool: pool}, rng); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	jobs, err := Generate(GenConfig{Jobs: 100_000, Load: 1, GPUs: 64, Pool: testPool(1000)}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Write(io.Discard, jobs); err != nil {
			b.Fatal(err)
		}
	}
}
