package host

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce lets a binary finish being written (a copy is several
// writes, a build a create then writes) before the plugin is reloaded.
const watchDebounce = 300 * time.Millisecond

// watchBinaries reloads each plugin whose block says watch = true when its
// binary changes, until ctx ends. A pinned plugin whose new binary does not
// match its checksum fails to start and says so.
func (h *Host) watchBinaries(ctx context.Context) error {
	paths := map[string]string{} // binary → plugin
	for _, p := range h.deployment().Plugins {
		if p.Watch {
			paths[filepath.Clean(p.Path)] = p.Name
		}
	}
	if len(paths) == 0 {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	dirs := map[string]bool{}
	for path := range paths {
		// Watch the folder: a binary replaced by rename is a new file.
		if dir := filepath.Dir(path); !dirs[dir] {
			dirs[dir] = true
			if err := w.Add(dir); err != nil {
				w.Close()
				return err
			}
		}
	}
	h.watchers.Add(1)
	go func() {
		defer h.watchers.Done()
		defer w.Close()
		pending := map[string]*time.Timer{}
		fired := make(chan string)
		defer func() {
			for _, t := range pending {
				t.Stop()
			}
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				name, watched := paths[filepath.Clean(ev.Name)]
				if !watched || !ev.Has(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Chmod) {
					continue
				}
				if t := pending[name]; t != nil {
					t.Stop()
				}
				pending[name] = time.AfterFunc(watchDebounce, func() {
					select {
					case fired <- name:
					case <-ctx.Done():
					}
				})
			case name := <-fired:
				delete(pending, name)
				h.log.Info("plugin binary changed; reloading", "plugin", name)
				if err := h.Reload(ctx, name); err != nil {
					h.log.Error("reload after binary change", "plugin", name, "error", err)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				h.log.Warn("watching plugin binaries", "error", err)
			}
		}
	}()
	return nil
}
