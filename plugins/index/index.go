package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// The plugin's identity, and the service it provides.
const (
	pluginName    = "index"
	pluginVersion = "0.1.0"
	serviceName   = "index"
)

// Config is the plugin's configuration; the host checks the deployment's
// block against the schema derived from it.
type Config struct {
	Root       string   `json:"root" doc:"folder whose files are indexed; a relative path is resolved against the plugin's working folder (the deployment file's folder)"`
	Extensions []string `json:"extensions,omitempty" doc:"file name extensions to index, case-insensitive; default [\".md\", \".txt\"]"`
	IndexPath  string   `json:"index_path,omitempty" doc:"folder to keep the index in on disk, rebuilt at every apply; default: in memory"`
}

// defaultExtensions is used when the configuration lists none.
var defaultExtensions = []string{".md", ".txt"}

// Limits of the search method.
const (
	defaultLimit = 10
	maxLimit     = 100
)

// plugin holds the index of the current apply. The host may apply the same
// process again after undoing everything (a dependency came back), so the
// index of the previous apply is closed before a new one is built: an
// on-disk index cannot be rebuilt at a path that is still open.
type plugin struct {
	mu      sync.Mutex
	current *index
}

func newPlugin() *plugin { return &plugin{} }

func (pl *plugin) definition() sdk.Plugin[Config] {
	return sdk.Plugin[Config]{
		Name:     pluginName,
		Version:  pluginVersion,
		Provides: []string{serviceName},
		Apply:    pl.apply,
		Stop:     pl.stop,
	}
}

// apply builds the index, then provides the service. The previous apply's
// index is closed first, even if this apply fails: the host has already
// undone its service.
func (pl *plugin) apply(ctx context.Context, p *sdk.Context, cfg Config) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if err := pl.closeCurrent(); err != nil {
		p.Logger().Warn("closing the previous index", "error", err)
	}
	s, err := cfg.settings()
	if err != nil {
		return err
	}
	idx, err := build(ctx, s, p.Logger())
	if err != nil {
		return err
	}
	if _, err := p.Provide(ctx, idx.service()); err != nil {
		_ = idx.close()
		return err
	}
	pl.current = idx
	return nil
}

func (pl *plugin) stop(context.Context) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.closeCurrent()
}

func (pl *plugin) closeCurrent() error {
	if pl.current == nil {
		return nil
	}
	err := pl.current.close()
	pl.current = nil
	return err
}

// settings is a checked configuration, its paths made absolute.
type settings struct {
	root       string // as configured, reported by stats
	dir        string // root, absolute
	extensions []string
	indexPath  string // absolute; "" keeps the index in memory
}

// settings checks the configuration and reports every problem, each naming
// the field and the value at fault.
func (c Config) settings() (settings, error) {
	var errs []error
	s := settings{root: c.Root}

	if strings.TrimSpace(c.Root) == "" {
		errs = append(errs, errors.New(`config: root is required: set it to the folder whose files to index`))
	} else if dir, err := checkFolder(c.Root); err != nil {
		errs = append(errs, fmt.Errorf("config: root %q: %w", c.Root, err))
	} else {
		s.dir = dir
	}

	exts := c.Extensions
	if len(exts) == 0 {
		exts = defaultExtensions
	}
	for i, orig := range exts {
		e := strings.ToLower(strings.TrimSpace(orig))
		switch {
		case e == "" || e == ".":
			errs = append(errs, fmt.Errorf("config: extensions[%d] %q is empty: write it like \".md\"", i, orig))
			continue
		case strings.ContainsAny(e, `/\`):
			errs = append(errs, fmt.Errorf("config: extensions[%d] %q is not a file name extension: write it like \".md\"", i, orig))
			continue
		case !strings.HasPrefix(e, "."):
			e = "." + e // "md" is what the author meant by ".md"
		}
		if !slices.Contains(s.extensions, e) {
			s.extensions = append(s.extensions, e)
		}
	}

	if c.IndexPath != "" {
		p, err := checkIndexPath(c.IndexPath)
		if err != nil {
			errs = append(errs, fmt.Errorf("config: index_path %q: %w", c.IndexPath, err))
		}
		s.indexPath = p
	}
	if s.indexPath != "" && s.dir != "" && contains(s.indexPath, s.dir) {
		// Replacing the index would delete the files it indexes.
		errs = append(errs, fmt.Errorf("config: index_path %q: is root or a folder around it; name a folder of its own", c.IndexPath))
	}
	if len(errs) > 0 {
		return settings{}, errors.Join(errs...)
	}
	return s, nil
}

// checkFolder returns path made absolute, or why it cannot be indexed. A
// relative path is resolved against the working folder; the message shows
// the result, since the author may have expected another base.
func checkFolder(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	where := ""
	if !filepath.IsAbs(path) {
		where = " (looked for " + abs + ")"
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("no such folder%s", where)
	case err != nil:
		return "", fmt.Errorf("cannot read it%s: %w", where, unwrapPath(err))
	case !fi.IsDir():
		return "", fmt.Errorf("is a file, not a folder%s", where)
	}
	return abs, nil
}

// checkIndexPath returns path made absolute. The folder may be missing or
// empty, or hold an index from an earlier run (which build replaces); any
// other content is refused so that a typo cannot delete someone's files.
func checkIndexPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return abs, nil
	case err != nil:
		return "", fmt.Errorf("cannot use it as the index folder: %w", unwrapPath(err))
	case len(entries) == 0 || isIndex(abs):
		return abs, nil
	}
	return "", errors.New("is a folder that is not empty and holds no index; refusing to replace it")
}

// contains reports whether path is dir or a folder inside it.
func contains(dir, path string) bool {
	r, err := filepath.Rel(dir, path)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}

// isIndex reports whether dir holds a bleve index (it has the metadata file
// bleve writes first).
func isIndex(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "index_meta.json"))
	return err == nil && fi.Mode().IsRegular()
}

// unwrapPath drops the *fs.PathError wrapper, whose path the caller has
// already named.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// searchArgs are the arguments of the search method.
type searchArgs struct {
	// Q is the query, in bleve's query string syntax: words, "phrases",
	// +required, -excluded, prefix*.
	Q string `json:"q"`
	// Limit is the most hits to return: 1 to 100, 0 or absent means 10.
	Limit int `json:"limit,omitempty"`
}

// SearchResult is what the search method returns.
type SearchResult struct {
	// Hits are the best matches, best first.
	Hits []Hit `json:"hits"`
	// Total is how many files matched, of which Hits are the first.
	Total uint64 `json:"total"`
}

// Hit is one matching file.
type Hit struct {
	// Path is relative to root, with forward slashes.
	Path string `json:"path"`
	// Score ranks the hit; comparable only within one search.
	Score float64 `json:"score"`
	// Snippet is an excerpt around the match, matched terms wrapped in **.
	Snippet string `json:"snippet"`
}

// Stats is what the stats method returns.
type Stats struct {
	// Documents is how many files are indexed.
	Documents uint64 `json:"documents"`
	// Root is the folder as configured.
	Root string `json:"root"`
}

// service is the index as the service other plugins inject.
func (x *index) service() sdk.Service {
	return sdk.Service{
		Name: serviceName,
		Methods: map[string]sdk.Method{
			"search": x.searchMethod,
			"stats":  x.statsMethod,
		},
	}
}

// searchMethod takes {"q": string, "limit": int} and returns a SearchResult.
func (x *index) searchMethod(ctx context.Context, raw json.RawMessage) (any, error) {
	var args searchArgs
	if err := decodeStrict(raw, &args); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	q := strings.TrimSpace(args.Q)
	if q == "" {
		return nil, errors.New(`search: "q" is empty: give the words to search for`)
	}
	limit := args.Limit
	switch {
	case limit == 0:
		limit = defaultLimit
	case limit < 0 || limit > maxLimit:
		return nil, fmt.Errorf(`search: "limit" is %d; it must be between 1 and %d`, limit, maxLimit)
	}
	return x.search(ctx, q, limit)
}

// statsMethod takes no arguments and returns Stats.
func (x *index) statsMethod(ctx context.Context, _ json.RawMessage) (any, error) {
	return x.stats()
}

// decodeStrict decodes a method's arguments, refusing unknown fields: a
// misspelt "limt" would otherwise be silently ignored. Empty means {}.
func decodeStrict(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad arguments: %w", err)
	}
	return nil
}
