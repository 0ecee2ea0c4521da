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

	"github.com/sharebench/sharebench/internal/clip"
)

// MiB is one mebibyte. The authors' cluster specs give memory in "MB" that are MiB.
const MiB = int64(1) << 20

// GiB is one gibibyte.
const GiB = int64(1) << 30

// Shape describes a homogeneous cluster.
type Shape struct {
	Nodes       int
	GPUsPerNode int
	CPUsPerNode int   // informational; CPUs never bind in the modelled setups (docs/paper.md §2.1)
	GPUMemBytes int64 // memory of each GPU
	MaxShare    int   // jobs allowed on one GPU at once; 2 in the paper, 1 disables sharing
}

// GPUs returns the number of GPUs in the cluster.
func (s Shape) GPUs() int { return s.Nodes * s.GPUsPerNode }

// String formats s as NODESxGPUS, e.g. "8x8".
func (s Shape) String() string { return fmt.Sprintf("%dx%d", s.Nodes, s.GPUsPerNode) }

// Bounds of a cluster shape. They keep the cluster's tables (a few words per GPU and per
// job slot) small and its sizes far from integer overflow, while lying well above any cluster
// built: the largest sites have around 10^5 GPUs.
const (
	// MaxGPUs is the largest number of GPUs in a cluster: 2^20 = 1,048,576.
	MaxGPUs = 1 << 20
	// MaxGPUsPerNode is the largest number of GPUs in one node.
	MaxGPUsPerNode = 1 << 10
	// MaxShare is the largest number of jobs allowed on one GPU at once.
	MaxShare = 16
	// MaxGPUMemBytes is the largest memory of one GPU: 1 TiB.
	MaxGPUMemBytes = 1 << 40
)

// Validate reports a shape that cannot be simulated.
func (s Shape) Validate() error {
	if err := checkSize(s.Nodes, s.GPUsPerNode); err != nil {
		return fmt.Errorf("cluster %s: %w", s, err)
	}
	switch {
	case s.GPUMemBytes <= 0:
		return fmt.Errorf("cluster %s: GPU memory must be positive", s)
	case s.GPUMemBytes > MaxGPUMemBytes:
		return fmt.Errorf("cluster %s: GPU memory %d bytes exceeds the maximum of %d GiB", s, s.GPUMemBytes, MaxGPUMemBytes/GiB)
	case s.MaxShare < 1 || s.MaxShare > MaxShare:
		return fmt.Errorf("cluster %s: max jobs per GPU must be in [1, %d], got %d", s, MaxShare, s.MaxShare)
	}
	return nil
}

// checkSize checks a node count and GPUs per node against the bounds, without overflow.
func checkSize(nodes, perNode int) error {
	switch {
	case nodes <= 0 || perNode <= 0:
		return errors.New("need at least one node and one GPU per node")
	case perNode > MaxGPUsPerNode:
		return fmt.Errorf("%d GPUs per node exceeds the maximum of %d", perNode, MaxGPUsPerNode)
	case nodes > MaxGPUs/perNode:
		return fmt.Errorf("more than the maximum of %d GPUs", MaxGPUs)
	}
	return nil
}

// ParseShape parses NODESxGPUS, e.g. "8x8" or "256x8", within the bounds above.
func ParseShape(v string) (Shape, error) {
	n, g, ok := strings.Cut(strings.ToLower(strings.TrimSpace(v)), "x")
	nodes, err1 := strconv.Atoi(n)
	gpus, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || nodes <= 0 || gpus <= 0 {
		return Shape{}, fmt.Errorf("cluster %s: want NODESxGPUS with positive integers, e.g. 8x8", clip.Quote(v))
	}
	if err := checkSize(nodes, gpus); err != nil {
		return Shape{}, fmt.Errorf("cluster %s: %w", clip.Quote(v), err)
	}
	return Shape{Nodes: nodes, GPUsPerNode: gpus, MaxShare: 2}, nil
}

// specHeader is the header of the authors' cluster-spec CSV (docs/paper.md §8.2).
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
			return Shape{}, fmt.Errorf("cluster spec: %s:2: %s: want a positive integer, got %s", name, cols[i], clip.Quote(f))
		}
		v[i] = x
	}
	// Bound every factor before multiplying, so that no product overflows.
	for i, hi := range [5]int64{MaxGPUs, MaxGPUs, MaxGPUsPerNode, 1 << 20, MaxGPUMemBytes / MiB} {
		if v[i] > hi {
			return Shape{}, fmt.Errorf("cluster spec: %s:2: %s: %d exceeds the maximum of %d", name, cols[i], v[i], hi)
		}
	}
	if v[0] > MaxGPUs/v[1] {
		return Shape{}, fmt.Errorf("cluster spec: %s:2: %d switches × %d nodes: more than the maximum of %d GPUs", name, v[0], v[1], MaxGPUs)
	}
	if err := checkSize(int(v[0]*v[1]), int(v[2])); err != nil {
		return Shape{}, fmt.Errorf("cluster spec: %s:2: %w", name, err)
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
