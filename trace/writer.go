package trace

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/sharebench/sharebench/internal/simtime"
)

// Write writes jobs to w in the canonical format, in the given order:
//
//	job_id,submit_s,num_gpu,model,batch_size,iterations[,iteration_time_s]
//
// Times are exact decimal seconds without trailing zeros. The iteration_time_s column is
// written only if some job has an IterTime. Reading the output back with [ReadAll] yields
// the same jobs, sorted by (Submit, ID) and with Line set to their new lines. Write rejects
// jobs that the readers would reject: non-positive GPUs or iterations, negative times, ids or
// batches, invalid model names, duplicate ids and times beyond the [Horizon].
func Write(w io.Writer, jobs []Job) error {
	withIter := false
	seen := make(map[JobID]struct{}, len(jobs))
	for i, j := range jobs {
		if err := checkJob(j); err != nil {
			return fmt.Errorf("trace: write: job %d (index %d): %w", j.ID, i, err)
		}
		if _, dup := seen[j.ID]; dup {
			return fmt.Errorf("trace: write: job %d (index %d): duplicate job id", j.ID, i)
		}
		seen[j.ID] = struct{}{}
		withIter = withIter || j.IterTime > 0
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	header := "job_id,submit_s,num_gpu,model,batch_size,iterations"
	if withIter {
		header += ",iteration_time_s"
	}
	if _, err := bw.WriteString(header + "\n"); err != nil {
		return fmt.Errorf("trace: write: %w", err)
	}
	buf := make([]byte, 0, 128)
	for _, j := range jobs {
		buf = strconv.AppendInt(buf[:0], int64(j.ID), 10)
		buf = append(buf, ',')
		buf = appendSeconds(buf, int64(j.Submit))
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(j.GPUs), 10)
		buf = append(buf, ',')
		buf = append(buf, j.Model...)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(j.Batch), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, j.Iters, 10)
		if withIter {
			buf = append(buf, ',')
			buf = appendSeconds(buf, int64(j.IterTime))
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("trace: write: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("trace: write: %w", err)
	}
	return nil
}

// checkJob returns why j cannot be written, or nil.
func checkJob(j Job) error {
	switch {
	case j.ID < 0:
		return fmt.Errorf("negative job id")
	case j.Submit < 0:
		return fmt.Errorf("negative submit time %v", j.Submit)
	case j.GPUs <= 0 || j.GPUs > math.MaxInt32:
		return fmt.Errorf("GPU count %d out of range", j.GPUs)
	case j.Iters <= 0:
		return fmt.Errorf("iterations %d not positive", j.Iters)
	case j.Batch < 0 || j.Batch > math.MaxInt32:
		return fmt.Errorf("batch %d out of range", j.Batch)
	case j.IterTime < 0:
		return fmt.Errorf("negative iteration time %v", j.IterTime)
	case j.Submit > Horizon:
		return fmt.Errorf("%s", simtime.ErrBeyond("submits after", j.Submit))
	case j.IterTime > 0 && simtime.Add(j.Submit, simtime.Mul(j.IterTime, j.Iters)) > Horizon:
		return fmt.Errorf("%d × %s per iteration %s", j.Iters, simtime.Format(j.IterTime),
			simtime.ErrBeyond("ends after", simtime.Add(j.Submit, simtime.Mul(j.IterTime, j.Iters))))
	}
	if msg := checkModelName(j.Model); msg != "" {
		return fmt.Errorf("model: %s", msg)
	}
	return nil
}
