// Command files is a plugkit plugin that gives models and clients access to
// one folder and nothing else: it registers the tools read_file, list_dir,
// write_file and delete_file, whose paths are all relative to the configured
// root.
//
// Confinement is the point of the plugin, so it is left to the kernel rather
// than to string checks: the root is opened once with os.OpenRoot and every
// path is resolved by os.Root, which refuses "..", absolute paths and
// symbolic links that lead outside the root, at every step of the path and
// without a window between checking and opening.
//
// Example deployment block:
//
//	plugin "files" {
//	  path   = "bin/plugins/files"
//	  inject = ["tools"]
//	  config {
//	    root      = "workspace"   # required: the folder the tools may touch
//	    max_bytes = 1048576       # optional: the largest file read_file returns (default 1 MiB)
//	  }
//	}
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

const (
	pluginName    = "files"
	pluginVersion = "0.1.0"

	// defaultMaxBytes is read_file's limit when max_bytes is not set: large
	// enough for source files, small enough not to flood a model's context.
	defaultMaxBytes = 1 << 20
)

// Config is the plugin's config block. The host checks the block against the
// schema derived from this struct, so the two cannot disagree.
type Config struct {
	Root     string `json:"root" doc:"The folder the tools may read and change; every tool path is relative to it. A relative root is resolved against the plugin process's working folder, which is the host's."`
	MaxBytes int64  `json:"max_bytes,omitempty" doc:"The largest file read_file returns, in bytes; 0 or unset means 1 MiB."`
}

// newPlugin is the plugin's definition. Apply may run more than once on the
// same process (the host undoes everything and applies again when a
// dependency comes back), so the open root is kept in state and replaced.
func newPlugin() sdk.Plugin[Config] {
	var st state
	return sdk.Plugin[Config]{
		Name:    pluginName,
		Version: pluginVersion,
		Inject:  []string{"tools"},
		Apply: func(ctx context.Context, p *sdk.Context, cfg Config) error {
			dir, err := openFolder(cfg)
			if err != nil {
				return err
			}
			if err := st.replace(dir); err != nil {
				p.Logger().Warn("closing the previous root failed", "error", err)
			}
			for _, t := range dir.tools() {
				if _, err := p.RegisterTool(ctx, t); err != nil {
					return err // the host undoes the tools already registered
				}
			}
			return nil
		},
		Stop: func(context.Context) error { return st.replace(nil) },
	}
}

// state holds the root of the latest Apply.
type state struct {
	mu  sync.Mutex
	cur *folder
}

// replace makes dir current and closes the previous root. The previous
// Apply's tools were disposed by the host before it applied again, so only a
// call still in flight can see the closed root, and it fails cleanly.
func (s *state) replace(dir *folder) error {
	s.mu.Lock()
	old := s.cur
	s.cur = dir
	s.mu.Unlock()
	if old != nil {
		return old.root.Close()
	}
	return nil
}

// folder is the configured root, open, with the tools' settings.
type folder struct {
	root     *os.Root
	path     string // the configured root, as the config gave it
	maxBytes int64
}

// openFolder checks cfg and opens its root. Every problem is reported at once, on
// one line, which is how the host shows an apply error.
func openFolder(cfg Config) (*folder, error) {
	var problems []string
	if strings.TrimSpace(cfg.Root) == "" {
		problems = append(problems, "root is empty: set it to the folder the tools may use")
	}
	if cfg.MaxBytes < 0 {
		problems = append(problems, fmt.Sprintf("max_bytes is %d: it must be positive, or 0 for the default (%d)", cfg.MaxBytes, defaultMaxBytes))
	}
	if len(problems) > 0 {
		return nil, errors.New("config: " + strings.Join(problems, "; "))
	}
	info, err := os.Stat(cfg.Root)
	switch {
	case err != nil:
		return nil, fmt.Errorf("config: root %q: %w", cfg.Root, err)
	case !info.IsDir():
		return nil, fmt.Errorf("config: root %q is not a folder", cfg.Root)
	}
	root, err := os.OpenRoot(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("config: root %q: %w", cfg.Root, err)
	}
	maxBytes := cfg.MaxBytes
	if maxBytes == 0 {
		maxBytes = defaultMaxBytes
	}
	return &folder{root: root, path: cfg.Root, maxBytes: maxBytes}, nil
}

// replaced refuses a call when the folder the plugin opened is no longer
// the one at the configured path (deleted, or deleted and made again):
// every path would fail as "no such file" in the deleted folder, and a
// sandbox that allows the old folder does not allow the new one, so only
// a reload of the plugin opens it.
func (d *folder) replaced() error {
	opened, err := d.root.Stat(".")
	if err != nil {
		return fmt.Errorf("the root folder %q: %w", d.path, err)
	}
	now, err := os.Stat(d.path)
	if err == nil && os.SameFile(opened, now) {
		return nil
	}
	what := "was replaced by another folder"
	if err != nil {
		what = "was removed"
	}
	return fmt.Errorf("the root folder %q %s after the plugin opened it: reload the plugin (host reload NAME) to open the folder there now", d.path, what)
}

// checked runs execute when the root is still the configured folder.
func (d *folder) checked(execute func(context.Context, *sdk.Call) (any, error)) func(context.Context, *sdk.Call) (any, error) {
	return func(ctx context.Context, call *sdk.Call) (any, error) {
		if err := d.replaced(); err != nil {
			return nil, fmt.Errorf("%s: %w", call.Name, err)
		}
		return execute(ctx, call)
	}
}
