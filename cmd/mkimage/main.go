// Command mkimage builds the host's container image with no base image
// from a registry: the host and every plugin built static (CGO_ENABLED=0),
// the sample deployment (config.hcl, corpus/, sandbox.example/ as its
// working folder) under /plugkit, run by the entrypoint as a non-root user.
// `make image` runs it from the repository's root.
//
//	go run ./cmd/mkimage [-o bin/plugkit-image.tar] [-tag plugkit:0.1.0]
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/plugkit-go/plugkit/internal/ociimage"
)

// The image's layout, which packaging/kubernetes relies on.
const (
	root   = "plugkit" // everything lives under /plugkit
	userID = 65532     // the non-root user the manifests run as
	tag    = "plugkit:0.1.0"
)

func main() {
	out := flag.String("o", filepath.Join("bin", "plugkit-image.tar"), "the image tarball to write")
	ref := flag.String("tag", tag, "the tag the tarball carries")
	flag.Parse()
	if err := build(".", *out, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out, "("+*ref+"); load it with `podman load -i "+*out+"` or `docker load -i "+*out+"`")
}

// build compiles the binaries of the repository at repo into a temporary
// folder and writes the image to out.
func build(repo, out, ref string) error {
	bins, err := os.MkdirTemp("", "plugkit-image-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bins)
	plugins, err := pluginPackages(repo)
	if err != nil {
		return err
	}
	if err := goBuild(repo, filepath.Join(bins, "host"), "./cmd/host"); err != nil {
		return err
	}
	entries := []ociimage.Entry{
		dir("tmp", 0o777|os.ModeSticky, 0),
		dir("etc", 0o755, 0),
		file("etc/passwd", fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nplugkit:x:%d:%d:plugkit:/%s:/sbin/nologin\n", userID, userID, root)),
		file("etc/group", fmt.Sprintf("root:x:0:\nplugkit:x:%d:\n", userID)),
		dir(root, 0o755, 0),
		dir(root+"/bin", 0o755, 0),
		dir(root+"/bin/plugins", 0o755, 0),
		{Path: root + "/bin/host", Source: filepath.Join(bins, "host"), Mode: 0o755},
		{Path: root + "/config.hcl", Source: filepath.Join(repo, "config.hcl"), Mode: 0o644},
		// The sample's working folders, the user's own: the admin socket,
		// the audit log and the files plugin's sandbox.
		dir(root+"/run", 0o700, userID),
		dir(root+"/run/audit", 0o700, userID),
	}
	for _, p := range plugins {
		bin := filepath.Join(bins, "plugins", p)
		if err := goBuild(repo, bin, "./plugins/"+p); err != nil {
			return err
		}
		entries = append(entries, ociimage.Entry{Path: root + "/bin/plugins/" + p, Source: bin, Mode: 0o755})
	}
	corpus, err := tree(filepath.Join(repo, "corpus"), root+"/corpus", 0)
	if err != nil {
		return err
	}
	sandbox, err := tree(filepath.Join(repo, "sandbox.example"), root+"/run/sandbox", userID)
	if err != nil {
		return err
	}
	entries = append(append(entries, corpus...), sandbox...)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return ociimage.Write(out, ociimage.Image{
		Ref:        ref,
		Arch:       runtime.GOARCH,
		Entrypoint: []string{"/" + root + "/bin/host"},
		Cmd:        []string{"run", "-c", "/" + root + "/config.hcl"},
		WorkingDir: "/" + root,
		User:       fmt.Sprintf("%d:%d", userID, userID),
		Env:        []string{"HOME=/" + root + "/run"},
		Entries:    entries,
	})
}

// pluginPackages names the main packages directly under plugins/, as the
// Makefile's plugins target builds them.
func pluginPackages(repo string) ([]string, error) {
	cmd := exec.Command("go", "list", "-f", "{{.Name}} {{.ImportPath}}", "./plugins/...")
	cmd.Dir = repo
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./plugins/... in %s: %w", repo, err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, path, _ := strings.Cut(l, " ")
		rest, ok := strings.CutPrefix(path[strings.Index(path, "/plugins/")+1:], "plugins/")
		if pkg == "main" && ok && !strings.Contains(rest, "/") {
			names = append(names, rest)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no plugin main packages under %s/plugins", repo)
	}
	return names, nil
}

// goBuild builds pkg static, for Linux on this architecture.
func goBuild(repo, out, pkg string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// tree lists the files and folders under src as entries under dst.
func tree(src, dst string, uid int) ([]ociimage.Entry, error) {
	var out []ociimage.Entry
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		at := dst
		if rel != "." {
			at = dst + "/" + filepath.ToSlash(rel)
		}
		switch {
		case d.IsDir():
			out = append(out, dir(at, 0o755, uid))
		case d.Type().IsRegular():
			out = append(out, ociimage.Entry{Path: at, Source: p, Mode: 0o644, UID: uid, GID: uid})
		default:
			return fmt.Errorf("%s: neither a file nor a folder", p)
		}
		return nil
	})
	return out, err
}

func dir(p string, mode os.FileMode, uid int) ociimage.Entry {
	return ociimage.Entry{Path: p, Dir: true, Mode: mode, UID: uid, GID: uid}
}

func file(p, content string) ociimage.Entry {
	return ociimage.Entry{Path: p, Data: []byte(content), Mode: 0o644}
}
