// Package kubernetes holds the manifests that run plugkit on Kubernetes;
// its test decodes each strictly into the Kubernetes API's Go types, so a
// misspelt or misplaced field fails here rather than in a cluster.
package kubernetes

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclparse"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// decoded is every object of every manifest, by kind.
type decoded struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	configMaps  []*corev1.ConfigMap
	secrets     []*corev1.Secret
	pdbs        []*policyv1.PodDisruptionBudget
}

// strict decodes one YAML document into the type its apiVersion and kind
// name, refusing unknown and duplicate fields.
func (d *decoded) strict(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		o := &appsv1.Deployment{}
		d.deployments, obj = append(d.deployments, o), o
	case "v1 Service":
		o := &corev1.Service{}
		d.services, obj = append(d.services, o), o
	case "v1 ConfigMap":
		o := &corev1.ConfigMap{}
		d.configMaps, obj = append(d.configMaps, o), o
	case "v1 Secret":
		o := &corev1.Secret{}
		d.secrets, obj = append(d.secrets, o), o
	case "policy/v1 PodDisruptionBudget":
		o := &policyv1.PodDisruptionBudget{}
		d.pdbs, obj = append(d.pdbs, o), o
	default:
		return &unknownKind{tm}
	}
	return yaml.UnmarshalStrict(doc, obj)
}

type unknownKind struct{ tm metav1.TypeMeta }

func (e *unknownKind) Error() string {
	return "no Go type for apiVersion " + e.tm.APIVersion + " kind " + e.tm.Kind + " in this test: add it"
}

// documents splits a multi-document YAML file.
func documents(data []byte) [][]byte {
	var out [][]byte
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) != "" {
			out = append(out, []byte(doc))
		}
	}
	return out
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func decodeAll(t *testing.T) *decoded {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	d := &decoded{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range documents(data) {
			if err := d.strict(doc); err != nil {
				t.Errorf("%s, document %d: %v", f, i+1, err)
			}
		}
	}
	return d
}

// TestManifestsDecodeStrictly: every manifest is a known object with no
// unknown field, and they fit together: the probes hit /healthz and
// /readyz on the metrics port, the grace period covers preStop and the
// host's shutdown_timeout, the volumes name the ConfigMap and Secrets
// shipped, the Services and the budget select the pods, and the deployment
// file in the ConfigMap is HCL.
func TestManifestsDecodeStrictly(t *testing.T) {
	d := decodeAll(t)
	if len(d.deployments) != 1 || len(d.services) != 2 || len(d.configMaps) != 1 || len(d.pdbs) != 1 || len(d.secrets) != 2 {
		t.Fatalf("manifests: %d deployments, %d services, %d config maps, %d secrets, %d budgets",
			len(d.deployments), len(d.services), len(d.configMaps), len(d.secrets), len(d.pdbs))
	}
	dep := d.deployments[0]
	pod := dep.Spec.Template
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for probe, want := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz", c.StartupProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.StrVal != "metrics" {
			t.Errorf("a probe is not GET %s on the metrics port: %+v", want, probe)
		}
	}
	config := d.configMaps[0].Data["config.hcl"]
	if _, diags := hclparse.NewParser().ParseHCL([]byte(config), "config.hcl"); diags.HasErrors() {
		t.Errorf("the ConfigMap's config.hcl: %s", diags.Error())
	}
	m := regexp.MustCompile(`shutdown_timeout\s*=\s*"([^"]+)"`).FindStringSubmatch(config)
	if m == nil {
		t.Fatal("config.hcl sets no shutdown_timeout")
	}
	shutdown, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	var preStop time.Duration
	if h := c.Lifecycle; h == nil || h.PreStop == nil || h.PreStop.Sleep == nil {
		t.Error("no preStop sleep")
	} else {
		preStop = time.Duration(h.PreStop.Sleep.Seconds) * time.Second
	}
	grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	if grace < preStop+shutdown+5*time.Second {
		t.Errorf("terminationGracePeriodSeconds %s does not cover preStop %s, shutdown_timeout %s and the plugins' stop", grace, preStop, shutdown)
	}
	for _, want := range []string{`"0.0.0.0:` + itoa(ports["mcp"]) + `"`, `"0.0.0.0:` + itoa(ports["metrics"]) + `"`} {
		if !strings.Contains(config, want) {
			t.Errorf("config.hcl does not listen on %s, the container's port", want)
		}
	}
	if !strings.Contains(strings.Join(c.Args, " "), "/etc/plugkit/config/config.hcl") {
		t.Errorf("args %q do not run the mounted deployment file", c.Args)
	}
	names := map[string]bool{d.configMaps[0].Name: true}
	for _, s := range d.secrets {
		names[s.Name] = true
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil && !names[v.ConfigMap.Name]:
			t.Errorf("volume %s names ConfigMap %s, not shipped", v.Name, v.ConfigMap.Name)
		case v.Secret != nil && !names[v.Secret.SecretName]:
			t.Errorf("volume %s names Secret %s, not shipped", v.Name, v.Secret.SecretName)
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext: %+v", sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources: %+v", c.Resources)
	}
	labels := pod.Labels
	matches := func(sel map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	for _, s := range d.services {
		if !matches(s.Spec.Selector) {
			t.Errorf("Service %s selects %v, not the pods %v", s.Name, s.Spec.Selector, labels)
		}
		for _, p := range s.Spec.Ports {
			if _, ok := ports[p.TargetPort.StrVal]; !ok {
				t.Errorf("Service %s targets port %q, which the container does not name", s.Name, p.TargetPort.StrVal)
			}
		}
		// MCP sessions live in one replica: without a load balancer routing
		// on Mcp-Session-Id, the MCP Service keeps a client on one by its
		// address.
		for _, p := range s.Spec.Ports {
			if p.TargetPort.StrVal != "mcp" {
				continue
			}
			if s.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || s.Spec.SessionAffinityConfig == nil ||
				s.Spec.SessionAffinityConfig.ClientIP == nil || s.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
				t.Errorf("Service %s serves MCP without client-IP affinity and its timeout: %q %+v", s.Name, s.Spec.SessionAffinity, s.Spec.SessionAffinityConfig)
			}
		}
	}
	if !matches(d.pdbs[0].Spec.Selector.MatchLabels) {
		t.Errorf("the budget selects %v, not the pods", d.pdbs[0].Spec.Selector.MatchLabels)
	}
}

// TestStrictDecodingRefusesTypos: the decoding above is strict: a field
// misspelt or put where it does not belong fails it.
func TestStrictDecodingRefusesTypos(t *testing.T) {
	data, err := os.ReadFile("deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, typo := range []struct{ from, to string }{
		{"readinessProbe:", "readynessProbe:"},
		{"terminationGracePeriodSeconds:", "terminationGracePeriod:"},
		{"  replicas: 3", "  replicas: 3\n  replica: 3"},
	} {
		bad := bytes.Replace(data, []byte(typo.from), []byte(typo.to), 1)
		if bytes.Equal(bad, data) {
			t.Fatalf("%q is not in deployment.yaml", typo.from)
		}
		if err := (&decoded{}).strict(bad); err == nil {
			t.Errorf("a deployment with %q decoded", typo.to)
		}
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
