package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/internal/testkit/testcert"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// runAsPod runs the image as packaging/kubernetes's Deployment would, without
// a cluster, by the means runImage uses: the layer unpacked, a mount
// namespace, chroot as the manifest's user. As the kubelet and runc do,
// the root file system is read-only, and only the declared volumes are
// mounted on it: the ConfigMap's files and the Secrets' (made up here: a
// test certificate, a keys file) read-only, each emptyDir writable, made
// as the kubelet makes one (root's, mode 2777, group fsGroup); the process
// has fsGroup as a supplementary group and the manifest's environment. The
// host must come up with every plugin ACTIVE, pass the manifest's probes,
// answer `host status` run as `kubectl exec` would, and stop on SIGTERM.
func runAsPod(t *testing.T, layer v1.Layer) {
	if os.Geteuid() != 0 {
		if testenv.InCI() {
			t.Fatal("running the image needs root (unshare, mount, chroot)")
		}
		t.Skip("running the image needs root (unshare, mount, chroot)")
	}
	unshare := testenv.LookPath(t, "unshare")
	chroot := testenv.LookPath(t, "chroot")
	dep, configs := podManifests(t)
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers in the Deployment, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil || sc.FSGroup == nil {
		t.Fatal("the Deployment sets no runAsUser, runAsGroup and fsGroup")
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Fatal("the container's root file system is not read-only: this test assumes it is")
	}
	uid, gid, fsGroup := *sc.RunAsUser, *sc.RunAsGroup, *sc.FSGroup

	work := t.TempDir()
	root := filepath.Join(work, "root")
	unpack(t, layer, root)
	// What each volume is made of, outside the root.
	sources := map[string]string{}
	for _, vol := range pod.Volumes {
		src := filepath.Join(work, "volumes", vol.Name)
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case vol.EmptyDir != nil:
			// As the kubelet makes it: root's, group fsGroup, 0777 and setgid.
			if err := os.Chown(src, 0, int(fsGroup)); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(src, 0o777|os.ModeSetgid); err != nil {
				t.Fatal(err)
			}
		case vol.ConfigMap != nil:
			data := configs[vol.ConfigMap.Name]
			if data == nil {
				t.Fatalf("volume %s: no ConfigMap %s in the manifests", vol.Name, vol.ConfigMap.Name)
			}
			for name, content := range data {
				writeFile(t, filepath.Join(src, name), content)
			}
		case vol.Secret != nil:
			secretFiles(t, vol.Secret.SecretName, src)
		default:
			t.Fatalf("volume %s: a kind this test does not make", vol.Name)
		}
		sources[vol.Name] = src
	}
	script := fmt.Sprintf(`set -e
mount --bind %[1]q %[1]q
mount -o remount,bind,ro %[1]q
mount -t proc proc %[1]q/proc
mount --bind /dev %[1]q/dev
`, root)
	for _, m := range c.VolumeMounts {
		src, ok := sources[m.Name]
		if !ok {
			t.Fatalf("mount of undeclared volume %s", m.Name)
		}
		// runc makes the mount point before the root becomes read-only.
		if err := os.MkdirAll(filepath.Join(root, m.MountPath), 0o755); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, m.MountPath)
		script += fmt.Sprintf("mount --bind %q %q\n", src, dst)
		if m.ReadOnly {
			script += fmt.Sprintf("mount -o remount,bind,ro %q\n", dst)
		}
	}
	script += fmt.Sprintf(`exec %q --userspec=%d:%d --groups=%d %q "$@"`, chroot, uid, gid, fsGroup, root)
	env := []string{"PATH=/usr/bin:/bin", "HOME=/plugkit/run", "HOSTNAME=plugkit-0"}
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	in := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, unshare, append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"}, args...)...)
		cmd.Env = env
		return cmd
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	host := in(ctx, append([]string{"/plugkit/bin/host"}, c.Args...)...)
	var log testkit.Buffer
	host.Stdout, host.Stderr = &log, &log
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- host.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = host.Process.Kill()
			<-done
		}
	}()

	// The startup probe's bound: periodSeconds × failureThreshold.
	startup := c.StartupProbe
	deadline := time.Now().Add(time.Duration(startup.PeriodSeconds*startup.FailureThreshold) * time.Second)
	for !probeOK(c, startup) {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("the pod's host exited: %v\n%s", err, log.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the startup probe did not pass within its bound:\n%s", log.String())
		}
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if !probeOK(c, p) {
			t.Errorf("the %s probe fails on a started pod:\n%s", name, log.String())
		}
	}
	status, err := in(ctx, "/plugkit/bin/host", "status", "-c", c.Args[len(c.Args)-1]).CombinedOutput()
	if err != nil {
		t.Fatalf("host status in the pod: %v\n%s", err, status)
	}
	for _, p := range []string{"index", "search", "files", "safety", "audit"} {
		if !strings.Contains(string(status), p) {
			t.Errorf("host status does not list %s:\n%s", p, status)
		}
	}
	if n := strings.Count(string(status), "ACTIVE"); n != 5 {
		t.Errorf("%d plugins ACTIVE in the pod, want 5:\n%s", n, status)
	}
	t.Logf("host status in the pod:\n%s", status)

	if err := host.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Errorf("the pod's host did not stop cleanly on SIGTERM: %v\n%s", err, log.String())
		}
	case <-time.After(time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second):
		t.Fatalf("the pod's host did not stop within terminationGracePeriodSeconds:\n%s", log.String())
	}
}

// podManifests reads the Deployment and the ConfigMaps' data, by name.
func podManifests(t *testing.T) (*appsv1.Deployment, map[string]map[string]string) {
	t.Helper()
	dir := filepath.Join("..", "..", "packaging", "kubernetes")
	var dep appsv1.Deployment
	data, err := os.ReadFile(filepath.Join(dir, "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &dep); err != nil {
		t.Fatalf("deployment.yaml: %v", err)
	}
	var cm corev1.ConfigMap
	if data, err = os.ReadFile(filepath.Join(dir, "configmap.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatalf("configmap.yaml: %v", err)
	}
	return &dep, map[string]map[string]string{cm.Name: cm.Data}
}

// secretFiles writes what the named Secret holds in a real deployment,
// made up for the test, into dir.
func secretFiles(t *testing.T, name, dir string) {
	t.Helper()
	switch name {
	case "plugkit-tls":
		cert, key, _ := testcert.Write(t, t.TempDir())
		for src, dst := range map[string]string{cert: "tls.crt", key: "tls.key"} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, dst), string(b))
		}
	case "plugkit-keys":
		path := filepath.Join(dir, "keys.hcl")
		if _, err := authn.NewKey(path, "pod-test", "", nil); err != nil {
			t.Fatal(err)
		}
		// A secret volume's files: root's, readable by the pod's user.
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("secret %s: this test does not know what it holds", name)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// unpack extracts the layer into root, as runImage does.
func unpack(t *testing.T, layer v1.Layer, root string) {
	t.Helper()
	tarBin := testenv.LookPath(t, "tar")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	untar := exec.Command(tarBin, "-xp", "--numeric-owner", "-C", root)
	untar.Stdin = rc
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("unpacking the layer: %v\n%s", err, out)
	}
	for _, d := range []string{"proc", "dev"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// probeOK is whether an HTTP GET probe passes as the kubelet sends it (the
// pod shares this network namespace here).
func probeOK(c corev1.Container, p *corev1.Probe) bool {
	if p == nil || p.HTTPGet == nil {
		return false
	}
	port := p.HTTPGet.Port.IntValue()
	for _, cp := range c.Ports {
		if cp.Name == p.HTTPGet.Port.StrVal {
			port = int(cp.ContainerPort)
		}
	}
	client := http.Client{Timeout: time.Duration(max(p.TimeoutSeconds, 1)) * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, p.HTTPGet.Path))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}
