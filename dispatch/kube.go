package dispatch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/internal/fsutil"
)

// Defaults and fixed names of the Kubernetes engine.
const (
	// DefaultKubeImage is the harness image of docker/harness.Dockerfile: sharebench and the
	// workloads.
	DefaultKubeImage = "sharebench-harness:latest"
	// KubeGPUResource is the device plugin's resource name.
	KubeGPUResource = "nvidia.com/gpu"
	// KubeGPUProductLabel is GPU Feature Discovery's node label naming the GPU model.
	KubeGPUProductLabel = "nvidia.com/gpu.product"
	// KubeConfigDir is where a pod sees the job's files (its ConfigMap).
	KubeConfigDir = "/etc/sharebench"
	// KubeWorkDir is the pod's scratch directory (an emptyDir).
	KubeWorkDir = "/work"
	// KubeIndexRef, in a command, expands to the pod's completion index: the pod's
	// environment variable SHAREBENCH_COMPLETION_INDEX, declared through the downward API (the
	// Job controller also sets JOB_COMPLETION_INDEX; declaring it makes the $(…) expansion
	// independent of that).
	KubeIndexRef = "$(" + kubeIndexEnv + ")"
	kubeIndexEnv = "SHAREBENCH_COMPLETION_INDEX"
	// kubeMaxManifest leaves room under the API server's 1 MiB object limit.
	kubeMaxManifest = 900 << 10
)

// KubeConfig is how the engine builds its Indexed Jobs. Every field is optional; command-line
// flags override some of them.
type KubeConfig struct {
	// Namespace of the Job and ConfigMap (default: kubectl's current namespace).
	Namespace string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	// Context is kubectl's --context (default: the current context).
	Context string `yaml:"context,omitempty" json:"context,omitempty"`
	// Image holds sharebench and the workloads (default DefaultKubeImage, built from
	// docker/harness.Dockerfile); ImagePullPolicy defaults to IfNotPresent.
	Image           string `yaml:"image,omitempty" json:"image,omitempty"`
	ImagePullPolicy string `yaml:"image_pull_policy,omitempty" json:"image_pull_policy,omitempty"`
	// GPUProduct selects nodes by their nvidia.com/gpu.product label (e.g. NVIDIA-H200);
	// empty: any GPU node.
	GPUProduct string `yaml:"gpu_product,omitempty" json:"gpu_product,omitempty"`
	// GPUs is the least number of whole GPUs per pod of jobs that use GPUs (default 1).
	GPUs int `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	// Parallelism is how many pods run at once (default: all).
	Parallelism int `yaml:"parallelism,omitempty" json:"parallelism,omitempty"`
	// CPU and Memory are the pod's requests and limits (e.g. "8", "32Gi"); empty: none.
	CPU    string `yaml:"cpu,omitempty" json:"cpu,omitempty"`
	Memory string `yaml:"memory,omitempty" json:"memory,omitempty"`
	// TTLSecondsAfterFinished lets Kubernetes delete a finished Job that the engine could not
	// delete itself (default 86400).
	TTLSecondsAfterFinished int `yaml:"ttl_seconds_after_finished,omitempty" json:"ttl_seconds_after_finished,omitempty"`
	// ServiceAccount is the pods' service account (default: the namespace's default).
	ServiceAccount string `yaml:"service_account,omitempty" json:"service_account,omitempty"`
	// Kubectl is the kubectl executable (default "kubectl" on PATH).
	Kubectl string `yaml:"kubectl,omitempty" json:"kubectl,omitempty"`
	// Poll is the first interval between status queries (default 5s), doubling while nothing
	// changes up to PollMax (default 60s).
	Poll    Duration `yaml:"poll,omitempty" json:"poll,omitempty"`
	PollMax Duration `yaml:"poll_max,omitempty" json:"poll_max,omitempty"`
}

// DNSLabel reports whether s is an RFC 1123 label (namespaces, service accounts, job names).
func DNSLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-') {
			return false
		}
	}
	return true
}

// labelValueOK reports whether s is a label value: ≤ 63 letters, digits, '.', '_' and '-',
// alphanumeric at the start.
func labelValueOK(s string) bool { return len(s) <= 63 && SafeName(s) }

// quantityOK reports whether s looks like a Kubernetes quantity ("8", "500m", "32Gi").
func quantityOK(s string) bool {
	return len(s) <= 32 && SafeName(s) && s[0] >= '0' && s[0] <= '9' && !strings.ContainsAny(s, "_-")
}

// imageOK reports whether s is a plain container image reference.
func imageOK(s string) bool {
	if s == "" || len(s) > 256 || !SafeName(s[:1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.ContainsRune("._-/:@", rune(ch))) {
			return false
		}
	}
	return true
}

// Validate checks the values that reach kubectl and the manifests; errors name the field
// under prefix (e.g. "kubernetes").
func (k *KubeConfig) Validate(prefix string) error {
	for _, f := range []struct{ name, v string }{{"namespace", k.Namespace}, {"service_account", k.ServiceAccount}} {
		if f.v != "" && !DNSLabel(f.v) {
			return fmt.Errorf("%s.%s: %q: want a DNS label (lower-case letters, digits, '-')", prefix, f.name, f.v)
		}
	}
	if k.Context != "" && !ValueOK(k.Context) {
		return fmt.Errorf("%s.context: %q: want printable characters without spaces", prefix, k.Context)
	}
	if k.Image != "" && !imageOK(k.Image) {
		return fmt.Errorf("%s.image: %q: not a plain image reference", prefix, k.Image)
	}
	switch k.ImagePullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		return fmt.Errorf("%s.image_pull_policy: %q: want Always, IfNotPresent or Never", prefix, k.ImagePullPolicy)
	}
	if k.GPUProduct != "" && !labelValueOK(k.GPUProduct) {
		return fmt.Errorf("%s.gpu_product: %q: not a label value", prefix, k.GPUProduct)
	}
	for _, f := range []struct{ name, v string }{{"cpu", k.CPU}, {"memory", k.Memory}} {
		if f.v != "" && !quantityOK(f.v) {
			return fmt.Errorf("%s.%s: %q: not a quantity (e.g. 8, 500m, 32Gi)", prefix, f.name, f.v)
		}
	}
	if k.GPUs < 0 || k.Parallelism < 0 || k.TTLSecondsAfterFinished < 0 || k.Poll < 0 || k.PollMax < 0 {
		return fmt.Errorf("%s: gpus, parallelism, ttl_seconds_after_finished, poll and poll_max must not be negative", prefix)
	}
	return nil
}

// Kubernetes manifests: only the fields sharebench emits, marshalled to JSON for
// "kubectl apply -f -" (kubectl accepts JSON). No Kubernetes module is needed.
type (
	kubeMeta struct {
		Name      string            `json:"name,omitempty"`
		Namespace string            `json:"namespace,omitempty"`
		Labels    map[string]string `json:"labels,omitempty"`
	}
	kubeList struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Items      []any  `json:"items"`
	}
	kubeConfigMap struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   kubeMeta          `json:"metadata"`
		Data       map[string]string `json:"data"`
	}
	kubeJob struct {
		APIVersion string      `json:"apiVersion"`
		Kind       string      `json:"kind"`
		Metadata   kubeMeta    `json:"metadata"`
		Spec       kubeJobSpec `json:"spec"`
	}
	kubeJobSpec struct {
		CompletionMode          string          `json:"completionMode"`
		Completions             int             `json:"completions"`
		Parallelism             int             `json:"parallelism"`
		BackoffLimit            int             `json:"backoffLimit"`
		TTLSecondsAfterFinished int             `json:"ttlSecondsAfterFinished"`
		Template                kubePodTemplate `json:"template"`
	}
	kubePodTemplate struct {
		Metadata kubeMeta    `json:"metadata"`
		Spec     kubePodSpec `json:"spec"`
	}
	kubePodSpec struct {
		RestartPolicy      string            `json:"restartPolicy"`
		ServiceAccountName string            `json:"serviceAccountName,omitempty"`
		NodeSelector       map[string]string `json:"nodeSelector,omitempty"`
		Tolerations        []kubeToleration  `json:"tolerations,omitempty"`
		Containers         []kubeContainer   `json:"containers"`
		Volumes            []kubeVolume      `json:"volumes"`
	}
	kubeToleration struct {
		Key      string `json:"key"`
		Operator string `json:"operator"`
		Effect   string `json:"effect"`
	}
	kubeContainer struct {
		Name            string            `json:"name"`
		Image           string            `json:"image"`
		ImagePullPolicy string            `json:"imagePullPolicy"`
		Command         []string          `json:"command"`
		Env             []kubeEnv         `json:"env,omitempty"`
		Resources       kubeResources     `json:"resources"`
		VolumeMounts    []kubeVolumeMount `json:"volumeMounts"`
	}
	kubeEnv struct {
		Name      string        `json:"name"`
		Value     string        `json:"value,omitempty"`
		ValueFrom *kubeEnvValue `json:"valueFrom,omitempty"`
	}
	kubeEnvValue struct {
		FieldRef kubeFieldRef `json:"fieldRef"`
	}
	kubeFieldRef struct {
		FieldPath string `json:"fieldPath"`
	}
	kubeResources struct {
		Limits   map[string]string `json:"limits,omitempty"`
		Requests map[string]string `json:"requests,omitempty"`
	}
	kubeVolumeMount struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		ReadOnly  bool   `json:"readOnly,omitempty"`
	}
	kubeVolume struct {
		Name      string               `json:"name"`
		ConfigMap *kubeConfigMapSource `json:"configMap,omitempty"`
		EmptyDir  *struct{}            `json:"emptyDir,omitempty"`
	}
	kubeConfigMapSource struct {
		Name string `json:"name"`
	}
)

// IndexedJob is what one batch/v1 Indexed Job runs: Completions pods, pod i running Command
// with KubeIndexRef expanded to i, the Files mounted read-only at KubeConfigDir and an
// emptyDir at KubeWorkDir.
type IndexedJob struct {
	// Name is the Job's and the ConfigMap's name, a DNS label (JobName makes one).
	Name string
	// Component and Labels label the Job and its pods (app.kubernetes.io/name is sharebench).
	Component string
	Labels    map[string]string
	// Completions is the number of pods (indices 0 … Completions−1).
	Completions int
	// Command is the container's command.
	Command []string
	// Files is the ConfigMap's data.
	Files map[string]string
	// GPUs is the number of whole GPUs per pod (0: none), at least Config.GPUs, with the device
	// plugin's toleration.
	GPUs int
}

// JobName derives a Job name "sharebench-<prefix>-<hash of parts>", a DNS label: the same
// parts give the same name, so an engine that restarts finds (and adopts) the Job it applied
// before.
func JobName(prefix string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(prefix))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	sum := hex.EncodeToString(h.Sum(nil))[:8]
	var b strings.Builder
	for _, r := range strings.ToLower(prefix) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	if name == "" {
		return "sharebench-" + sum
	}
	return "sharebench-" + name + "-" + sum
}

// LabelValue shortens s to a label value (≤ 63 characters, alphanumeric at the end).
func LabelValue(s string) string {
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.TrimRight(s, "._-")
}

func orString(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// Kube runs Indexed Jobs through kubectl: apply, follow the pods, collect their logs, delete.
// It needs no Kubernetes Go module (client-go stays out of the build).
type Kube struct {
	// Config holds the image, resources, namespace and polling intervals.
	Config KubeConfig
	// Logger receives progress and warnings (nil: discarded).
	Logger *slog.Logger
}

func (k *Kube) log() *slog.Logger {
	if k.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return k.Logger
}

// KubectlArgs returns the kubectl arguments for a command: --context and --namespace first
// when configured.
func (k *Kube) KubectlArgs(args ...string) []string {
	var out []string
	if k.Config.Context != "" {
		out = append(out, "--context="+k.Config.Context)
	}
	if k.Config.Namespace != "" {
		out = append(out, "--namespace="+k.Config.Namespace)
	}
	return append(out, args...)
}

func (k *Kube) kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return run(ctx, NameKubernetes, orString(k.Config.Kubectl, "kubectl"), k.KubectlArgs(args...), stdin)
}

// Probe checks that kubectl runs.
func (k *Kube) Probe(ctx context.Context) error {
	_, err := run(ctx, NameKubernetes, orString(k.Config.Kubectl, "kubectl"), []string{"version", "--client"}, nil)
	return err
}

// Manifest returns the List (ConfigMap and Job) that runs j, indented JSON.
func (k *Kube) Manifest(j IndexedJob) ([]byte, error) {
	cfg := k.Config
	labels := map[string]string{"app.kubernetes.io/name": "sharebench", "app.kubernetes.io/component": j.Component}
	for key, v := range j.Labels {
		labels[key] = v
	}
	meta := kubeMeta{Name: j.Name, Namespace: cfg.Namespace, Labels: labels}
	res := kubeResources{}
	if j.GPUs > 0 {
		res.Limits = map[string]string{KubeGPUResource: strconv.Itoa(max(cfg.GPUs, j.GPUs))}
	}
	for _, q := range []struct{ key, v string }{{"cpu", cfg.CPU}, {"memory", cfg.Memory}} {
		if q.v == "" {
			continue
		}
		if res.Limits == nil {
			res.Limits = map[string]string{}
		}
		if res.Requests == nil {
			res.Requests = map[string]string{}
		}
		res.Limits[q.key], res.Requests[q.key] = q.v, q.v
	}
	pod := kubePodSpec{
		RestartPolicy:      "Never",
		ServiceAccountName: cfg.ServiceAccount,
		Containers: []kubeContainer{{
			Name: "task", Image: orString(cfg.Image, DefaultKubeImage), ImagePullPolicy: orString(cfg.ImagePullPolicy, "IfNotPresent"),
			Command: j.Command, Resources: res,
			Env: []kubeEnv{
				{Name: kubeIndexEnv, ValueFrom: &kubeEnvValue{FieldRef: kubeFieldRef{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
				{Name: "PYTHONUNBUFFERED", Value: "1"},
			},
			VolumeMounts: []kubeVolumeMount{{Name: "files", MountPath: KubeConfigDir, ReadOnly: true}, {Name: "work", MountPath: KubeWorkDir}},
		}},
		Volumes: []kubeVolume{{Name: "files", ConfigMap: &kubeConfigMapSource{Name: j.Name}}, {Name: "work", EmptyDir: &struct{}{}}},
	}
	if j.GPUs > 0 {
		pod.Tolerations = []kubeToleration{{Key: KubeGPUResource, Operator: "Exists", Effect: "NoSchedule"}}
	}
	if cfg.GPUProduct != "" {
		pod.NodeSelector = map[string]string{KubeGPUProductLabel: cfg.GPUProduct}
	}
	par := cfg.Parallelism
	if par <= 0 || par > j.Completions {
		par = j.Completions
	}
	ttl := cfg.TTLSecondsAfterFinished
	if ttl == 0 {
		ttl = 86400
	}
	job := kubeJob{
		APIVersion: "batch/v1", Kind: "Job", Metadata: meta,
		Spec: kubeJobSpec{
			CompletionMode: "Indexed", Completions: j.Completions, Parallelism: par, BackoffLimit: 0, TTLSecondsAfterFinished: ttl,
			Template: kubePodTemplate{Metadata: kubeMeta{Labels: labels}, Spec: pod},
		},
	}
	cm := kubeConfigMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: meta, Data: j.Files}
	b, err := json.MarshalIndent(kubeList{APIVersion: "v1", Kind: "List", Items: []any{cm, job}}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	b = append(b, '\n')
	if len(b) > kubeMaxManifest {
		return nil, fmt.Errorf("kubernetes: the manifest of %s is %d bytes; a ConfigMap holds at most 1 MiB", j.Name, len(b))
	}
	return b, nil
}

// kubePod is the part of a pod that the engine reads.
type kubePod struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
		Labels      map[string]string `json:"labels"`
	} `json:"metadata"`
	Status struct {
		Phase             string `json:"phase"`
		Reason            string `json:"reason"`
		Message           string `json:"message"`
		ContainerStatuses []struct {
			State struct {
				Waiting *struct {
					Reason  string `json:"reason"`
					Message string `json:"message"`
				} `json:"waiting"`
				Terminated *struct {
					ExitCode int    `json:"exitCode"`
					Reason   string `json:"reason"`
					Message  string `json:"message"`
				} `json:"terminated"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// index returns the pod's completion index, -1 if it has none.
func (p kubePod) index() int {
	for _, m := range []map[string]string{p.Metadata.Annotations, p.Metadata.Labels} {
		if v, ok := m["batch.kubernetes.io/job-completion-index"]; ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return -1
}

// waiting returns the reason the pod's container waits (ImagePullBackOff, ...), if any.
func (p kubePod) waiting() string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
			return w.Reason
		}
	}
	return p.Status.Reason
}

// failure describes how a finished pod ended.
func (p kubePod) failure() string {
	var parts []string
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			parts = append(parts, strings.TrimSpace(fmt.Sprintf("%s exit code %d %s", t.Reason, t.ExitCode, t.Message)))
		}
	}
	if p.Status.Reason != "" || p.Status.Message != "" {
		parts = append(parts, strings.TrimSpace(p.Status.Reason+" "+p.Status.Message))
	}
	msg := fmt.Sprintf("kubernetes: pod %s %s", p.Metadata.Name, p.Status.Phase)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	return msg
}

// kubeJobStatus is the part of a Job's status that the engine reads.
type kubeJobStatus struct {
	Status struct {
		Conditions []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
	} `json:"status"`
}

// ended returns the Job's final condition ("Complete" or "Failed" with its reason), if any.
func (j kubeJobStatus) ended() (string, bool) {
	for _, c := range j.Status.Conditions {
		if c.Status == "True" && (c.Type == "Complete" || c.Type == "Failed") {
			return strings.TrimSpace(c.Type + " " + c.Reason + " " + c.Message), true
		}
	}
	return "", false
}

// PodEnd is a finished pod of an Indexed Job.
type PodEnd struct {
	// Index is the pod's completion index; Pod its name; Phase Succeeded or Failed.
	Index      int
	Pod, Phase string
	// Log is the pod's log (standard output and error).
	Log []byte
	// Failure describes how the pod ended (phase, exit code, reason), for tasks whose log
	// has no result.
	Failure string
}

// KubeHooks connect Run to what the pods produce.
type KubeHooks struct {
	// Ended is called once per finished pod.
	Ended func(PodEnd) error
	// Progress is called when a pod's phase or waiting reason changes.
	Progress func(index int, phase, reason string)
	// NotRun is called with the indices left when the Job ended before all its pods ran
	// (with backoffLimit 0 one failed pod fails the Job).
	NotRun func(indices []int, condition string)
}

// Run applies j (after saving its manifest in dir as NAME.json), follows its pods, saves each
// finished pod's log in dir (POD.log) and hands it to the hooks, and deletes the Job and
// ConfigMap at the end (remove). On cancellation it deletes the Job (and so its pods) and the
// ConfigMap and returns ctx's error, joined with the deletion's when that fails.
func (k *Kube) Run(ctx context.Context, j IndexedJob, dir string, h KubeHooks) error {
	log := k.log()
	manifest, err := k.Manifest(j)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("kubernetes: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, j.Name+".json"), manifest); err != nil {
		return fmt.Errorf("kubernetes: %w", err)
	}
	if _, err := k.kubectl(ctx, manifest, "apply", "-f", "-"); err != nil {
		return err
	}
	log.Info("applied indexed job", "engine", NameKubernetes, "job", j.Name, "pods", j.Completions)
	minPoll, maxPoll := pollIntervals(k.Config.Poll, k.Config.PollMax)
	interval := minPoll
	done := map[int]bool{}
	seen := map[int]string{} // last phase reported per index
	warned := map[string]bool{}
	failures := 0
	for len(done) < j.Completions {
		if ctx.Err() != nil {
			return k.cancel(j.Name, ctx.Err())
		}
		out, err := k.kubectl(ctx, nil, "get", "pods", "--selector=job-name="+j.Name, "--output=json")
		var pods struct {
			Items []kubePod `json:"items"`
		}
		if err == nil {
			err = json.Unmarshal(out, &pods)
		}
		if err != nil {
			if ctx.Err() != nil {
				return k.cancel(j.Name, ctx.Err())
			}
			failures++
			log.Warn("kubectl get pods failed", "engine", NameKubernetes, "err", err, "failures", failures)
			if failures >= 10 {
				return k.cancel(j.Name, fmt.Errorf("kubernetes: giving up after %d failed status queries: %w", failures, err))
			}
			if err := sleepCtx(ctx, interval); err != nil {
				return k.cancel(j.Name, err)
			}
			continue
		}
		failures = 0
		slices.SortFunc(pods.Items, func(a, b kubePod) int {
			if a.index() != b.index() {
				return a.index() - b.index()
			}
			return strings.Compare(a.Metadata.Name, b.Metadata.Name)
		})
		changed, live := false, 0
		for _, p := range pods.Items {
			i := p.index()
			if i < 0 || i >= j.Completions || done[i] {
				continue
			}
			switch p.Status.Phase {
			case "Succeeded", "Failed":
				logs, lerr := k.kubectl(ctx, nil, "logs", p.Metadata.Name)
				if lerr != nil {
					log.Warn("cannot read a pod's log", "engine", NameKubernetes, "pod", p.Metadata.Name, "err", lerr)
				}
				if werr := fsutil.WriteFileAtomic(filepath.Join(dir, p.Metadata.Name+".log"), logs); werr != nil {
					log.Warn("cannot keep a pod's log", "engine", NameKubernetes, "pod", p.Metadata.Name, "err", werr)
				}
				done[i], changed = true, true
				if h.Progress != nil {
					h.Progress(i, p.Status.Phase, "")
				}
				if h.Ended != nil {
					if err := h.Ended(PodEnd{Index: i, Pod: p.Metadata.Name, Phase: p.Status.Phase, Log: logs, Failure: p.failure()}); err != nil {
						return k.cancel(j.Name, err)
					}
				}
			default:
				live++
				reason := ""
				if p.Status.Phase != "Running" {
					reason = p.waiting()
				}
				if reason != "" && !warned[p.Metadata.Name+reason] && reason != "Unschedulable" {
					warned[p.Metadata.Name+reason] = true
					log.Warn("pod waits", "engine", NameKubernetes, "pod", p.Metadata.Name, "reason", reason)
				}
				if st := p.Status.Phase + "|" + reason; seen[i] != st {
					seen[i], changed = st, true
					if h.Progress != nil {
						h.Progress(i, orString(p.Status.Phase, "Pending"), reason)
					}
				}
			}
		}
		if len(done) == j.Completions {
			break
		}
		if live == 0 {
			jb, jerr := k.kubectl(ctx, nil, "get", "job", j.Name, "--output=json")
			var js kubeJobStatus
			if jerr == nil && json.Unmarshal(jb, &js) == nil {
				if cond, ended := js.ended(); ended {
					var left []int
					for i := 0; i < j.Completions; i++ {
						if !done[i] {
							left = append(left, i)
						}
					}
					if h.NotRun != nil {
						h.NotRun(left, cond)
					}
					log.Warn("the job ended before all its pods ran", "engine", NameKubernetes, "job", j.Name, "condition", cond, "pods", len(left))
					break
				}
			}
		}
		if changed {
			interval = minPoll
		} else {
			interval = min(2*interval, maxPoll)
		}
		if err := sleepCtx(ctx, interval); err != nil {
			return k.cancel(j.Name, err)
		}
	}
	k.remove(j.Name)
	return nil
}

// remove deletes the Job (its pods go with it) and the ConfigMap. kubectl runs detached from
// sharebench's process group and bounded in time (runCleanup): the caller's context is usually
// the cancelled one, and a second Ctrl-C must not kill the deletion half-way. When it fails,
// the error (also logged) names what kubectl did not report deleted and the command that
// deletes it.
func (k *Kube) remove(name string) error {
	kubectl := orString(k.Config.Kubectl, "kubectl")
	out, err := runCleanup(cleanupTimeout, NameKubernetes, kubectl, k.KubectlArgs("delete", "job,configmap", name, "--ignore-not-found", "--wait=false"))
	if err == nil {
		return nil
	}
	var kinds, left []string
	for _, r := range []struct{ kind, printed string }{{"job", "job.batch"}, {"configmap", "configmap"}} {
		if !bytes.Contains(out, []byte(r.printed+` "`+name+`" deleted`)) {
			kinds, left = append(kinds, r.kind), append(left, r.kind+"/"+name)
		}
	}
	if len(left) == 0 {
		k.log().Warn("kubectl delete failed after deleting the job and the configmap", "engine", NameKubernetes, "job", name, "err", err)
		return nil
	}
	err = fmt.Errorf("kubernetes: %s may remain on the cluster (%w); delete with: %s %s", strings.Join(left, " and "), err,
		kubectl, strings.Join(k.KubectlArgs("delete", strings.Join(kinds, ","), name, "--ignore-not-found"), " "))
	k.log().Warn("cannot delete the job", "engine", NameKubernetes, "job", name, "err", err)
	return err
}

// cancel deletes the Job and returns cause, joined with the deletion's error.
func (k *Kube) cancel(name string, cause error) error {
	k.log().Info("deleting the job", "engine", NameKubernetes, "job", name)
	if err := k.remove(name); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}
