package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/internal/testkit/transcript"
)

// The project's root, from this package's folder.
const root = "../../.."

// pages are the Markdown files whose transcripts are run: the README and
// every guide.
func pages(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, guides...)
}

// TestPagesParse needs nothing but the pages: every console block says how
// it runs, with options the harness knows.
func TestPagesParse(t *testing.T) {
	n := 0
	for _, p := range pages(t) {
		blocks, err := parsePage(p)
		if err != nil {
			t.Error(err)
		}
		n += len(blocks)
	}
	if n < 10 {
		t.Errorf("found only %d console blocks in the README and docs/: is the harness reading them?", n)
	}
}

// TestDocTranscripts runs every console block of the README and docs/ in a
// fresh copy of the sample deployment with the real binaries, and compares
// what each command prints with the page.
func TestDocTranscripts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the transcripts are of a Linux host")
	}
	if testing.Short() {
		t.Skip("builds every binary and runs the walkthrough")
	}
	bin := t.TempDir()
	buildAll(t, bin)
	for _, p := range pages(t) {
		blocks, err := parsePage(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(blocks) == 0 {
			continue
		}
		t.Run(rel(p), func(t *testing.T) { runPage(t, bin, blocks) })
	}
}

// parsePage reads a page and returns its console blocks.
func parsePage(p string) ([]transcript.Block, error) {
	text, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return transcript.Parse(rel(p), string(text))
}

func rel(p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return r
}

// buildAll builds bin/host and bin/plugins/NAME for every main package
// under plugins/, as `make build` does.
func buildAll(t *testing.T, bin string) {
	t.Helper()
	targets := map[string]string{filepath.Join(bin, "host"): "./cmd/host"}
	dirs, _ := os.ReadDir(filepath.Join(root, "plugins"))
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		list := exec.Command("go", "list", "-f", "{{.Name}}", "./plugins/"+d.Name())
		list.Dir = root
		out, err := list.Output()
		if err != nil || strings.TrimSpace(string(out)) != "main" {
			continue
		}
		targets[filepath.Join(bin, "plugins", d.Name())] = "./plugins/" + d.Name()
	}
	for out, pkg := range targets {
		if err := testkit.GoBuild(out, filepath.Join(root, pkg)); err != nil {
			t.Fatal(err)
		}
	}
}

// workdir makes a copy of the repository's deployment files in a folder of
// the test, with the binaries under bin/ and run/sandbox made from
// sandbox.example, as `make build` leaves a checkout. Folders of npm
// packages are linked, not copied.
func workdir(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, path)
		if r == "." {
			return nil
		}
		target := filepath.Join(dir, r)
		if d.IsDir() {
			switch {
			case r == ".git" || r == "bin" || r == "run" || r == ".ci":
				return filepath.SkipDir
			case d.Name() == "node_modules":
				if err := os.Symlink(path, target); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			l, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(path, target)
	})
	if err != nil {
		t.Fatalf("copying the repository: %v", err)
	}
	err = filepath.WalkDir(bin, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		r, _ := filepath.Rel(bin, path)
		return copyFile(path, filepath.Join(dir, "bin", r))
	})
	if err != nil {
		t.Fatalf("copying the binaries: %v", err)
	}
	cmd := exec.Command("cp", "-R", "sandbox.example", "run/sandbox")
	cmd.Dir = dir
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("making run/sandbox: %v: %s", err, b)
	}
	return dir
}

func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if os.Link(from, to) == nil {
		return nil
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	info, err := os.Stat(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, info.Mode().Perm())
}

// page is the state of one page's run: its folder and the hosts running in
// it, by deployment file.
type page struct {
	t     *testing.T
	dir   string
	hosts map[string]*hostProc
}

type hostProc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has exited
}

func runPage(t *testing.T, bin string, blocks []transcript.Block) {
	p := &page{t: t, dir: workdir(t, bin), hosts: map[string]*hostProc{}}
	t.Cleanup(p.stopAll)
	for _, b := range blocks {
		t.Run(fmt.Sprintf("line_%d", b.Line), func(t *testing.T) {
			if b.Skip != "" {
				t.Skipf("%s:%d: not run: %s", b.File, b.Line, b.Skip)
			}
			for _, need := range b.Needs {
				p.need(t, need)
			}
			if b.Host != "" {
				p.startHost(t, b.Host)
			}
			for _, s := range b.Steps {
				if s.Background() {
					p.startHost(t, configOf(s.Command))
					continue
				}
				got := p.run(t, s.Command)
				if err := transcript.Match(s.Want, got); err != nil {
					t.Errorf("%s:%d: $ %s\n%v", b.File, s.Line, s.Command, err)
				}
			}
		})
	}
}

var configFlag = regexp.MustCompile(`-c\s+(\S+)`)

func configOf(command string) string {
	if m := configFlag.FindStringSubmatch(command); m != nil {
		return m[1]
	}
	return "config.hcl"
}

func (p *page) need(t *testing.T, what string) {
	t.Helper()
	switch what {
	case "node":
		testenv.LookPath(t, "node")
		if _, err := os.Stat(filepath.Join(p.dir, "plugins/mcp/testdata/servers/node_modules")); err != nil {
			testenv.Missing(t, "the npm servers of plugins/mcp/testdata/servers (npm ci there)")
		}
	case "python":
		testenv.NeedPython(t)
	case "promtool":
		testenv.LookPath(t, "promtool")
	case "root":
		if os.Geteuid() != 0 {
			testenv.Missing(t, "root (the block shows what a root host does)")
		}
	default:
		t.Fatalf("unknown need %q (node, python, promtool, root)", what)
	}
}

// run runs one command of a page with bash in the page's folder, bounded,
// and returns what it printed, the folder shown as /path/to/plugkit.
func (p *page) run(t *testing.T, command string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = p.dir
	cmd.Env = p.env()
	cmd.Stdin = nil // not a terminal: a question is refused, as for a script
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	_ = cmd.Run() // the exit code is not part of a transcript
	if ctx.Err() != nil {
		t.Fatalf("$ %s: no end within 2 minutes; printed:\n%s", command, out.String())
	}
	text := strings.ReplaceAll(out.String(), p.dir, "/path/to/plugkit")
	return strings.Split(strings.TrimRight(text, "\n"), "\n")
}

func (p *page) env() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + p.dir, "LANG=C.UTF-8", "PLUGKIT_CI=" + os.Getenv("PLUGKIT_CI")}
}

// startHost starts `bin/host run -c FILE` in the page's folder unless one
// runs already, and waits until every plugin is ACTIVE.
func (p *page) startHost(t *testing.T, file string) {
	t.Helper()
	if h := p.hosts[file]; h != nil {
		select {
		case <-h.done:
			b, _ := os.ReadFile(h.log)
			t.Fatalf("the host of %s has exited; its log:\n%s", file, b)
		default:
			return
		}
	}
	cmd := exec.Command("bin/host", "run", "-c", file)
	cmd.Dir = p.dir
	cmd.Env = p.env()
	h := &hostProc{cmd: cmd, log: filepath.Join(p.t.TempDir(), "host.log"), done: make(chan struct{})}
	logf, err := os.Create(h.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting bin/host run -c %s: %v", file, err)
	}
	p.hosts[file] = h
	go func() { _ = cmd.Wait(); logf.Close(); close(h.done) }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := exec.Command(filepath.Join(p.dir, "bin/host"), "status", "--json", "-c", filepath.Join(p.dir, file)).Output()
		if err == nil && allActive(out) {
			return
		}
		select {
		case <-h.done:
			b, _ := os.ReadFile(h.log)
			t.Fatalf("bin/host run -c %s exited: %v\n%s", file, cmd.ProcessState, b)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(h.log)
			t.Fatalf("bin/host run -c %s: not every plugin ACTIVE within 90s; status: %s\nlog:\n%s", file, out, b)
		}
	}
}

func allActive(statusJSON []byte) bool {
	var st struct {
		Plugins []struct{ State string } `json:"plugins"`
	}
	if json.Unmarshal(statusJSON, &st) != nil || len(st.Plugins) == 0 {
		return false
	}
	for _, pl := range st.Plugins {
		if pl.State != "ACTIVE" {
			return false
		}
	}
	return true
}

// stopAll stops every host of the page with `host stop`, and kills one
// that is still there 30 s later.
func (p *page) stopAll() {
	for file, h := range p.hosts {
		stop := exec.Command(filepath.Join(p.dir, "bin/host"), "stop", "-c", filepath.Join(p.dir, file))
		stop.Dir = p.dir
		_ = stop.Run()
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.done
			p.t.Errorf("the host of %s did not stop within 30s of host stop", file)
		}
	}
}
