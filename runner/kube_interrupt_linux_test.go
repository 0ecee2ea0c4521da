//go:build linux

package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKubeCleanupSurvivesSecondInterrupt interrupts a dispatcher the way a terminal does: a
// SIGINT to its whole process group, and a second one while "kubectl delete" runs. The
// deletion must not die with the second one: the Job and the ConfigMap must not stay on the
// cluster.
func TestKubeCleanupSurvivesSecondInterrupt(t *testing.T) {
	fk := fakeKubectl(t)
	writePods(t, filepath.Join(fk, "pods-1.json"), kpod{name: "p0", index: 0, phase: "Running"})
	if err := os.WriteFile(filepath.Join(fk, "delete.block"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(spec, []byte(kubeFakeCampaign), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	d := exec.Command(os.Args[0])
	d.Env = append(os.Environ(), envTestMode+"=kube-dispatch", "SHAREBENCH_TEST_CAMPAIGN="+spec, "SHAREBENCH_TEST_OUT="+filepath.Join(dir, "out"))
	d.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a foreground job of its own, as in a terminal
	d.Stderr = stderr
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		d.Wait()
		close(done)
	}()
	defer func() {
		select {
		case <-done:
		default:
			syscall.Kill(-d.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	waitUntil(t, 2*time.Minute, "the dispatcher to follow its pods", func() bool {
		calls, _ := os.ReadFile(filepath.Join(fk, "calls"))
		return strings.Contains(string(calls), "kubectl get pods")
	})
	if err := syscall.Kill(-d.Process.Pid, syscall.SIGINT); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	waitUntil(t, 2*time.Minute, "kubectl delete", func() bool { return readPID(t, filepath.Join(fk, "delete.started")) > 0 })
	if err := syscall.Kill(-d.Process.Pid, syscall.SIGINT); err != nil { // Ctrl-C again, while it deletes
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fk, "delete.release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		log, _ := os.ReadFile(stderr.Name())
		t.Fatalf("the dispatcher did not end after its cleanup; its stderr:\n%s", log)
	}
	c := mustParse(t, kubeFakeCampaign)
	name := kubeJobName(c, c.Cells())
	if deleted, _ := os.ReadFile(filepath.Join(fk, "deleted")); strings.TrimSpace(string(deleted)) != name {
		log, _ := os.ReadFile(stderr.Name())
		t.Errorf("job and configmap %s not deleted (deleted: %q); the dispatcher's stderr:\n%s", name, deleted, log)
	}
}

// TestKubeCancelSaysWhatRemains: when kubectl cannot delete the Job on cancel (an RBAC refusal
// here; it deletes the ConfigMap), the dispatch's error names the Job and the command that
// deletes it, next to the cancellation.
func TestKubeCancelSaysWhatRemains(t *testing.T) {
	fk := fakeKubectl(t)
	writePods(t, filepath.Join(fk, "pods-1.json"), kpod{name: "p0", index: 0, phase: "Running"})
	if err := os.WriteFile(filepath.Join(fk, "delete.forbid-job"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, kubeFakeCampaign)
	k := &Kube{Config: c.Kubernetes}
	k.Config.Namespace = "lab"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := Dispatch(ctx, c, DispatchOptions{OutDir: t.TempDir(), Dispatcher: k, Logger: discardLogger()})
		errc <- err
	}()
	waitUntil(t, 2*time.Minute, "the dispatcher to follow its pods", func() bool {
		calls, _ := os.ReadFile(filepath.Join(fk, "calls"))
		return strings.Contains(string(calls), "kubectl --namespace=lab get pods")
	})
	cancel()
	err := <-errc
	name := kubeJobName(c, c.Cells())
	want := "kubernetes: job/" + name + " may remain on the cluster (kubernetes: kubectl: exit status 1: Error from server (Forbidden): " +
		`jobs.batch "` + name + `" is forbidden: User "u" cannot delete resource "jobs"); delete with: kubectl --namespace=lab delete job ` + name + " --ignore-not-found"
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v\nwant context.Canceled and %q", err, want)
	}
	if strings.Contains(err.Error(), "configmap/") {
		t.Errorf("err names the configmap, which kubectl deleted: %v", err)
	}
}
