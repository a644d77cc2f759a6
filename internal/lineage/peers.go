package lineage

import (
	"errors"
	"fmt"
	"sync"

	"github.com/plugkit-go/plugkit/internal/peeruid"
)

// Peers vets the clients of a loopback listener: which processes hold a
// connection's client socket, and whether any of them is a plugin (Check).
// Finding the holders by reading the descriptors of every process of the
// user costs milliseconds of CPU per connection on a busy machine, and a
// client opens many: Peers remembers the processes it cleared (by pid and
// start time, so that a reused pid is not taken for them) and looks for
// the socket among them and their descendants first, reading every
// process's descriptors only when none of them holds it. Verdicts are
// remembered per process the same way, so Check runs once per process.
//
// A socket found held by a cleared client is taken as that client's and
// its descendants' only: another process would hold it only if one of
// them passed it on (over a Unix socket, or to a child that then left
// its parent), which is a client choosing to act for another process, as
// a proxy it runs would (see docs/front-end-limits.md).
//
// The zero value is ready to use; it is safe for concurrent use.
type Peers struct {
	mu       sync.Mutex
	verdicts map[proc]error // nil (no plugin) or a *PluginError
	recent   []proc         // cleared holders, the latest first
}

// proc names a process across pid reuse.
type proc struct {
	pid   int
	start uint64
}

const (
	// maxRecent is how many cleared clients are looked among first: a
	// machine's MCP clients of one user are few.
	maxRecent = 8
	// maxVerdicts bounds the verdicts remembered; past it they are
	// forgotten all at once and found again.
	maxVerdicts = 4096
)

// ErrUnknownProcess wraps the error of a socket whose holders cannot be
// found: it is refused, since a client that cannot be found cannot be
// told from a plugin.
var ErrUnknownProcess = errors.New("cannot tell which process connected")

// Vet returns nil when no holder of s is a plugin of a host or descends
// from one, a *PluginError when one is, and another error when it cannot
// tell (no holder found, or one whose process cannot be read): the caller
// refuses then too. Every holder counts: a socket inherited by a plugin is
// the plugin's too.
func (p *Peers) Vet(s peeruid.Socket) error {
	holders := s.HeldAmong(p.recentPIDs())
	if len(holders) == 0 {
		var err error
		if holders, err = s.Processes(); err != nil {
			return fmt.Errorf("%w (%v)", ErrUnknownProcess, err)
		}
	}
	cleared := make([]proc, 0, len(holders))
	for _, pid := range holders {
		pr, err := p.check(pid)
		if err != nil {
			return err
		}
		cleared = append(cleared, pr)
	}
	p.remember(cleared)
	return nil
}

// check is Check remembered per process.
func (p *Peers) check(pid int) (proc, error) {
	st, err := readStat(pid)
	if err != nil {
		return proc{}, fmt.Errorf("cannot tell whether process %d is a plugin (%v)", pid, err)
	}
	pr := proc{pid: pid, start: st.start}
	p.mu.Lock()
	verdict, ok := p.verdicts[pr]
	p.mu.Unlock()
	if ok {
		return pr, verdict
	}
	err = Check(pid)
	var pe *PluginError
	if err != nil && !errors.As(err, &pe) {
		return pr, fmt.Errorf("cannot tell whether process %d is a plugin (%v)", pid, err)
	}
	// The verdict is kept only if the pid still names the process it was
	// read of.
	if again, serr := readStat(pid); serr == nil && again.start == pr.start {
		p.mu.Lock()
		if p.verdicts == nil || len(p.verdicts) >= maxVerdicts {
			p.verdicts = make(map[proc]error)
		}
		p.verdicts[pr] = err
		p.mu.Unlock()
	}
	return pr, err
}

// recentPIDs returns the pids of the cleared clients still running as the
// processes they were; the others are skipped (remember drops them once
// newer ones come).
func (p *Peers) recentPIDs() []int {
	p.mu.Lock()
	recent := append([]proc(nil), p.recent...)
	p.mu.Unlock()
	pids := make([]int, 0, len(recent))
	for _, pr := range recent {
		if st, err := readStat(pr.pid); err == nil && st.start == pr.start {
			pids = append(pids, pr.pid)
		}
	}
	return pids
}

// remember puts cleared holders first among the recent ones.
func (p *Peers) remember(cleared []proc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := make([]proc, 0, maxRecent)
	next = append(next, cleared...)
	for _, pr := range p.recent {
		if len(next) >= maxRecent {
			break
		}
		dup := false
		for _, c := range cleared {
			dup = dup || c == pr
		}
		if !dup {
			next = append(next, pr)
		}
	}
	if len(next) > maxRecent {
		next = next[:maxRecent]
	}
	p.recent = next
}
