package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// The tools' parameter schemas. The host checks every call's arguments
// against them before any stage runs, so the handlers can rely on the shape;
// additionalProperties:false makes a misspelt argument an INVALID_ARGUMENTS
// error instead of a silently ignored one.
const (
	readFileParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "The file to read, relative to the root folder, e.g. \"docs/readme.md\"."}
  },
  "required": ["path"],
  "additionalProperties": false
}`
	listDirParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "default": ".", "description": "The folder to list, relative to the root folder; \".\" (the default) is the root folder itself."}
  },
  "additionalProperties": false
}`
	writeFileParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "The file to write, relative to the root folder, e.g. \"notes/todo.txt\". Missing parent folders are created."},
    "content": {"type": "string", "description": "The complete new content of the file, as UTF-8 text. An existing file is replaced, not appended to."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`
	deleteFileParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "The file to delete, relative to the root folder. Folders cannot be deleted."}
  },
  "required": ["path"],
  "additionalProperties": false
}`
)

// tools are the plugin's tools, bound to this root.
func (d *folder) tools() []sdk.Tool {
	return []sdk.Tool{
		{
			Name: "read_file",
			Description: fmt.Sprintf("Reads a UTF-8 text file inside the root folder and returns {path, content, size}. "+
				"Paths are relative to the root folder; they cannot leave it. Files over %d bytes and binary files are refused. "+
				"Use list_dir to find files.", d.maxBytes),
			Parameters: readFileParams,
			ReadOnly:   true,
			Idempotent: true,
			Execute:    d.checked(d.readFile),
		},
		{
			Name: "list_dir",
			Description: "Lists a folder inside the root folder and returns {path, entries}, each entry {name, type, size} " +
				"sorted by name, where type is file, dir, symlink or other, and size (in bytes) is given for files only. " +
				"Paths are relative to the root folder; path defaults to \".\", the root folder itself.",
			Parameters: listDirParams,
			ReadOnly:   true,
			Idempotent: true,
			Execute:    d.checked(d.listDir),
		},
		{
			Name: "write_file",
			Description: "Writes UTF-8 text to a file inside the root folder, replacing the whole file if it exists and " +
				"creating it and any missing parent folders if not. Returns {path, size, created}. " +
				"Paths are relative to the root folder; they cannot leave it.",
			Parameters:  writeFileParams,
			Destructive: true,
			// Writing the same content twice leaves the same file, so a retry
			// is safe.
			Idempotent: true,
			Execute:    d.checked(d.writeFile),
		},
		{
			Name: "delete_file",
			Description: "Deletes one file (or symbolic link) inside the root folder; folders are refused. Returns {path, deleted}. " +
				"Paths are relative to the root folder; they cannot leave it.",
			Parameters:  deleteFileParams,
			Destructive: true,
			// Not idempotent: a repeated call fails with "no such file", so a
			// retry policy must not repeat it.
			Execute: d.checked(d.deleteFile),
		},
	}
}

// pathArgs are the arguments every tool has.
type pathArgs struct {
	Path string `json:"path"`
}

type readResult struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Size    int    `json:"size"`
}

func (d *folder) readFile(ctx context.Context, call *sdk.Call) (any, error) {
	var args pathArgs
	if err := bind(ctx, call, &args); err != nil {
		return nil, err
	}
	// Stat before opening: opening a named pipe for reading would block until
	// someone writes to it, and no context can interrupt an open.
	info, err := d.root.Stat(args.Path)
	if err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	if err := d.checkReadable(call.Name, args.Path, info); err != nil {
		return nil, err
	}
	f, err := d.root.Open(args.Path)
	if err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	defer f.Close()
	// Check again on what was opened, in case the path was replaced in
	// between; and read at most one byte over the limit, in case the file
	// grew since.
	if info, err = f.Stat(); err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	if err := d.checkReadable(call.Name, args.Path, info); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, d.maxBytes+1))
	if err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	if int64(len(data)) > d.maxBytes {
		return nil, fmt.Errorf("%s %q: the file is over the %d-byte limit (max_bytes)", call.Name, args.Path, d.maxBytes)
	}
	// JSON strings hold text: encoding/json would silently replace invalid
	// bytes, handing the caller content that is not the file's.
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s %q: the file is not UTF-8 text (%d bytes); only text files can be read", call.Name, args.Path, len(data))
	}
	return readResult{Path: args.Path, Content: string(data), Size: len(data)}, nil
}

// checkReadable refuses what read_file cannot return: folders, special
// files and files over the limit.
func (d *folder) checkReadable(tool, p string, info fs.FileInfo) error {
	switch {
	case info.IsDir():
		return fmt.Errorf("%s %q: this is a folder, not a file: use list_dir", tool, p)
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s %q: not a regular file (%s)", tool, p, info.Mode().Type())
	case info.Size() > d.maxBytes:
		return fmt.Errorf("%s %q: the file is %d bytes, over the %d-byte limit (max_bytes)", tool, p, info.Size(), d.maxBytes)
	}
	return nil
}

type listResult struct {
	Path    string  `json:"path"`
	Entries []entry `json:"entries"`
}

type entry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Size is set for files only: a folder's size says nothing useful.
	Size *int64 `json:"size,omitempty"`
}

func (d *folder) listDir(ctx context.Context, call *sdk.Call) (any, error) {
	var args pathArgs
	if err := bind(ctx, call, &args); err != nil {
		return nil, err
	}
	if args.Path == "" {
		args.Path = "."
	}
	info, err := d.root.Stat(args.Path)
	if err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s %q: not a folder: use read_file for files", call.Name, args.Path)
	}
	f, err := d.root.Open(args.Path)
	if err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := listResult{Path: args.Path, Entries: make([]entry, 0, len(des))}
	for _, de := range des {
		e := entry{Name: de.Name(), Type: entryType(de.Type())}
		if de.Type().IsRegular() {
			if info, err := de.Info(); err == nil {
				size := info.Size()
				e.Size = &size
			} else if errors.Is(err, fs.ErrNotExist) {
				continue // deleted while listing
			}
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "dir"
	case m.IsRegular():
		return "file"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type writeResult struct {
	Path    string `json:"path"`
	Size    int    `json:"size"`
	Created bool   `json:"created"`
}

func (d *folder) writeFile(ctx context.Context, call *sdk.Call) (any, error) {
	var args writeArgs
	if err := bind(ctx, call, &args); err != nil {
		return nil, err
	}
	// Refuse folders and special files before opening: opening a named pipe
	// for writing would block until someone reads it.
	switch info, err := d.root.Stat(args.Path); {
	case err == nil && info.IsDir():
		return nil, fmt.Errorf("%s %q: this is a folder, not a file", call.Name, args.Path)
	case err == nil && !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s %q: not a regular file (%s)", call.Name, args.Path, info.Mode().Type())
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, pathError(call.Name, args.Path, err)
	}
	if dir := path.Dir(args.Path); dir != "." {
		// os.Root resolves every component itself, so a parent written
		// with ".." or through a symbolic link out of the root is refused
		// here too.
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return nil, pathError(call.Name, args.Path, err)
		}
	}
	// O_EXCL first, to tell a new file from a replaced one without a race.
	created := true
	f, err := d.root.OpenFile(args.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		created = false
		f, err = d.root.OpenFile(args.Path, os.O_WRONLY|os.O_TRUNC, 0)
	}
	if err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	_, err = io.WriteString(f, args.Content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	return writeResult{Path: args.Path, Size: len(args.Content), Created: created}, nil
}

type deleteResult struct {
	Path    string `json:"path"`
	Deleted bool   `json:"deleted"`
}

func (d *folder) deleteFile(ctx context.Context, call *sdk.Call) (any, error) {
	var args pathArgs
	if err := bind(ctx, call, &args); err != nil {
		return nil, err
	}
	// Lstat, not Stat: a symbolic link is deleted itself, never its target.
	info, err := d.root.Lstat(args.Path)
	if err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%s %q: this is a folder; delete_file deletes files only", call.Name, args.Path)
	}
	if err := d.root.Remove(args.Path); err != nil {
		return nil, pathError(call.Name, args.Path, err)
	}
	return deleteResult{Path: args.Path, Deleted: true}, nil
}

// bind decodes the call's arguments, after checking the call is still
// wanted.
func bind(ctx context.Context, call *sdk.Call, v any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", call.Name, err)
	}
	return call.Bind(v)
}

// pathError says what failed and for which path, as the caller wrote it.
// os.Root's errors name its internal operation ("openat") and say "path
// escapes from parent", which means little to a model; they are reworded.
func pathError(tool, p string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var msg string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		msg = "no such file or folder"
	case errors.Is(err, fs.ErrPermission):
		msg = "permission denied"
	case strings.Contains(err.Error(), "escapes"):
		// os.Root has no exported error for this; its message is stable.
		// Matching it only changes the wording: the refusal is os.Root's.
		msg = `the path leads outside the root folder (through "..", an absolute path or a symbolic link): paths must stay inside it`
	default:
		msg = err.Error()
	}
	return fmt.Errorf("%s %q: %s", tool, p, msg)
}
