package policyedit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	for _, f := range scaffoldFiles(source) {
		if _, err := os.Lstat(f.path); err == nil {
			return nil, fmt.Errorf("%s already exists; intentfs init does not overwrite it", f.path)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	written, _, err := writeScaffold(source, false)
	return written, err
}

// ScaffoldMissing writes those of Scaffold's files that are missing and
// keeps the others as they are: a clone of a repository that committed
// its policy gets its other files (the ignore file) without an error.
// It returns what it wrote and what it kept.
func ScaffoldMissing(source string) (written, kept []string, err error) {
	return writeScaffold(source, true)
}

type scaffoldFile struct{ path, content string }

func scaffoldFiles(source string) []scaffoldFile {
	return []scaffoldFile{
		{filepath.Join(source, policy.IntentsFile), fmt.Sprintf(exampleIntents, time.Now().UTC().Format(time.RFC3339))},
		{filepath.Join(source, policy.OrchestrationDir, ".intentignore"), exampleIgnore},
	}
}

// writeScaffold creates the scaffold's files that do not exist; one that
// does is kept (keep) or an error. Written as the person running init
// (often root): into the real directory only, never through a committed
// symlink to elsewhere.
func writeScaffold(source string, keep bool) (written, kept []string, err error) {
	dir := filepath.Join(source, policy.OrchestrationDir)
	if err := os.MkdirAll(source, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating %s: %w", source, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	dirfd, err := safeio.OpenDir(dir)
	if errors.Is(err, safeio.ErrSymlink) {
		return nil, nil, fmt.Errorf("%w; intentfs init writes only into a real %s/ directory: remove the link and run init again", err, policy.OrchestrationDir)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	defer unix.Close(dirfd)
	for _, f := range scaffoldFiles(source) {
		fd, err := unix.Openat(dirfd, filepath.Base(f.path), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if keep && errors.Is(err, unix.EEXIST) {
			kept = append(kept, f.path)
			continue
		}
		if err != nil {
			return written, kept, fmt.Errorf("writing %s: %w", f.path, err)
		}
		file := os.NewFile(uintptr(fd), f.path)
		_, err = file.WriteString(f.content)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, kept, fmt.Errorf("writing %s: %w", f.path, err)
		}
		written = append(written, f.path)
	}
	return written, kept, nil
}
