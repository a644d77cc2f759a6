package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Guarded is a folder of the host's own that no sandbox may write, nor any
// folder above it: a plugin that could would replace what it holds (the
// admin socket and its pid file, the registry of running hosts) with its
// own.
type Guarded struct {
	Path string `json:"path"`
	// What says what the folder holds, for messages.
	What string `json:"what"`
}

// GuardError is a write path that reaches a guarded folder.
type GuardError struct {
	// Path is the write path as the policy has it; Resolved is where it
	// leads now, symbolic links followed.
	Path, Resolved string
	Guarded        Guarded
}

func (e *GuardError) Error() string {
	at := e.Path
	if e.Resolved != "" && e.Resolved != filepath.Clean(e.Path) {
		at += " (which now resolves to " + e.Resolved + ")"
	}
	return fmt.Sprintf("sandbox: the plugin may write %s, which reaches %s (%s): it could replace what is there with its own, so it is not started", at, e.Guarded.What, e.Guarded.Path)
}

// CheckWrite refuses write paths that are, or now resolve to, a guarded
// folder or a folder above one. It is run at every start, not only when the
// deployment is read: a folder the plugin may write can have been replaced
// by a symbolic link since (by another plugin that may write its parent).
func CheckWrite(write []string, guarded []Guarded) error {
	for _, w := range write {
		resolved, err := evalExisting(w)
		if err != nil {
			resolved = ""
		}
		for _, g := range guarded {
			if reaches(w, resolved, g) {
				return &GuardError{Path: w, Resolved: resolved, Guarded: g}
			}
		}
	}
	return nil
}

// reaches reports whether write path w, which now resolves to resolved
// ("" when unknown), reaches guarded folder g: g lies below it, or a link
// leads it into g. A path written inside g (the sample's run/audit) is the
// deployment's own choice, which host validate has seen.
func reaches(w, resolved string, g Guarded) bool {
	if Within(g.Path, w) || resolved != "" && Within(g.Path, resolved) {
		return true
	}
	if resolved == "" || inside(filepath.Clean(w), filepath.Clean(g.Path)) {
		return false
	}
	rg, err := filepath.EvalSymlinks(g.Path)
	return err == nil && inside(resolved, rg)
}

// Within reports whether path is dir or lies below it, as written or with
// symbolic links resolved.
func Within(path, dir string) bool {
	if inside(filepath.Clean(path), filepath.Clean(dir)) {
		return true
	}
	rp, err1 := evalExisting(path)
	rd, err2 := filepath.EvalSymlinks(dir)
	return err1 == nil && err2 == nil && inside(rp, rd)
}

func inside(p, d string) bool {
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// evalExisting resolves the symbolic links of the part of path that
// exists.
func evalExisting(path string) (string, error) {
	p := filepath.Clean(path)
	var rest []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", os.ErrNotExist
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// openChecked opens write path w (O_PATH) for the launcher and checks
// where the descriptor leads, not where the name pointed a moment before:
// the rule is then made on the descriptor (its /proc/self/fd name, which
// Landlock's open follows to the same file), so what is checked is what is
// granted, whatever is renamed or swapped for a link in between. It
// returns the name to grant and a function closing the descriptor; an
// empty name when w does not exist.
func openChecked(w string, guarded []Guarded) (name string, done func(), err error) {
	fd, err := unix.Open(w, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return "", func() {}, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("write path %s: %w", w, err)
	}
	done = func() { unix.Close(fd) }
	name = "/proc/self/fd/" + strconv.Itoa(fd)
	real, err := os.Readlink(name)
	if err != nil {
		done()
		return "", nil, fmt.Errorf("write path %s: %w", w, err)
	}
	for _, g := range guarded {
		if reaches(w, real, g) {
			done()
			return "", nil, &GuardError{Path: w, Resolved: real, Guarded: g}
		}
	}
	return name, done, nil
}
