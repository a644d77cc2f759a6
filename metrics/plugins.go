package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/remote"
)

// pluginCollector reads each plugin's status, and its process's /proc
// entries, at scrape time.
type pluginCollector struct {
	status func() []remote.Status

	state, restarts, rss, cpu, problem, started *prometheus.Desc
	queued, resent, dropped, startTook          *prometheus.Desc
	registered, oomKills, cgroupMemory          *prometheus.Desc
}

// states are the kernel states a plugin can be in, each a series of
// plugkit_plugin_state, so that a plugin's state is one series at 1.
var states = []kernel.State{kernel.Pending, kernel.Loading, kernel.Active, kernel.Unloading, kernel.Failed, kernel.Disposed}

func newPluginCollector(status func() []remote.Status) *pluginCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("plugkit_plugin_"+name, help, append([]string{"plugin"}, labels...), nil)
	}
	return &pluginCollector{
		status:       status,
		state:        d("state", "The plugin's state: 1 for the state it is in, 0 for the others.", "state"),
		restarts:     d("restarts_total", "Times the plugin's process was started again after it died."),
		rss:          d("resident_memory_bytes", "Resident memory of the plugin's current process."),
		cpu:          d("cpu_seconds_total", "CPU time (user and system) of the plugin's current process."),
		problem:      d("problem", "1 while the plugin's process reports a problem that keeps it from doing its job (see host status), else 0."),
		started:      d("start_time_seconds", "When the plugin's current process started, in seconds since the Unix epoch."),
		startTook:    d("start_duration_seconds", "How long the plugin's current process took from spawn to a connected client (the go-plugin handshake; its apply step not included)."),
		queued:       d("results_queued", "A critical plugin's results waiting for a process to acknowledge them."),
		resent:       d("results_resent_total", "A critical plugin's results sent again because a delivery was not acknowledged."),
		dropped:      d("results_dropped_total", "A critical plugin's results dropped because its queue was full."),
		registered:   d("tool_registrations_total", "Tools the plugin registered since it was loaded, each registration once: a bridged server's change of one tool adds one, a restart adds them all again."),
		oomKills:     d("oom_kills_total", "Processes of the plugin the kernel killed at its sandbox's memory limit (its cgroup's)."),
		cgroupMemory: d("cgroup_memory_bytes", "Memory charged to the cgroup of the plugin's current process: what it started, shared memory and page cache included. Only for a sandboxed plugin the host gave a cgroup."),
	}
}

func (c *pluginCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.restarts, c.rss, c.cpu, c.problem, c.started, c.queued, c.resent, c.dropped, c.startTook, c.registered, c.oomKills, c.cgroupMemory} {
		ch <- d
	}
}

func (c *pluginCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.status() {
		for _, s := range states {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, st.Name, s.String())
		}
		ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(st.Restarts), st.Name)
		ch <- prometheus.MustNewConstMetric(c.registered, prometheus.CounterValue, float64(st.Registered), st.Name)
		ch <- prometheus.MustNewConstMetric(c.oomKills, prometheus.CounterValue, float64(st.OOMKills), st.Name)
		problem := 0.0
		if st.Problem != "" {
			problem = 1
		}
		ch <- prometheus.MustNewConstMetric(c.problem, prometheus.GaugeValue, problem, st.Name)
		if st.Critical {
			ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(st.Queued), st.Name)
			ch <- prometheus.MustNewConstMetric(c.resent, prometheus.CounterValue, float64(st.Resent), st.Name)
			ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(st.Dropped), st.Name)
		}
		if st.PID == 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.started, prometheus.GaugeValue, float64(st.Started.UnixNano())/1e9, st.Name)
		ch <- prometheus.MustNewConstMetric(c.startTook, prometheus.GaugeValue, st.StartTook.Seconds(), st.Name)
		if st.CgroupMemory > 0 {
			ch <- prometheus.MustNewConstMetric(c.cgroupMemory, prometheus.GaugeValue, float64(st.CgroupMemory), st.Name)
		}
		p, err := procfs.NewProc(st.PID)
		if err != nil {
			continue // it ended since the status was read
		}
		if stat, err := p.Stat(); err == nil {
			ch <- prometheus.MustNewConstMetric(c.rss, prometheus.GaugeValue, float64(stat.ResidentMemory()), st.Name)
			ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.CounterValue, stat.CPUTime(), st.Name)
		}
	}
}
