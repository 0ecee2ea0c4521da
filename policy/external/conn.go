package external

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// conn is one end of the protocol: lines out to the policy, lines back from it, with optional
// deadlines, over the pipes of a child process or two inherited file descriptors.
//
// A child's pipes are blocking, which costs fewer system calls per exchange than Go's poller,
// and a watchdog timer kills a child that misses its deadline, which ends the blocked read or
// write. Inherited descriptors are made non-blocking and get deadlines instead.
type conn struct {
	in, out    *os.File // we read replies from in and write messages to out
	r          *bufio.Reader
	deadline   bool // a read or write deadline is set on in or out
	proc       *exec.Cmd
	watchdog   *time.Timer
	exited     chan struct{} // closed once proc has been waited for
	waitErr    error
	stderr     *tail
	transcript *bufio.Writer
	tfile      *os.File
}

// errTimeout marks a reply that did not come in time.
var errTimeout = errors.New("timeout")

// start runs argv as a child process with its standard input and output as the protocol's
// pipes and its standard error kept for error messages.
func start(argv []string) (*conn, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	inR, inW, err := blockingPipe() // child's stdout → us
	if err != nil {
		return nil, err
	}
	outR, outW, err := blockingPipe() // us → child's stdin
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	c := &conn{in: inR, out: outW, r: newReader(inR), proc: cmd, exited: make(chan struct{}), stderr: &tail{max: 4096}}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = outR, inW, c.stderr
	cmd.WaitDelay = time.Second // grandchildren holding stderr open do not block the run
	err = cmd.Start()
	outR.Close()
	inW.Close()
	if err != nil {
		inR.Close()
		outW.Close()
		return nil, err
	}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	c.watchdog = time.AfterFunc(time.Hour, func() { cmd.Process.Kill() })
	c.watchdog.Stop()
	return c, nil
}

// record opens the transcript file.
func (c *conn) record(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	c.tfile, c.transcript = f, bufio.NewWriter(f)
	return nil
}

// arm starts the clock of one read or write on f: the watchdog of a child, else a deadline.
func (c *conn) arm(f *os.File, set func(*os.File, time.Time) error, timeout time.Duration) error {
	if c.proc != nil {
		if timeout > 0 {
			c.watchdog.Reset(timeout)
		}
		return nil
	}
	if timeout <= 0 {
		if !c.deadline {
			return nil
		}
		return set(f, time.Time{})
	}
	c.deadline = true
	return set(f, time.Now().Add(timeout))
}

// late stops the clock and reports whether the operation ran out of time.
func (c *conn) late(err error, timeout time.Duration) bool {
	if c.proc != nil {
		return timeout > 0 && !c.watchdog.Stop()
	}
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// send writes one line (ending in '\n').
func (c *conn) send(line []byte, timeout time.Duration) error {
	if c.transcript != nil {
		c.transcript.WriteString("> ")
		c.transcript.Write(line)
	}
	if err := c.arm(c.out, (*os.File).SetWriteDeadline, timeout); err != nil {
		return err
	}
	_, err := c.out.Write(line)
	if c.late(err, timeout) {
		return fmt.Errorf("%w: the policy read nothing for %v", errTimeout, timeout)
	}
	if err != nil {
		return c.gone("while sending", err)
	}
	return nil
}

// recv reads one line; the slice is valid until the next call.
func (c *conn) recv(timeout time.Duration) ([]byte, error) {
	if err := c.arm(c.in, (*os.File).SetReadDeadline, timeout); err != nil {
		return nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = c.r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if c.late(err, timeout) {
		return nil, fmt.Errorf("%w: no reply within %v", errTimeout, timeout)
	}
	if err != nil {
		if len(line) > 0 && errors.Is(err, io.EOF) {
			return nil, c.gone("in the middle of a reply", err)
		}
		return nil, c.gone("before replying", err)
	}
	if c.transcript != nil {
		c.transcript.WriteString("< ")
		c.transcript.Write(line)
	}
	return line, nil
}

// gone describes the policy's end: its exit status and the last lines of its standard error.
func (c *conn) gone(when string, err error) error {
	if c.proc == nil {
		return fmt.Errorf("the policy closed its end %s (%v)", when, err)
	}
	select {
	case <-c.exited:
	case <-time.After(2 * time.Second):
		return fmt.Errorf("the policy process closed its output %s and is still running%s", when, c.stderr.lines())
	}
	return fmt.Errorf("the policy process %s %s%s", exitStatus(c.waitErr), when, c.stderr.lines())
}

// exitStatus describes how a process ended: "exited with status 3", "was killed by signal
// killed".
func exitStatus(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exited with status 0"
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	case errors.As(err, &ee):
		return "was ended by " + ee.ProcessState.String()
	default:
		return "failed: " + err.Error()
	}
}

// close ends the exchange: it closes our output, so the policy sees the end of its input, and
// waits up to grace for the process to exit, killing it after that. It reports a failed exit.
func (c *conn) close(grace time.Duration) error {
	var errs []error
	if c.transcript != nil {
		errs = append(errs, c.transcript.Flush(), c.tfile.Close())
	}
	c.out.Close()
	if c.proc == nil {
		c.in.Close()
		return errors.Join(errs...)
	}
	select {
	case <-c.exited:
	case <-time.After(grace):
		c.proc.Process.Kill()
		<-c.exited
		errs = append(errs, fmt.Errorf("the policy process did not exit within %v of the end of the run and was killed", grace))
	}
	c.in.Close()
	if c.waitErr != nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("the policy process %s after the end of the run%s", exitStatus(c.waitErr), c.stderr.lines()))
	}
	return errors.Join(errs...)
}

// kill stops the policy at once (after a timeout or an illegal plan).
func (c *conn) kill() {
	if c.transcript != nil {
		c.transcript.Flush()
		c.tfile.Close()
		c.transcript = nil
	}
	c.out.Close()
	if c.proc != nil {
		c.proc.Process.Kill()
		<-c.exited
	}
	c.in.Close()
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// lines returns the last lines of standard error as "; its standard error ended with: a | b",
// or "": one line, however many the process wrote.
func (t *tail) lines() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ls []string
	for _, l := range strings.Split(string(t.b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	if len(ls) == 0 {
		return ""
	}
	if len(ls) > 3 {
		ls = ls[len(ls)-3:]
	}
	return "; its standard error ended with: " + strings.Join(ls, " | ")
}

func newReader(f *os.File) *bufio.Reader { return bufio.NewReaderSize(f, 1<<16) }
