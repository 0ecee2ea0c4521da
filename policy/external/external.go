package external

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// endGrace is how long the policy process may take to exit after the end message.
const endGrace = 10 * time.Second

// Policy is a policy.Policy whose decisions come from another process. It starts the process
// at the first scheduling instant and must be ended with End once the run is over.
type Policy struct {
	args Args
	argv []string
	name string
	c    *conn

	// Child is the name the policy gave in its hello reply.
	Child string
	// Decisions counts the scheduling instants answered; BytesOut and BytesIn the bytes
	// exchanged (for overhead reports).
	Decisions         int
	BytesOut, BytesIn int64

	started bool
	err     error // sticky: the exchange failed and the process is gone
	lastNow time.Duration
	stopped []trace.JobID // jobs the previous plan stopped
	snaps   []snapshot    // by Job.Idx: what the policy was last told
	known   []bool        // by Job.Idx: the policy has been told about the job
	buf     []byte
	arrived []*policy.Job
	planned map[trace.JobID]int // jobs started by the plan being checked → option
	stops   map[trace.JobID]bool
}

var _ policy.Policy = (*Policy)(nil)

// New returns an external policy; it starts nothing until the first scheduling instant.
func New(a Args) (*Policy, error) {
	p := &Policy{args: a, name: policy.KeyExternal, lastNow: -1, planned: map[trace.JobID]int{}, stops: map[trace.JobID]bool{}}
	if a.Cmd != "" {
		argv, err := SplitCommand(a.Cmd)
		if err != nil {
			return nil, err
		}
		p.argv, p.name = argv, policy.KeyExternal+":"+a.Cmd
	}
	return p, nil
}

// Name returns "external:CMD".
func (p *Policy) Name() string { return p.name }

// Schedule sends the changes since the previous instant and returns the policy's plan once it
// has passed the checks. Any failure kills the process and is returned from then on.
func (p *Policy) Schedule(s *policy.State) (policy.Plan, error) {
	if p.err != nil {
		return policy.Plan{}, p.err
	}
	plan, err := p.schedule(s)
	if err != nil {
		if p.Decisions == 0 && !p.started {
			p.err = fmt.Errorf("%s: start: %w", p.what(), err)
		} else {
			p.err = fmt.Errorf("%s: %w", p.where(s.Now), err)
		}
		if p.c != nil {
			p.c.kill()
		}
		return policy.Plan{}, p.err
	}
	return plan, nil
}

// where names the decision being made: the policy, the instant and the decision's number.
func (p *Policy) where(now time.Duration) string {
	return fmt.Sprintf("%s: decision %d at t=%s", p.what(), p.Decisions+1, seconds(now))
}

// what names the policy in errors.
func (p *Policy) what() string {
	if p.args.Cmd == "" {
		return fmt.Sprintf("external policy on fds %v", p.args.FDs)
	}
	return "external policy " + strconv.Quote(p.args.Cmd)
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + "s" }

func (p *Policy) schedule(s *policy.State) (policy.Plan, error) {
	if !p.started {
		if err := p.open(s); err != nil {
			return policy.Plan{}, err
		}
		p.started = true
	}
	p.buf = p.appendState(p.buf[:0], s)
	p.lastNow = s.Now
	if err := p.send(p.buf, p.args.TimeoutS); err != nil {
		return policy.Plan{}, err
	}
	line, err := p.recv(p.args.TimeoutS)
	if err != nil {
		return policy.Plan{}, err
	}
	plan, err := p.decode(line, s)
	if err != nil {
		return policy.Plan{}, err
	}
	if err := p.check(s, plan); err != nil {
		return policy.Plan{}, err
	}
	p.stopped = append(p.stopped[:0], plan.Stop...)
	p.Decisions++
	return plan, nil
}

func (p *Policy) send(line []byte, timeoutS float64) error {
	p.BytesOut += int64(len(line))
	return p.c.send(line, duration(timeoutS))
}

func (p *Policy) recv(timeoutS float64) ([]byte, error) {
	line, err := p.c.recv(duration(timeoutS))
	p.BytesIn += int64(len(line))
	if errors.Is(err, errTimeout) {
		return nil, fmt.Errorf("%w (timeout_s %v); the policy process was killed", err, timeoutS)
	}
	return line, err
}

// open starts the process (or opens the descriptors) and exchanges the hellos.
func (p *Policy) open(s *policy.State) error {
	var err error
	if p.args.Cmd != "" {
		p.c, err = start(p.argv)
	} else {
		p.c, err = openFDs(p.args.FDs[0], p.args.FDs[1])
	}
	if err != nil {
		return err
	}
	if p.args.Transcript != "" {
		if err := p.c.record(p.args.Transcript); err != nil {
			return fmt.Errorf("transcript: %w", err)
		}
	}
	if err := p.send(appendHello(nil, s), p.args.StartTimeoutS); err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	line, err := p.recv(p.args.StartTimeoutS)
	if err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	var h struct {
		Type     string `json:"type"`
		Protocol int    `json:"protocol"`
		Name     string `json:"name"`
		Message  string `json:"message"`
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return fmt.Errorf("hello reply is not a JSON object: %v: %.200q", err, line)
	}
	switch {
	case h.Type == "error":
		return fmt.Errorf("the policy reported an error: %s", h.Message)
	case h.Type != "hello":
		return fmt.Errorf("want a hello reply, got type %q", h.Type)
	case h.Protocol != Version:
		return fmt.Errorf("the policy speaks protocol %d, sharebench speaks %d", h.Protocol, Version)
	}
	p.Child = h.Name
	return nil
}

// appendState encodes the changes since the previous instant: jobs that arrived (all their
// fields), jobs whose engine-owned fields changed (those fields), and jobs that finished.
func (p *Policy) appendState(b []byte, s *policy.State) []byte {
	b = append(b, `{"type":"state","seq":`...)
	b = strconv.AppendInt(b, int64(p.Decisions+1), 10)
	b = appendInt(b, `,"now":`, int64(s.Now))
	// Arrivals since the previous instant end the pending list, which is in (submit, ID)
	// order: every job pending before submitted at or before the previous instant.
	p.arrived = p.arrived[:0]
	for j := range s.Pending.Backward() {
		if j.Submit <= p.lastNow {
			break
		}
		p.arrived = append(p.arrived, j)
	}
	b = append(b, `,"arrived":[`...)
	for k := len(p.arrived) - 1; k >= 0; k-- {
		j := p.arrived[k]
		if k < len(p.arrived)-1 {
			b = append(b, ',')
		}
		b = appendStatic(b, j)
		b = appendDynamic(b, j, false)
		p.remember(j)
	}
	b = append(b, `],"updated":[`...)
	first := true
	update := func(j *policy.Job) {
		if j == nil || j.Done || int(j.Idx) >= len(p.known) || !p.known[j.Idx] || p.snaps[j.Idx] == snap(j) {
			return
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendDynamic(b, j, true)
		p.remember(j)
	}
	for _, id := range p.stopped {
		update(s.Lookup(id))
	}
	for _, j := range s.Running() {
		update(j)
	}
	b = append(b, `],"finished":[`...)
	for k, id := range s.Finished {
		if k > 0 {
			b = append(b, ',')
		}
		end := time.Duration(-1)
		if j := s.Lookup(id); j != nil {
			end = j.Since // a finished job's Since is its end
		}
		b = appendInt(b, "[", int64(id))
		b = appendInt(b, ",", int64(end))
		b = append(b, ']')
	}
	return append(b, "]}\n"...)
}

func (p *Policy) remember(j *policy.Job) {
	i := int(j.Idx)
	for i >= len(p.known) {
		p.known = append(p.known, false)
		p.snaps = append(p.snaps, snapshot{})
	}
	p.known[i], p.snaps[i] = true, snap(j)
}

// planMsg is a reply to a state.
type planMsg struct {
	Type     string        `json:"type"`
	Seq      int           `json:"seq"`
	Stop     []trace.JobID `json:"stop"`
	Start    []startMsg    `json:"start"`
	Wake     int64         `json:"wake"`
	Notes    []noteMsg     `json:"notes"`
	Message  string        `json:"message"`
	Protocol int           `json:"protocol"`
	Name     string        `json:"name"`
}

type startMsg struct {
	Job      trace.JobID   `json:"job"`
	GPUs     []int         `json:"gpus"`
	Opt      *int          `json:"opt"`
	Partners []trace.JobID `json:"partners"`
	Reason   string        `json:"reason"`
}

type noteMsg struct {
	Job    trace.JobID `json:"job"`
	Event  string      `json:"event"`
	Reason string      `json:"reason"`
}

// decode reads a plan reply.
func (p *Policy) decode(line []byte, s *policy.State) (policy.Plan, error) {
	var m planMsg
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return policy.Plan{}, fmt.Errorf("reply is not a plan: %v: %.200q", err, line)
	}
	switch {
	case m.Type == "error":
		return policy.Plan{}, fmt.Errorf("the policy reported an error: %s", m.Message)
	case m.Type != "plan":
		return policy.Plan{}, fmt.Errorf("want a plan reply, got type %q", m.Type)
	case m.Seq != p.Decisions+1:
		return policy.Plan{}, fmt.Errorf("plan answers state %d, want %d", m.Seq, p.Decisions+1)
	case m.Wake < 0:
		return policy.Plan{}, fmt.Errorf("wake %d is negative", m.Wake)
	}
	plan := policy.Plan{Stop: m.Stop, Wake: time.Duration(m.Wake)}
	for _, st := range m.Start {
		pl := policy.Placement{Job: st.Job, GPUs: st.GPUs, Partners: st.Partners, Reason: st.Reason, Opt: -1}
		if st.Opt != nil {
			pl.Opt = *st.Opt
		} else if j := s.Lookup(st.Job); j != nil {
			pl.Opt = j.Fast
		}
		plan.Start = append(plan.Start, pl)
	}
	for _, n := range m.Notes {
		if IsEngineEvent(n.Event) {
			return policy.Plan{}, fmt.Errorf("job %d: note event %q: the engine logs that itself; name the policy's own event (e.g. %q)", n.Job, n.Event, "demote")
		}
		plan.Notes = append(plan.Notes, policy.Note{Job: n.Job, Event: n.Event, Reason: n.Reason})
	}
	return plan, nil
}

// IsEngineEvent reports whether a note's event is one the engine logs itself, which a policy's
// notes may not name.
func IsEngineEvent(e string) bool {
	switch e {
	case "", "submit", "start", "preempt", "finish":
		return true
	}
	return false
}

// Totals are a finished run's totals, which End tells the policy.
type Totals struct {
	Jobs                     int
	SumJCT, AvgJCT, Makespan float64 // seconds
	Preemptions              int
}

// End closes the exchange once the run is over: it tells the policy the run's totals (or that
// the run failed), closes the process's input and waits for it to exit. It returns runErr, put
// in the context of the last decision when the failure came from the engine, joined with any
// failure of the process at the end.
func (p *Policy) End(res *Totals, runErr error) error {
	if p.err != nil || p.c == nil {
		return runErr // the exchange already failed (runErr holds its error) or never began
	}
	if runErr != nil {
		runErr = fmt.Errorf("%s, after decision %d at t=%s: %w", p.what(), p.Decisions, seconds(p.lastNow), runErr)
	}
	b := []byte(`{"type":"end"`)
	if runErr != nil || res == nil {
		b = append(b, `,"error":`...)
		b = strconv.AppendQuote(b, fmt.Sprint(runErr))
	} else {
		b = appendInt(b, `,"decisions":`, int64(p.Decisions))
		b = appendInt(b, `,"jobs":`, int64(res.Jobs))
		b = append(b, `,"sum_jct_s":`...)
		b = appendFloat(b, res.SumJCT)
		b = append(b, `,"avg_jct_s":`...)
		b = appendFloat(b, res.AvgJCT)
		b = append(b, `,"makespan_s":`...)
		b = appendFloat(b, res.Makespan)
		b = appendInt(b, `,"preemptions":`, int64(res.Preemptions))
	}
	b = append(b, "}\n"...)
	err := p.c.send(b, endGrace)
	if err == nil {
		err = p.c.close(endGrace)
	} else {
		p.c.kill()
	}
	p.c = nil
	if err != nil {
		err = fmt.Errorf("%s: end: %w", p.what(), err)
	}
	return errorsJoin(runErr, err)
}

func errorsJoin(a, b error) error {
	if a == nil || b == nil {
		return errors.Join(a, b)
	}
	return fmt.Errorf("%w; %w", a, b)
}
