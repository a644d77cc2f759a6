package main

import (
	"context"
	"fmt"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	htmlhl "github.com/blevesearch/bleve/v2/search/highlight/highlighter/html"
	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// The fields of an indexed file.
const (
	fieldPath = "path"
	fieldBody = "body"
)

// Bounds of one build.
const (
	// maxFileBytes skips larger files: at that size a file is generated or
	// data rather than prose, and would cost memory for useless snippets.
	maxFileBytes = 4 << 20
	// A batch is written when it holds this many files or bytes, whichever
	// comes first, to bound the memory a build holds at once.
	batchFiles = 256
	batchBytes = 8 << 20
	// progressSteps is how many "indexed n/total files" lines a build of
	// at least progressMinFiles files logs; a smaller one logs only that
	// it is ready (it takes a moment: progress lines were noise at every
	// start of the sample).
	progressSteps    = 10
	progressMinFiles = 1000
)

// index is a bleve index over the files of one folder. bleve's index is safe
// for concurrent use, so the service's methods need no lock.
type index struct {
	bleve bleve.Index
	root  string // as configured

	// closeOnce guards Close: bleve's on-disk index panics when closed
	// twice, and a failed apply, a re-apply and Stop may each close it.
	closeOnce sync.Once
	closeErr  error
}

// file is one file to index.
type file struct {
	abs string
	rel string // relative to the root, with forward slashes: the document id
}

// build indexes the files of s.dir whose names end in one of s.extensions,
// logging progress. Hidden files and folders (".git") are skipped, and so are
// files that cannot be read, with a warning: one unreadable file should not
// take the whole index down. A root that cannot be read is an error.
func build(ctx context.Context, s settings, log hclog.Logger) (*index, error) {
	start := time.Now()
	files, err := listFiles(s, log)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		log.Warn(fmt.Sprintf("no files to index under %s", s.root), "extensions", s.extensions)
	}
	b, err := create(s.indexPath)
	if err != nil {
		return nil, err
	}
	x := &index{bleve: b, root: s.root}
	if err := x.fill(ctx, files, log); err != nil {
		_ = x.close()
		return nil, err
	}
	docs, err := b.DocCount()
	if err != nil {
		_ = x.close()
		return nil, fmt.Errorf("count documents: %w", err)
	}
	where := "in memory"
	if s.indexPath != "" {
		where = "at " + s.indexPath
	}
	log.Info(fmt.Sprintf("index of %s ready: %d documents %s", s.root, docs, where),
		"skipped", len(files)-int(docs), "took", time.Since(start).Round(time.Millisecond).String())
	return x, nil
}

// progressStep is every how many files a build of total files logs its
// progress, 0 for never.
func progressStep(total int) int {
	if total < progressMinFiles {
		return 0
	}
	return (total + progressSteps - 1) / progressSteps
}

// fill adds files in batches. Batches also end at each progress step, so the
// log shows real progress.
func (x *index) fill(ctx context.Context, files []file, log hclog.Logger) error {
	total := len(files)
	step := progressStep(total)
	batch := x.bleve.NewBatch()
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("indexing stopped after %d/%d files: %w", i, total, err)
		}
		if body, ok := readFile(f, log); ok {
			if err := batch.Index(f.rel, map[string]any{fieldPath: f.rel, fieldBody: body}); err != nil {
				return fmt.Errorf("index %s: %w", f.rel, err)
			}
		}
		done := i + 1
		atStep := step > 0 && (done%step == 0 || done == total)
		if !atStep && done < total && batch.Size() < batchFiles && batch.TotalDocsSize() < batchBytes {
			continue
		}
		if err := x.bleve.Batch(batch); err != nil {
			return fmt.Errorf("index files up to %s: %w", f.rel, err)
		}
		batch.Reset()
		if atStep {
			log.Info(fmt.Sprintf("indexed %d/%d files", done, total))
		}
	}
	return nil
}

// readFile returns the text of f, or false after logging why it is skipped.
// Invalid UTF-8 (a Latin-1 text file) is kept with the bad bytes replaced,
// rather than losing the whole file.
func readFile(f file, log hclog.Logger) (string, bool) {
	data, err := os.ReadFile(f.abs)
	if err != nil {
		log.Warn("skipping a file that cannot be read", "file", f.rel, "error", unwrapPath(err))
		return "", false
	}
	return strings.ToValidUTF8(string(data), "\uFFFD"), true
}

// listFiles walks s.dir in lexical order and returns the files to index.
func listFiles(s settings, log hclog.Logger) ([]file, error) {
	var files []file
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == s.dir {
				return fmt.Errorf("root %q: %w", s.root, unwrapPath(err))
			}
			log.Warn("skipping what cannot be read", "path", rel(s.dir, path), "error", unwrapPath(err))
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if path == s.dir {
			return nil
		}
		hidden := strings.HasPrefix(d.Name(), ".")
		if d.IsDir() {
			if hidden || path == s.indexPath {
				return fs.SkipDir
			}
			return nil
		}
		// Symbolic links are not followed: one could lead out of the root.
		if hidden || !d.Type().IsRegular() || !hasExtension(d.Name(), s.extensions) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			log.Warn("skipping a file that cannot be read", "file", rel(s.dir, path), "error", unwrapPath(err))
			return nil
		}
		if info.Size() > maxFileBytes {
			log.Warn("skipping a file too large to index", "file", rel(s.dir, path), "bytes", info.Size(), "max", maxFileBytes)
			return nil
		}
		files = append(files, file{abs: path, rel: rel(s.dir, path)})
		return nil
	})
	return files, err
}

func hasExtension(name string, extensions []string) bool {
	name = strings.ToLower(name)
	for _, e := range extensions {
		if strings.HasSuffix(name, e) {
			return true
		}
	}
	return false
}

func rel(root, path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(r)
}

// create makes an empty index: in memory when path is "", else at path,
// replacing the index an earlier run left there (Config.settings has checked
// that the folder is empty or holds an index). The on-disk index is always
// rebuilt because the files may have changed while the plugin was down.
func create(path string) (bleve.Index, error) {
	m := newMapping()
	if path == "" {
		b, err := bleve.NewMemOnly(m)
		if err != nil {
			return nil, fmt.Errorf("create the index in memory: %w", err)
		}
		return b, nil
	}
	if err := os.RemoveAll(path); err != nil {
		return nil, fmt.Errorf("index_path %q: remove the previous index: %w", path, err)
	}
	b, err := bleve.New(path, m)
	if err != nil {
		return nil, fmt.Errorf("index_path %q: create the index: %w", path, err)
	}
	return b, nil
}

// newMapping indexes a file's path and body as English text: stemming lets
// "guards" find "guard". Both fields are stored, with term vectors, because
// the highlighter cuts snippets from the stored text.
func newMapping() mapping.IndexMapping {
	m := bleve.NewIndexMapping()
	m.DefaultAnalyzer = en.AnalyzerName
	doc := bleve.NewDocumentStaticMapping()
	path := bleve.NewTextFieldMapping()
	doc.AddFieldMappingsAt(fieldPath, path)
	body := bleve.NewTextFieldMapping()
	body.DocValues = false // never sorted or faceted on: save the memory
	doc.AddFieldMappingsAt(fieldBody, body)
	m.DefaultMapping = doc
	return m
}

// search runs q (bleve's query string syntax) and returns up to limit hits.
// Equal scores are ordered by path so that the same query gives the same
// page every time.
func (x *index) search(ctx context.Context, q string, limit int) (SearchResult, error) {
	query := bleve.NewQueryStringQuery(q)
	// Parsing first tells a syntax error (the caller's to fix) apart from a
	// failure of the index.
	if _, err := query.Parse(); err != nil {
		return SearchResult{}, fmt.Errorf(`search: "q" %q is not a valid query (%v): quote it as a phrase or drop the special characters + - : ^ ~ ( ) "`, q, err)
	}
	req := bleve.NewSearchRequestOptions(query, limit, 0, false)
	req.SortBy([]string{"-_score", "_id"})
	req.Highlight = bleve.NewHighlightWithStyle(htmlhl.Name)
	req.Highlight.AddField(fieldBody)
	req.Highlight.AddField(fieldPath)
	// A span of its own inside the call's trace, when the host traces:
	// the query's time apart from the RPC around it. Not the query itself,
	// which is the caller's argument.
	ctx, span := otel.Tracer("plugkit/index").Start(ctx, "bleve search")
	defer span.End()
	res, err := x.bleve.SearchInContext(ctx, req)
	if err != nil {
		span.SetStatus(codes.Error, "search failed")
		return SearchResult{}, fmt.Errorf("search %q: %w", q, err)
	}
	span.SetAttributes(attribute.Int("index.hits", len(res.Hits)), attribute.Int64("index.total", int64(res.Total)))
	out := SearchResult{Hits: make([]Hit, 0, len(res.Hits)), Total: res.Total}
	for _, h := range res.Hits {
		out.Hits = append(out.Hits, Hit{Path: h.ID, Score: h.Score, Snippet: snippet(h.Fragments)})
	}
	return out, nil
}

// markers turns the html highlighter's marks into Markdown bold. The html
// highlighter is used, rather than a plain one, because it is the only
// built-in one that marks matches without terminal escapes; its output is
// unescaped afterwards (the text never contains a literal "<mark>" since
// the highlighter escapes the text around its marks).
var markers = strings.NewReplacer("<mark>", "**", "</mark>", "**")

// snippet is the body's best fragment, or the path's when only the path
// matched, on one line.
func snippet(fragments map[string][]string) string {
	frags := fragments[fieldBody]
	if len(frags) == 0 {
		frags = fragments[fieldPath]
	}
	if len(frags) == 0 {
		return ""
	}
	text := html.UnescapeString(markers.Replace(strings.Join(frags, " … ")))
	return trimCutWords(strings.Join(strings.Fields(text), " "))
}

// trimCutWords drops the word the fragmenter cut in two at either end (it
// cuts at a byte count and marks the cut with "…"), unless that word is a
// match.
func trimCutWords(s string) string {
	if rest, ok := strings.CutPrefix(s, "…"); ok {
		if i := strings.IndexByte(rest, ' '); i >= 0 && !strings.Contains(rest[:i], "**") {
			s = "…" + rest[i+1:]
		}
	}
	if rest, ok := strings.CutSuffix(s, "…"); ok {
		if i := strings.LastIndexByte(rest, ' '); i >= 0 && !strings.Contains(rest[i:], "**") {
			s = rest[:i] + "…"
		}
	}
	return s
}

func (x *index) stats() (Stats, error) {
	n, err := x.bleve.DocCount()
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	return Stats{Documents: n, Root: x.root}, nil
}

func (x *index) close() error {
	x.closeOnce.Do(func() {
		if err := x.bleve.Close(); err != nil {
			x.closeErr = fmt.Errorf("close the index: %w", err)
		}
	})
	return x.closeErr
}
