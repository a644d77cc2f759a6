// Package ociimage assembles the host's container image from files on
// disk, with no base image: one layer holding what the caller lists, a
// config naming the entrypoint, written as a tarball that `docker load` and
// `podman load` read.
package ociimage

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Entry is one file or folder of the image.
type Entry struct {
	Path     string      // inside the image, without a leading slash: "app/bin/host"
	Source   string      // a file on disk to copy; "" for a folder or Data
	Data     []byte      // the content of a small file made by the builder
	Dir      bool        // a folder
	Mode     os.FileMode // permission bits
	UID, GID int
}

// Image is what Write builds.
type Image struct {
	Ref        string   // the tag the tarball carries: "plugkit:dev"
	Arch       string   // GOARCH of the binaries
	Entrypoint []string // absolute
	Cmd        []string // the entrypoint's default arguments
	WorkingDir string
	User       string // "uid:gid"
	Env        []string
	Entries    []Entry
}

// Write builds the image's layer in a temporary file beside out, then writes
// the image tarball to out.
func Write(out string, im Image) error {
	ref, err := name.NewTag(im.Ref)
	if err != nil {
		return fmt.Errorf("image tag %q: %w", im.Ref, err)
	}
	tmp, err := os.CreateTemp(path.Dir(out), ".layer-*.tar")
	if err != nil {
		return fmt.Errorf("the image's layer: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := writeLayer(tmp, im.Entries); err != nil {
		tmp.Close()
		return fmt.Errorf("the image's layer %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromFile(tmp.Name())
	if err != nil {
		return fmt.Errorf("the image's layer %s: %w", tmp.Name(), err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = im.Arch
	cf.Config = v1.Config{
		Entrypoint: im.Entrypoint,
		Cmd:        im.Cmd,
		WorkingDir: im.WorkingDir,
		User:       im.User,
		Env:        im.Env,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return fmt.Errorf("writing the image %s: %w", out, err)
	}
	return nil
}

// writeLayer writes entries as a tar, sorted by path, every time stamp zero,
// so that the same files make the same layer.
func writeLayer(w io.Writer, entries []Entry) error {
	sorted := append([]Entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	tw := tar.NewWriter(w)
	for _, e := range sorted {
		p := strings.TrimPrefix(e.Path, "/")
		h := &tar.Header{Name: p, Mode: int64(e.Mode.Perm()), Uid: e.UID, Gid: e.GID, Format: tar.FormatPAX}
		if e.Mode&os.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		switch {
		case e.Dir:
			h.Typeflag = tar.TypeDir
			h.Name = p + "/"
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
		case e.Source == "":
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.Data))
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := tw.Write(e.Data); err != nil {
				return err
			}
		default:
			if err := copyFile(tw, h, e.Source); err != nil {
				return fmt.Errorf("%s: %w", e.Source, err)
			}
		}
	}
	return tw.Close()
}

func copyFile(tw *tar.Writer, h *tar.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h.Typeflag = tar.TypeReg
	h.Size = st.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
