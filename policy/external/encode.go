package external

import (
	"math"
	"strconv"
	"time"

	"github.com/sharebench/sharebench/policy"
)

// snapshot is what the policy was last told about a job's engine-owned fields; a job is sent
// again when they differ.
type snapshot struct {
	running, started bool
	opt, preempts    int
	xi               float64
	since, lastRun   time.Duration
	p                policy.Progress
}

func snap(j *policy.Job) snapshot {
	return snapshot{j.Running, j.Started, j.Opt, j.Preempts, j.Xi, j.Since, j.LastRun, j.P}
}

// appendHello encodes the hello: protocol version, cluster shape, sharing mode and the
// profile's configurations with their slowdown matrices, one per GPU-count class.
func appendHello(b []byte, s *policy.State) []byte {
	sh := s.Cluster.Shape()
	env := s.Env
	b = append(b, `{"type":"hello","protocol":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, `,"cluster":{"nodes":`...)
	b = strconv.AppendInt(b, int64(sh.Nodes), 10)
	b = append(b, `,"gpus_per_node":`...)
	b = strconv.AppendInt(b, int64(sh.GPUsPerNode), 10)
	b = append(b, `,"gpu_mem":`...)
	b = strconv.AppendInt(b, sh.GPUMemBytes, 10)
	b = append(b, `,"max_share":`...)
	b = strconv.AppendInt(b, int64(sh.MaxShare), 10)
	b = append(b, `},"mode":`...)
	b = strconv.AppendQuote(b, string(env.Mode))
	b = append(b, `,"explain":`...)
	b = strconv.AppendBool(b, env.Explain)
	b = append(b, `,"configs":[`...)
	for i, n := range env.CfgName {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, n)
	}
	b = append(b, `],"xi":[`...)
	for gc := range env.Classes() {
		if gc > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for a := range env.NCfg {
			if a > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			for c := range env.NCfg {
				if c > 0 {
					b = append(b, ',')
				}
				b = appendFloat(b, env.RawXi(gc, a, c))
			}
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	return append(b, "]}\n"...)
}

// appendFloat writes x in the shortest form that reads back to the same float64; NaN is null.
func appendFloat(b []byte, x float64) []byte {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, x, 'g', -1, 64)
}

func appendInt(b []byte, key string, v int64) []byte {
	b = append(b, key...)
	return strconv.AppendInt(b, v, 10)
}

// appendStatic writes a job's fixed fields, without the closing brace.
func appendStatic(b []byte, j *policy.Job) []byte {
	b = appendInt(b, `{"id":`, int64(j.ID))
	b = appendInt(b, `,"submit":`, int64(j.Submit))
	b = appendInt(b, `,"gpus":`, int64(j.GPUs))
	b = appendInt(b, `,"iters":`, j.Iters)
	b = append(b, `,"model":`...)
	b = strconv.AppendQuote(b, j.Model)
	b = appendInt(b, `,"batch":`, int64(j.Batch))
	b = append(b, `,"options":[`...)
	for i, o := range j.Options {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendInt(b, `{"sub_batch":`, int64(o.SubBatch))
		b = appendInt(b, `,"excl":`, int64(o.Excl))
		b = appendInt(b, `,"mem":`, o.Mem)
		b = appendInt(b, `,"cfg":`, int64(o.Cfg))
		b = append(b, '}')
	}
	b = append(b, ']')
	b = appendInt(b, `,"fast":`, int64(j.Fast))
	b = appendInt(b, `,"gc":`, int64(j.GC))
	b = appendInt(b, `,"family":`, int64(j.Family))
	return b
}

// appendDynamic writes a job's engine-owned fields, opening with "{" (alone) or "," (after
// appendStatic), and closes the object.
func appendDynamic(b []byte, j *policy.Job, alone bool) []byte {
	if alone {
		b = appendInt(b, `{"id":`, int64(j.ID))
	}
	b = append(b, `,"running":`...)
	b = strconv.AppendBool(b, j.Running)
	b = append(b, `,"on":[`...)
	if j.Running {
		for i, g := range j.On {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(g), 10)
		}
	}
	b = append(b, ']')
	b = appendInt(b, `,"opt":`, int64(j.Opt))
	b = append(b, `,"xi":`...)
	b = appendFloat(b, j.Xi)
	b = append(b, `,"started":`...)
	b = strconv.AppendBool(b, j.Started)
	b = appendInt(b, `,"preempts":`, int64(j.Preempts))
	b = appendInt(b, `,"since":`, int64(j.Since))
	b = appendInt(b, `,"last_run":`, int64(j.LastRun))
	b = append(b, `,"rem":`...)
	b = appendFloat(b, j.P.Rem)
	b = appendInt(b, `,"at":`, int64(j.P.At))
	b = append(b, `,"rate":`...)
	b = appendFloat(b, j.P.Rate)
	b = appendInt(b, `,"overhead":`, int64(j.P.Overhead))
	b = appendInt(b, `,"exec":`, int64(j.P.Exec))
	return append(b, '}')
}
