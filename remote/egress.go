package remote

import (
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/plugkit-go/plugkit/egress"
	"github.com/plugkit-go/plugkit/sandbox"
)

// egressRun is the forward proxy of one plugin process whose sandbox has
// an egress list: the only way out of its network namespace.
type egressRun struct {
	proxy *egress.Proxy
	// host is the host's end of the socket the launcher sends the
	// proxy's listener on (in the plugin's namespace); child is the
	// launcher's end, until the process has started.
	host, child *os.File
	// port is the proxy's loopback port on the host, without a namespace.
	port   uint16
	served chan struct{}
	calls  callsInFlight
}

// callsInFlight are the ids of the tool calls running in a plugin's
// process, which an egress event names: a connection asked for while one
// call runs happened during it; with several, any of them.
type callsInFlight struct {
	mu  sync.Mutex
	ids map[string]int
}

// track counts call id as running until the func it returns is called.
func (e *egressRun) track(id string) func() {
	if e == nil {
		return func() {}
	}
	c := &e.calls
	c.mu.Lock()
	if c.ids == nil {
		c.ids = map[string]int{}
	}
	c.ids[id]++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.ids[id]--; c.ids[id] <= 0 {
			delete(c.ids, id)
		}
	}
}

// current is the running calls' ids, sorted, comma-separated.
func (c *callsInFlight) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(slices.Sorted(maps.Keys(c.ids)), ",")
}

// startEgress makes the proxy of a plugin whose sandbox has an egress list
// (nil for any other): in the plugin's network namespace where the kernel
// gives one (the launcher makes the listener there), else on the host's
// loopback, where Landlock holds the plugin's TCP to its port.
func (m *Manager) startEgress(spec Spec, support sandbox.Support) (*egressRun, error) {
	if spec.Sandbox == nil || spec.Sandbox.Network.Mode != sandbox.NetworkEgress {
		return nil, nil
	}
	rules, err := egress.ParseList(spec.Sandbox.Network.Egress)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	e := &egressRun{served: make(chan struct{})}
	e.proxy = egress.New(egress.Config{Plugin: spec.Name, Rules: rules, Resolver: m.opts.EgressResolver, Record: m.egressRecord(spec.Name), Call: e.calls.current})
	var ln net.Listener
	if sandbox.EgressInNamespace(*spec.Sandbox, support) {
		if e.host, e.child, err = sandbox.EgressSocketPair(); err != nil {
			return nil, err
		}
	} else {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("egress proxy: %w", err)
		}
		e.port = uint16(ln.Addr().(*net.TCPAddr).Port)
	}
	go func(ln net.Listener) {
		defer close(e.served)
		if ln == nil {
			// Returns once the launcher has sent it, or has exited
			// without (its start failed, and says why).
			var err error
			if ln, err = sandbox.ReceiveListener(e.host); err != nil {
				m.log.Debug("egress proxy: no listener", "plugin", spec.Name, "error", err)
				return
			}
		}
		if err := e.proxy.Serve(ln); err != nil {
			m.log.Warn("egress proxy stopped", "plugin", spec.Name, "error", err)
		}
	}(ln)
	return e, nil
}

// env is what sends the plugin's HTTP clients to the proxy.
func (e *egressRun) env() []string {
	if e == nil {
		return nil
	}
	if e.port != 0 {
		return sandbox.ProxyEnv(int(e.port))
	}
	return sandbox.ProxyEnv(sandbox.ProxyPort)
}

// pass gives the process the launcher's end of the listener's socket, at
// ExtraFiles[inherit] (after the call lanes), where the launcher looks.
func (e *egressRun) pass(cmdFiles *[]*os.File, inherit int) error {
	if e == nil || e.child == nil {
		return nil
	}
	if len(*cmdFiles) != inherit {
		return fmt.Errorf("egress: the listener's socket must follow the %d inherited descriptors, not %d", inherit, len(*cmdFiles))
	}
	*cmdFiles = append(*cmdFiles, e.child)
	return nil
}

// started closes the host's copy of the launcher's end once the process
// has started (or failed to): the proxy's receive then ends with it.
func (e *egressRun) started() {
	if e == nil || e.child == nil {
		return
	}
	_ = e.child.Close()
	e.child = nil
}

// close stops the proxy, closing every connection through it.
func (e *egressRun) close() {
	if e == nil {
		return
	}
	e.started()
	_ = e.proxy.Close()
	<-e.served
}

// EgressStatus counts the connections a plugin asked its egress proxy for
// since it was loaded.
type EgressStatus struct {
	Allowed, Refused int64
	// LastRefused is the last refusal: "host:port: why".
	LastRefused string
}

type egressCounts struct {
	mu sync.Mutex
	st EgressStatus
}

func (c *egressCounts) add(ev egress.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Allowed {
		c.st.Allowed++
		return
	}
	c.st.Refused++
	c.st.LastRefused = net.JoinHostPort(ev.Host, fmt.Sprint(ev.Port)) + ": " + ev.Reason
}

func (c *egressCounts) status() EgressStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// egressRecord is the Record of plugin's proxies: counted for Status, then
// told to Options.OnEgress.
func (m *Manager) egressRecord(plugin string) func(egress.Event) {
	return func(ev egress.Event) {
		m.mu.Lock()
		mp := m.plugins[plugin]
		m.mu.Unlock()
		if mp != nil {
			mp.egress.add(ev)
		}
		if m.opts.OnEgress != nil {
			m.opts.OnEgress(ev)
		}
	}
}
