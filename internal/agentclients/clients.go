// Package agentclients fetches the real agent CLIs the integration tests
// run -- Claude Code and Codex, at the versions pinned in versions.txt --
// from the npm registry, once, into a cache outside the repository.
//
// Both ship as a prebuilt binary in a per-platform npm package; only that
// binary is kept. The cache is $INTENTFS_AGENTS_CACHE, else
// $XDG_CACHE_HOME/intentfs-test/agents (~/.cache/intentfs-test/agents).
package agentclients

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

//go:embed versions.txt
var versionsFile string

// Client is one agent CLI the tests can fetch.
type Client struct {
	// Name is "claude" or "codex".
	Name string
	// Version is the pinned version.
	Version string
}

// maxBinary bounds a binary extracted from a package.
const maxBinary = 1 << 30

// Pinned returns the client name pins in versions.txt.
func Pinned(name string) (Client, error) {
	vs, err := ParseVersions(versionsFile)
	if err != nil {
		return Client{}, err
	}
	v, ok := vs[name]
	if !ok {
		return Client{}, fmt.Errorf("internal/agentclients/versions.txt pins no %q", name)
	}
	return Client{Name: name, Version: v}, nil
}

// ParseVersions reads "NAME VERSION" lines; # starts a comment.
func ParseVersions(text string) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("versions.txt line %d: want NAME VERSION, got %q", n, line)
		}
		if _, dup := out[f[0]]; dup {
			return nil, fmt.Errorf("versions.txt line %d: %s is pinned twice", n, f[0])
		}
		out[f[0]] = f[1]
	}
	return out, sc.Err()
}

// Package is the npm package spec holding the client's binary for this
// platform, and the binary's path inside the package's tarball.
func (c Client) Package() (spec, member string, err error) {
	arch, triple := "", ""
	switch runtime.GOARCH {
	case "amd64":
		arch, triple = "x64", "x86_64-unknown-linux-musl"
	case "arm64":
		arch, triple = "arm64", "aarch64-unknown-linux-musl"
	}
	if runtime.GOOS != "linux" || arch == "" {
		return "", "", fmt.Errorf("no %s package for %s/%s", c.Name, runtime.GOOS, runtime.GOARCH)
	}
	switch c.Name {
	case "claude":
		return "@anthropic-ai/claude-code-linux-" + arch + "@" + c.Version, "package/claude", nil
	case "codex":
		// Codex publishes each platform's binary as a version of
		// @openai/codex itself.
		return "@openai/codex@" + c.Version + "-linux-" + arch, "package/vendor/" + triple + "/bin/codex", nil
	}
	return "", "", fmt.Errorf("unknown client %q", c.Name)
}

// CacheDir is where fetched clients are kept.
func CacheDir() (string, error) {
	if d := os.Getenv("INTENTFS_AGENTS_CACHE"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the agent CLIs (set INTENTFS_AGENTS_CACHE): %w", err)
	}
	return filepath.Join(base, "intentfs-test", "agents"), nil
}

// Path is where the client's binary is (or will be) in the cache.
func (c Client) Path() (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, c.Name+"-"+c.Version, c.Name), nil
}

// Fetch returns the client's binary, downloading it with npm first if the
// cache does not hold it yet. A concurrent fetch of the same client is
// harmless: each extracts to its own file and renames it into place.
func (c Client) Fetch() (string, error) {
	path, err := c.Path()
	if err != nil {
		return "", err
	}
	if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() {
		return path, nil
	}
	spec, member, err := c.Package()
	if err != nil {
		return "", err
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("fetching %s needs npm (apt-get install npm): %w", spec, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("npm", "pack", "--silent", "--pack-destination", tmp, spec)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %w\n%s", spec, err, out)
	}
	tgz := filepath.Join(tmp, strings.TrimSpace(lastLine(string(out))))
	bin := filepath.Join(tmp, c.Name)
	if err := extract(tgz, member, bin); err != nil {
		return "", fmt.Errorf("%s from %s: %w", member, spec, err)
	}
	if err := os.Rename(bin, path); err != nil {
		return "", err
	}
	return path, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// extract copies one regular file of a gzipped tarball to dst, mode 0755.
func extract(tgz, member, dst string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return errors.New("not in the package")
		}
		if err != nil {
			return err
		}
		if h.Name != member || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > maxBinary {
			return fmt.Errorf("%d bytes, more than the %d allowed", h.Size, maxBinary)
		}
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, io.LimitReader(tr, maxBinary)); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}
}
