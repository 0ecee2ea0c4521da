package cluster

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MiB is one mebibyte. The authors' cluster specs give memory in "MB" that are MiB.
const MiB = int64(1) << 20

// GiB is one gibibyte.
const GiB = int64(1) << 30

// Shape describes a homogeneous cluster.
type Shape struct {
	Nodes       int
	GPUsPerNode int
	CPUsPerNode int   // informational; CPUs never bind in the modelled setups (SPEC.md §2.1)
	GPUMemBytes int64 // memory of each GPU
	MaxShare    int   // jobs allowed on one GPU at once; 2 in the paper, 1 disables sharing
}

// GPUs returns the number of GPUs in the cluster.
func (s Shape) GPUs() int { return s.Nodes * s.GPUsPerNode }

// String formats s as NODESxGPUS, e.g. "8x8".
func (s Shape) String() string { return fmt.Sprintf("%dx%d", s.Nodes, s.GPUsPerNode) }

// Validate reports a shape that cannot be simulated.
func (s Shape) Validate() error {
	switch {
	case s.Nodes <= 0 || s.GPUsPerNode <= 0:
		return fmt.Errorf("cluster %s: need at least one node and one GPU per node", s)
	case s.GPUMemBytes <= 0:
		return fmt.Errorf("cluster %s: GPU memory must be positive", s)
	case s.MaxShare < 1:
		return fmt.Errorf("cluster %s: max jobs per GPU must be ≥ 1, got %d", s, s.MaxShare)
	}
	return nil
}

// ParseShape parses NODESxGPUS, e.g. "8x8" or "256x8".
func ParseShape(v string) (Shape, error) {
	n, g, ok := strings.Cut(strings.ToLower(strings.TrimSpace(v)), "x")
	nodes, err1 := strconv.Atoi(n)
	gpus, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || nodes <= 0 || gpus <= 0 {
		return Shape{}, fmt.Errorf("cluster %q: want NODESxGPUS with positive integers, e.g. 8x8", v)
	}
	return Shape{Nodes: nodes, GPUsPerNode: gpus, MaxShare: 2}, nil
}

// specHeader is the header of the authors' cluster-spec CSV (SPEC.md §8.2).
const specHeader = "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_gpu"

// LoadSpec reads the authors' cluster-spec CSV: the header
// num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_gpu and one data row, memory in
// MiB. Switches multiply the node count (the simulator has no network model).
func LoadSpec(r io.Reader, name string) (Shape, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	var rows [][]string
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Shape{}, fmt.Errorf("cluster spec: %s: %w", name, err)
		}
		rows = append(rows, rec)
	}
	if len(rows) == 0 {
		return Shape{}, fmt.Errorf("cluster spec: %s: empty file", name)
	}
	if h := strings.Join(rows[0], ","); strings.TrimSpace(h) != specHeader {
		return Shape{}, fmt.Errorf("cluster spec: %s:1: header must be %q", name, specHeader)
	}
	if len(rows) != 2 {
		return Shape{}, fmt.Errorf("cluster spec: %s: want exactly one data row, got %d", name, len(rows)-1)
	}
	cols := strings.Split(specHeader, ",")
	if len(rows[1]) != len(cols) {
		return Shape{}, fmt.Errorf("cluster spec: %s:2: want %d fields, got %d", name, len(cols), len(rows[1]))
	}
	var v [5]int64
	for i, f := range rows[1] {
		x, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || x <= 0 {
			return Shape{}, fmt.Errorf("cluster spec: %s:2: %s: want a positive integer, got %q", name, cols[i], f)
		}
		v[i] = x
	}
	return Shape{
		Nodes:       int(v[0] * v[1]),
		GPUsPerNode: int(v[2]),
		CPUsPerNode: int(v[3]),
		GPUMemBytes: v[4] * MiB,
		MaxShare:    2,
	}, nil
}

// LoadSpecFile reads the cluster spec at path.
func LoadSpecFile(path string) (Shape, error) {
	f, err := os.Open(path)
	if err != nil {
		return Shape{}, fmt.Errorf("cluster spec: %w", err)
	}
	defer f.Close()
	return LoadSpec(f, filepath.Base(path))
}
