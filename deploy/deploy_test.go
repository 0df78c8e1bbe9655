package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// helmModule is the Helm the chart is checked with, pinned, run with
// go run so nothing needs installing.
const helmModule = "helm.sh/helm/v4/cmd/helm@v4.3.2"

// kubeconformModule checks the rendered objects against the schemas in
// testdata/schemas (Kubernetes v1.31.0 and prometheus-operator v0.85.0,
// standalone and strict, made by testdata/schemas/gen.go: kubeconform's
// own schemas are on GitHub, which this machine cannot reach).
const kubeconformModule = "github.com/yannh/kubeconform/cmd/kubeconform@v0.8.0"

// kubeconform checks the YAML documents in text strictly and returns its
// report and whether every object was valid.
func kubeconform(t *testing.T, text string) (string, bool) {
	t.Helper()
	file := t.TempDir() + "/rendered.yaml"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", kubeconformModule, "-strict", "-summary",
		"-schema-location", "testdata/schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json", file)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kubeconform: %v\n%s", err, out)
	}
	return string(out), err == nil
}

// helm runs helm with args on the chart and returns its stdout.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", helmModule}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// documents decodes a stream of YAML documents.
func documents(t *testing.T, text string) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(text))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, text)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
}

// dig follows keys (and list indexes, as ints) into v.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// The chart passes helm lint --strict, renders objects kubeconform finds
// valid (strictly, so a misspelt field fails), and renders: with the defaults a
// Deployment of two engine nodes on the NATS URL, its probes on /healthz,
// and a Service; with a configuration, credentials, an auth file and a
// ServiceMonitor, those too, mounted where serve's flags read them.
func TestHelmChart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Helm")
	}
	helm(t, "lint", "--strict", "helm/jetbpm")

	kinds := func(docs []map[string]any) []string {
		var out []string
		for _, d := range docs {
			out = append(out, d["kind"].(string))
		}
		slices.Sort(out)
		return out
	}
	rendered := helm(t, "template", "flow", "helm/jetbpm")
	if report, ok := kubeconform(t, rendered); !ok || !strings.Contains(report, "Valid: 2, Invalid: 0, Errors: 0, Skipped: 0") {
		t.Errorf("kubeconform on the default render:\n%s", report)
	}
	// The schemas are strict: a field Kubernetes does not know is named.
	bad := strings.Replace(rendered, "\n  replicas: 2\n", "\n  replicas: 2\n  replica: 2\n", 1)
	if report, ok := kubeconform(t, bad); ok || !strings.Contains(report, "'replica' not allowed") {
		t.Errorf("kubeconform on a Deployment with spec.replica:\n%s", report)
	}
	docs := documents(t, rendered)
	if got := kinds(docs); !slices.Equal(got, []string{"Deployment", "Service"}) {
		t.Fatalf("default render: %v", got)
	}
	var dep map[string]any
	for _, d := range docs {
		if d["kind"] == "Deployment" {
			dep = d
		}
	}
	c := dig(dep, "spec", "template", "spec", "containers", 0)
	args, _ := dig(c, "args").([]any)
	for _, want := range []string{"serve", "--replicas=3", "--partitions=8", "--failover=10s", "--http=0.0.0.0:9464", "--http-insecure"} {
		if !slices.Contains(args, any(want)) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	if dig(dep, "spec", "replicas") != 2 || dig(c, "env", 0, "value") != "nats://nats:4222" ||
		dig(c, "readinessProbe", "httpGet", "path") != "/healthz" || dig(c, "livenessProbe", "httpGet", "path") != "/healthz" {
		t.Errorf("deployment %v", dep)
	}

	values := "config:\n  jobs:\n    lockDuration: 5m\nnats:\n  credentials: |\n    -----BEGIN NATS USER JWT-----\n" +
		"httpAuth:\n  existingSecret: jetbpm-auth\nserviceMonitor:\n  enabled: true\n"
	file := t.TempDir() + "/values.yaml"
	if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	rendered = helm(t, "template", "flow", "helm/jetbpm", "-f", file)
	if report, ok := kubeconform(t, rendered); !ok || !strings.Contains(report, "Valid: 5, Invalid: 0, Errors: 0, Skipped: 0") {
		t.Errorf("kubeconform on the full render:\n%s", report)
	}
	bad = strings.Replace(rendered, "\n  endpoints:\n", "\n  endpoint: []\n  endpoints:\n", 1)
	if report, ok := kubeconform(t, bad); ok || !strings.Contains(report, "'endpoint' not allowed") {
		t.Errorf("kubeconform on a ServiceMonitor with spec.endpoint:\n%s", report)
	}
	docs = documents(t, rendered)
	if got := kinds(docs); !slices.Equal(got, []string{"ConfigMap", "Deployment", "Secret", "Service", "ServiceMonitor"}) {
		t.Fatalf("full render: %v", got)
	}
	for _, d := range docs {
		switch d["kind"] {
		case "Deployment":
			args, _ := dig(d, "spec", "template", "spec", "containers", 0, "args").([]any)
			for _, want := range []string{"--config=/etc/jetbpm/config/jetbpm.yaml", "--creds=/etc/jetbpm/creds/nats.creds", "--http-auth=/etc/jetbpm/auth/auth.yaml"} {
				if !slices.Contains(args, any(want)) {
					t.Errorf("args %v lack %s", args, want)
				}
			}
			if slices.Contains(args, any("--http-insecure")) {
				t.Errorf("args %v: --http-insecure with an auth file", args)
			}
		case "ConfigMap":
			if cfg, _ := dig(d, "data", "jetbpm.yaml").(string); !strings.Contains(cfg, "lockDuration: 5m") {
				t.Errorf("config map %v", d)
			}
		}
	}
}

// The compose file names three NATS nodes with the cluster configuration,
// two engine nodes replicating three times, and a worker, and every
// service refers only to services it defines.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]struct {
			Image     string   `yaml:"image"`
			Command   []string `yaml:"command"`
			DependsOn []string `yaml:"depends_on"`
			Volumes   []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var names []string
	for name, s := range f.Services {
		names = append(names, name)
		if s.Image == "" {
			t.Errorf("service %s has no image", name)
		}
		for _, d := range s.DependsOn {
			if _, ok := f.Services[d]; !ok {
				t.Errorf("service %s depends on %s, which is not defined", name, d)
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"engine-1", "engine-2", "nats-1", "nats-2", "nats-3", "worker"}) {
		t.Fatalf("services %v", names)
	}
	for _, e := range []string{"engine-1", "engine-2"} {
		if cmd := f.Services[e].Command; len(cmd) == 0 || cmd[0] != "serve" || !slices.Contains(cmd, "3") {
			t.Errorf("%s runs %v, want serve --replicas 3", e, cmd)
		}
	}
	if v := f.Services["nats-1"].Volumes; len(v) != 1 || !strings.HasPrefix(v[0], "./nats/nats.conf:") {
		t.Errorf("nats-1 volumes %v", v)
	}
	conf, err := os.ReadFile("nats/nats.conf")
	if err != nil || !bytes.Contains(conf, []byte("jetstream")) || !bytes.Contains(conf, []byte("nats-route://nats-3:6222")) {
		t.Errorf("nats/nats.conf: %v\n%s", err, conf)
	}
}
