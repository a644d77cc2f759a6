package remote

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"

	"github.com/hashicorp/go-plugin"

	"github.com/plugkit-go/plugkit/internal/lineage"
	"github.com/plugkit-go/plugkit/sandbox"
)

// command returns the command that starts spec's binary: the binary itself,
// or, for a sandboxed plugin, the launcher that confines it first (package
// sandbox). socketDir is the folder its go-plugin socket goes in; done
// removes what command made for this process; cg is its cgroup, nil
// without one. inherit is how many descriptors the caller adds in
// cmd.ExtraFiles (the call lanes): the launcher closes every other one but
// stdin, stdout and stderr.
func (m *Manager) command(spec Spec, inherit int) (cmd *exec.Cmd, socketDir string, cg *sandbox.Cgroup, eg *egressRun, done func(), err error) {
	done = func() {}
	if spec.Sandbox == nil {
		return exec.Command(spec.Path, spec.Args...), m.socketDir, nil, nil, done, nil
	}
	launcher, err := m.launcher()
	if err != nil {
		return nil, "", nil, nil, done, err
	}
	pol := *spec.Sandbox
	socketDir = m.socketDir
	if pol.User != "" && os.Geteuid() == 0 {
		// The host's socket folder is the host user's alone: a plugin
		// running as another user gets a private one of its own.
		dir, err := os.MkdirTemp(m.base, socketDirPrefix+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			return nil, "", nil, nil, done, fmt.Errorf("plugin socket folder: %w", err)
		}
		done = func() { os.RemoveAll(dir) }
		if err := chownUser(dir, pol.User); err != nil {
			done()
			return nil, "", nil, nil, func() {}, err
		}
		socketDir = dir
	}
	// The plugin's mount namespace (where the kernel gives one) carries
	// the mark package lineage refuses, and hides the admin socket of
	// every host running now, this one's included.
	markDir, err := lineage.MarkDir()
	if err != nil {
		m.log.Warn("sandboxed plugin: no mount namespace", "plugin", spec.Name, "error", err)
	}
	support := sandbox.Detect(launcher)
	// A cgroup of its own, where the host can make one: the memory and
	// process limits then hold for all it does, and whatever it leaves
	// running is killed once it has ended.
	if support.Cgroup != "" {
		if cg, err = sandbox.NewCgroup(spec.Name, pol.Limits); err != nil {
			done()
			return nil, "", nil, nil, func() {}, err
		}
		removeDir := done
		done = func() {
			if err := cg.Close(); err != nil {
				m.log.Warn("sandboxed plugin: cgroup", "plugin", spec.Name, "error", err)
			}
			removeDir()
		}
	}
	// The egress proxy, for a sandbox with an egress list: the plugin's
	// only way out.
	if eg, err = m.startEgress(spec, support); err != nil {
		done()
		return nil, "", nil, nil, func() {}, err
	}
	if eg != nil {
		closeRest := done
		done = func() {
			eg.close()
			closeRest()
		}
	}
	var proxyPort uint16
	if eg != nil {
		proxyPort = eg.port
	}
	cmd, err = sandbox.Command(sandbox.Launch{
		Launcher:  launcher,
		Policy:    pol,
		Cgroup:    cg,
		Support:   support,
		Binary:    spec.Path,
		Args:      spec.Args,
		SocketDir: socketDir,
		Inherit:   inherit,
		Cover:     lineage.Sockets(),
		MarkDir:   markDir,

		HostProxyPort: proxyPort,
		Guarded:       m.opts.Guarded,
	})
	if err != nil {
		done()
		return nil, "", nil, nil, func() {}, err
	}
	return cmd, socketDir, cg, eg, done, nil
}

// launcher is the binary that serves sandbox.Subcommand.
func (m *Manager) launcher() (string, error) {
	if m.opts.Launcher != "" {
		return m.opts.Launcher, nil
	}
	return sandbox.Executable()
}

// sandboxEnv is the declared environment of a sandboxed plugin, in a
// stable order.
func sandboxEnv(p *sandbox.Policy) []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.Env))
	for k, v := range p.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// checkSum checks a pinned binary before a sandboxed launch: go-plugin's
// own check would hash the launcher, which is what it starts.
func checkSum(path string, sc *plugin.SecureConfig) error {
	ok, err := sc.Check(path)
	if err != nil {
		return err
	}
	if !ok {
		return plugin.ErrChecksumsDoNotMatch
	}
	return nil
}

func chownUser(dir, name string) error {
	uid, gid, err := sandbox.UserIDs(name)
	if err != nil {
		return err
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("plugin socket folder: %w", err)
	}
	return nil
}

// socketGroup is the group that may use the plugin's socket folder and the
// host's callback socket: the plugin user's own, when a root host runs the
// plugin as another user (go-plugin makes both group-writable for it);
// empty otherwise, leaving them the host user's alone.
func socketGroup(spec Spec) (string, error) {
	if spec.Sandbox == nil || spec.Sandbox.User == "" || os.Geteuid() != 0 {
		return "", nil
	}
	_, gid, err := sandbox.UserIDs(spec.Sandbox.User)
	if err != nil {
		return "", err
	}
	return strconv.Itoa(gid), nil
}

// Sandbox says what of the plugin's sandbox the host enforces.
func (m *Manager) sandbox(spec Spec) sandbox.Enforcement {
	if spec.Sandbox == nil {
		return sandbox.Off
	}
	launcher, err := m.launcher()
	if err != nil {
		return sandbox.Enforcement{State: sandbox.StatePartial, Gaps: []sandbox.Gap{{Part: sandbox.PartFilesystem, Why: err.Error()}}}
	}
	return spec.Sandbox.Enforcement(sandbox.Detect(launcher), os.Geteuid())
}
