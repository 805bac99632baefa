package policyedit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentfs/intentfs/internal/safeio"
	"github.com/intentfs/intentfs/policy"
)

// exampleIntents is what `intentfs init` writes: a commented policy with
// one PENDING intent.
const exampleIntents = `# intentfs policy: the units of work an agent may carry out in this workspace.
#
# Exactly one intent is active at a time (intentfs select ID, or write the
# id to .intentfs/active inside the mount). While it is IN_PROGRESS, the
# agent may change only paths that match its owned_scope; every other change
# through the mount fails with "Permission denied" and is recorded.
#
# Fields:
#   id                  required, like INT-001 (capital letters, dash, 3+ digits)
#   name                required, 3-200 characters
#   status              required: PENDING, IN_PROGRESS, BLOCKED, COMPLETE or ARCHIVED
#                       (only IN_PROGRESS allows changes)
#   owned_scope         required, globs relative to the workspace root:
#                       "src/api/**" is everything under src/api, "*.md" is
#                       markdown files at the top level, "**/*.go" any Go file
#   version             integer >= 1 (default 1)
#   constraints         free-text rules the agent must follow
#   acceptance_criteria what must hold for the intent to be complete
#   related_specs       [{type: speckit|github_issue|github_pr|constitution|external, ref: ...}]
#   parent_intent       id of the intent this one refines
#   tags, created_at, updated_at (RFC 3339)
#
# Edits to this file take effect in a running mount within a second; an
# invalid edit is rejected and the previous version stays in force.

active_intents:
  - id: INT-001
    name: "Describe the first unit of work"
    status: PENDING # set to IN_PROGRESS to allow changes
    version: 1
    owned_scope:
      - "src/**"
    constraints:
      - "Do not change public APIs without a new intent"
    acceptance_criteria:
      - "Tests pass"
    created_at: "%[1]s"
    updated_at: "%[1]s"
`

// exampleIgnore is the .intentignore `intentfs init` writes.
const exampleIgnore = `# Paths matching these patterns (gitignore syntax) are exempt from
# governance: writable without an intent and not recorded in the ledger.
# Use it for build outputs, caches and lock files.
node_modules/
__pycache__/
*.pyc
.cache/
build/
dist/
target/
`

// Scaffold writes the example policy and ignore file into
// source/.orchestration. It refuses to overwrite either.
func Scaffold(source string) ([]string, error) {
	dir := filepath.Join(source, policy.OrchestrationDir)
	files := map[string]string{
		filepath.Join(source, policy.IntentsFile):                       fmt.Sprintf(exampleIntents, time.Now().UTC().Format(time.RFC3339)),
		filepath.Join(source, policy.OrchestrationDir, ".intentignore"): exampleIgnore,
	}
	for path := range files {
		if _, err := os.Lstat(path); err == nil {
			return nil, fmt.Errorf("%s already exists; intentfs init does not overwrite it", path)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := os.MkdirAll(source, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", source, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	// Written as the person running init (often root): into the real
	// directory only, never through a committed symlink to elsewhere.
	dirfd, err := safeio.OpenDir(dir)
	if errors.Is(err, safeio.ErrSymlink) {
		return nil, fmt.Errorf("%w; intentfs init writes only into a real %s/ directory: remove the link and run init again", err, policy.OrchestrationDir)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	defer unix.Close(dirfd)
	var written []string
	for _, path := range []string{filepath.Join(source, policy.IntentsFile), filepath.Join(source, policy.OrchestrationDir, ".intentignore")} {
		fd, err := unix.Openat(dirfd, filepath.Base(path), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return written, fmt.Errorf("writing %s: %w", path, err)
		}
		f := os.NewFile(uintptr(fd), path)
		_, err = f.WriteString(files[path])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, fmt.Errorf("writing %s: %w", path, err)
		}
		written = append(written, path)
	}
	return written, nil
}

// ScaffoldMissing writes those of Scaffold's files that are missing and
// keeps the others as they are: a clone of a repository that committed
// its policy gets its other files (the ignore file) without an error.
// It returns what it wrote and what it kept.
func ScaffoldMissing(source string) (written, kept []string, err error) {
	files := []struct{ path, content string }{
		{filepath.Join(source, policy.IntentsFile), fmt.Sprintf(exampleIntents, time.Now().UTC().Format(time.RFC3339))},
		{filepath.Join(source, policy.OrchestrationDir, ".intentignore"), exampleIgnore},
	}
	dir := filepath.Join(source, policy.OrchestrationDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	for _, f := range files {
		fd, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if errors.Is(err, os.ErrExist) {
			kept = append(kept, f.path)
			continue
		}
		if err != nil {
			return written, kept, fmt.Errorf("writing %s: %w", f.path, err)
		}
		_, err = fd.WriteString(f.content)
		if cerr := fd.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, kept, fmt.Errorf("writing %s: %w", f.path, err)
		}
		written = append(written, f.path)
	}
	return written, kept, nil
}
