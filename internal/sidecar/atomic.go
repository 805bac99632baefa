// Package sidecar keeps the human-readable files beside the policy:
// intent_map.md (which files each intent touched) and the lessons learned
// in CLAUDE.md. Both are written in the source directory, never through the
// mount, atomically, and without disturbing text a human wrote.
package sidecar

import "github.com/intentfs/intentfs/internal/safeio"

// writeAtomic replaces path with data: a temporary file in the same
// directory, fsync'ed, renamed over the original (whose mode it keeps).
func writeAtomic(path string, data []byte) error { return safeio.Replace(path, data, 0o644) }
