package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jetbpm/jetbpm/internal/testwait"
)

// composeBPMN is the workload's process: one external task of topic
// "demo", which compose.yaml's worker completes by running cat.
const composeBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="demo" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="echo" camunda:type="external" camunda:topic="demo"/>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="echo"/>
    <bpmn:sequenceFlow id="f2" sourceRef="echo" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// TestComposeCluster starts compose.yaml's cluster — three NATS nodes, two
// engine nodes, a worker — with podman-compose and runs a workload
// through the engines' published HTTP ports: the two engines share the 8
// partitions 4 + 4, and 200 instances started through either complete,
// each through the worker's `cat`. make soak runs it (JETBPM_SOAK);
// without podman-compose and a container runtime that works it is
// skipped, saying why.
//
// No registry is reachable from where jetbpm is built and tested, so the
// images are made here: one image from scratch holding this checkout's
// jetbpm, the nats-server of go.mod and a static busybox (sh, cat, wget),
// used for every service (the NATS nodes with entrypoint nats-server).
// Everything else — services, commands, environment, configuration,
// dependencies — is compose.yaml's; only the host ports are made free.
func TestComposeCluster(t *testing.T) {
	if os.Getenv("JETBPM_SOAK") == "" {
		t.Skip("make soak runs the compose cluster (JETBPM_SOAK)")
	}
	for _, tool := range []string{"podman", "podman-compose"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s (make containers installs it): %v", tool, err)
		}
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skipf("no static busybox for the image's sh, cat and wget (make containers installs it): %v", err)
	}
	dir := t.TempDir()
	image := fmt.Sprintf("localhost/jetbpm-compose-soak:%d", os.Getpid())
	buildImage(t, dir, busybox, image)
	env := containersEnv(t, dir)
	ports := [2]string{freePort(t), freePort(t)}
	file := filepath.Join(dir, "compose.yaml")
	writeComposeFor(t, file, image, ports)
	project := fmt.Sprintf("jetbpm-soak-%d", os.Getpid())
	compose := func(args ...string) string {
		cmd := exec.Command("podman-compose", append([]string{"-p", project, "-f", file}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("podman-compose %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range []string{"engine-1", "engine-2", "worker"} {
				out, _ := exec.Command("podman", "logs", "--tail", "20", project+"_"+s+"_1").CombinedOutput()
				t.Logf("%s's last records:\n%s", s, out)
			}
		}
		compose("down")
		_ = exec.Command("podman", "rmi", image).Run()
	})
	started := time.Now()
	compose("up", "-d")

	engines := [2]string{"http://127.0.0.1:" + ports[0], "http://127.0.0.1:" + ports[1]}
	testwait.Until(t, 2*time.Minute, "the two engines holding 4 partitions each", func() error {
		for _, e := range engines {
			var v struct {
				Nodes []struct {
					Holds []int `json:"holds"`
				} `json:"nodes"`
			}
			if err := getJSON(e+"/v1/cluster", &v); err != nil {
				return err
			}
			if len(v.Nodes) != 2 || len(v.Nodes[0].Holds) != 4 || len(v.Nodes[1].Holds) != 4 {
				return fmt.Errorf("%s sees %+v", e, v.Nodes)
			}
		}
		return nil
	})
	t.Logf("compose cluster up and shared in %s", time.Since(started).Round(time.Millisecond))

	resp, err := http.Post(engines[0]+"/v1/deployments?name=demo.bpmn", "application/xml", strings.NewReader(composeBPMN))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("deploy: %s %s", resp.Status, body)
	}
	const n = 200
	loaded := time.Now()
	for i := range n {
		req := fmt.Sprintf(`{"id": "c-%03d", "vars": {"n": %d}}`, i, i)
		testwait.Until(t, 30*time.Second, fmt.Sprintf("start c-%03d", i), func() error {
			resp, err := http.Post(engines[i%2]+"/v1/processes/demo/instances", "application/json", strings.NewReader(req))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b, _ := io.ReadAll(resp.Body)
				return fmt.Errorf("%s %s", resp.Status, b)
			}
			return nil
		})
	}
	for i := range n {
		id := fmt.Sprintf("c-%03d", i)
		testwait.Until(t, time.Minute, id+" to complete through the worker", func() error {
			var v struct {
				Status    string         `json:"status"`
				Variables map[string]any `json:"variables"`
				Passed    []string       `json:"passed"`
			}
			if err := getJSON(engines[(i+1)%2]+"/v1/instances/"+id, &v); err != nil {
				return err
			}
			if v.Status != "completed" || v.Variables["n"] != float64(i) || !strings.Contains(strings.Join(v.Passed, ","), "echo") {
				return fmt.Errorf("%+v", v)
			}
			return nil
		})
	}
	t.Logf("%d instances started through both engines completed in %s", n, time.Since(loaded).Round(time.Millisecond))
}

// buildImage builds the one image every service runs.
func buildImage(t *testing.T, dir, busybox, image string) {
	t.Helper()
	ctx := filepath.Join(dir, "image")
	if err := os.Mkdir(ctx, 0o755); err != nil {
		t.Fatal(err)
	}
	for out, pkg := range map[string]string{"jetbpm": "../cmd/jetbpm", "nats-server": "github.com/nats-io/nats-server/v2"} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(ctx, out), pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("ldd", busybox).CombinedOutput(); !bytes.Contains(out, []byte("not a dynamic executable")) {
		t.Skipf("%s is not static (install busybox-static): %s", busybox, out)
	}
	containerfile := "FROM scratch\n"
	for _, applet := range []string{"sh", "cat", "wget"} {
		if err := os.WriteFile(filepath.Join(ctx, applet), bb, 0o755); err != nil {
			t.Fatal(err)
		}
		containerfile += fmt.Sprintf("COPY %s /bin/%s\n", applet, applet)
	}
	containerfile += "COPY jetbpm nats-server /usr/local/bin/\nENV PATH=/usr/local/bin:/bin\nWORKDIR /data\nENTRYPOINT [\"jetbpm\"]\n"
	if err := os.WriteFile(filepath.Join(ctx, "Containerfile"), []byte(containerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("podman", "build", "-q", "-t", image, ctx).CombinedOutput(); err != nil {
		t.Skipf("podman cannot build an image here: %v\n%s", err, out)
	}
}

// containersEnv is the environment podman runs with: explicit limits for
// the containers (this machine refuses the defaults), and runc where it
// is installed (crun refuses hybrid cgroups). A runtime that cannot run a
// container skips the test.
func containersEnv(t *testing.T, dir string) []string {
	t.Helper()
	conf := "[containers]\ndefault_ulimits = [\"nofile=20000:20000\", \"nproc=4096:4096\"]\n"
	if _, err := exec.LookPath("runc"); err == nil {
		conf += "[engine]\nruntime = \"runc\"\n"
	}
	file := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CONTAINERS_CONF="+file)
	return env
}

// writeComposeFor writes compose.yaml with every service on image, the
// NATS nodes' entrypoint nats-server, relative paths made absolute and
// the engines' HTTP ports published on ports.
func writeComposeFor(t *testing.T, file, image string, ports [2]string) {
	t.Helper()
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	services := doc["services"].(map[string]any)
	for name, s := range services {
		svc := s.(map[string]any)
		svc["image"] = image
		delete(svc, "build")
		if strings.HasPrefix(name, "nats-") {
			svc["entrypoint"] = []any{"nats-server"}
		}
		if vols, ok := svc["volumes"].([]any); ok {
			for i, v := range vols {
				if s, ok := v.(string); ok && strings.HasPrefix(s, "./") {
					vols[i] = filepath.Join(here, s)
				}
			}
		}
	}
	services["engine-1"].(map[string]any)["ports"] = []any{ports[0] + ":9464"}
	services["engine-2"].(map[string]any)["ports"] = []any{ports[1] + ":9464"}
	for k := range doc {
		if strings.HasPrefix(k, "x-") {
			delete(doc, k)
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// getJSON GETs url and decodes its 200 answer into v.
func getJSON(url string, v any) error {
	client := http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", url, resp.Status, body)
	}
	return json.Unmarshal(body, v)
}
