package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/plugkit-go/plugkit/bench/sample"
)

// system is one gateway (or the upstream alone) serving echo over
// streamable HTTP on loopback.
type system struct {
	name    string
	url     string
	command func(work string) (*exec.Cmd, error)
	cmd     *exec.Cmd
	results map[int]*phase
	rss     string
}

func (s *system) result(sessions int) *phase {
	if s.results == nil {
		s.results = map[int]*phase{}
	}
	if s.results[sessions] == nil {
		s.results[sessions] = &phase{}
	}
	return s.results[sessions]
}

func (s *system) pid() int { return s.cmd.Process.Pid }

// start runs the system in a process group of its own (stop ends all of
// it) and waits until echo answers on its endpoint.
func (s *system) start(ctx context.Context, work string) error {
	cmd, err := s.command(work)
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(work, s.name+".log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(90 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		sess, err := newClient(s.url, 1).connect(cctx)
		cancel()
		if err == nil {
			err = echo(sess, "ready?")
			sess.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("not answering on %s after 90 s: %v\n%s", s.url, err, log)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// stop ends the system's process group: SIGTERM, then SIGKILL.
func (s *system) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	pg := -s.cmd.Process.Pid
	_ = syscall.Kill(pg, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(pg, syscall.SIGKILL)
		<-done
	}
	_ = syscall.Kill(pg, syscall.SIGKILL) // what the leader left behind
	s.cmd = nil
}

// freePort returns a loopback port nothing listens on now.
func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func everything(peers string) string {
	return filepath.Join(peers, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

func endpoint(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp" }

func direct(peers string) *system {
	port := freePort()
	return &system{name: "direct", url: endpoint(port), command: func(string) (*exec.Cmd, error) {
		cmd := exec.Command("node", everything(peers), "streamableHttp")
		cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
		return cmd, nil
	}}
}

// supergateway is stateful: stateless, it starts the server for every
// request (one call a second here). Stateful, it starts one per session.
func supergateway(peers string) *system {
	port := freePort()
	return &system{name: "supergateway", url: endpoint(port), command: func(string) (*exec.Cmd, error) {
		return exec.Command(filepath.Join(peers, "node_modules/.bin/supergateway"),
			"--stdio", "node "+everything(peers)+" stdio",
			"--outputTransport", "streamableHttp", "--stateful", "--port", strconv.Itoa(port), "--logLevel", "none"), nil
	}}
}

func mcpProxy(peers string) *system {
	port := freePort()
	return &system{name: "mcp-proxy", url: endpoint(port), command: func(string) (*exec.Cmd, error) {
		return exec.Command(filepath.Join(peers, "node_modules/.bin/mcp-proxy"),
			"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--server", "stream",
			"--", "node", everything(peers), "stdio"), nil
	}}
}

// plugkitSystem is the host with the sample's rules (config.hcl) over the
// bridged server, and a critical audit log fsynced on every batch.
func plugkitSystem(name, bin, peers string) *system {
	port := freePort()
	return &system{name: name, url: endpoint(port), command: func(work string) (*exec.Cmd, error) {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return nil, err
		}
		for _, p := range []string{"host", "plugins/mcp", "plugins/safety", "plugins/audit"} {
			if _, err := os.Stat(filepath.Join(abs, p)); err != nil {
				return nil, errors.New("no " + filepath.Join(abs, p) + ": run make build first")
			}
		}
		// The sample's rules as config.hcl has them (the command runs
		// from the repository's root, as bench/peers.sh starts it).
		safety, err := sample.PluginBlock("config.hcl", "safety", filepath.Join(abs, "plugins/safety"))
		if err != nil {
			return nil, err
		}
		cfg := fmt.Sprintf(plugkitConfig, filepath.Join(work, name+".sock"), port,
			abs, everything(peers), safety, abs, filepath.Join(work, name+"-audit.log"))
		path := filepath.Join(work, name+".hcl")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			return nil, err
		}
		return exec.Command(filepath.Join(abs, "host"), "run", "-c", path), nil
	}}
}

const plugkitConfig = `
host {
  admin_socket = %q
  log_level    = "warn"
  mcp          = "127.0.0.1:%d"
  policy {
    timeout     = true
    concurrency = 64
  }
}

plugin "everything" {
  path = "%s/plugins/mcp"
  config {
    command = ["node", %q, "stdio"]
    prefix  = ""
    tools {
      read_only = ["echo"]
    }
  }
}

# The sample's rules, from config.hcl.
%s
plugin "audit" {
  path     = "%s/plugins/audit"
  critical = true
  config {
    path  = %q
    fsync = "always"
  }
}
`
