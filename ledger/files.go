package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// rotatedName is the name of the n-th rotated file: agent_trace.n.jsonl.
func rotatedName(path string, n int) string {
	return strings.TrimSuffix(path, ".jsonl") + "." + strconv.Itoa(n) + ".jsonl"
}

// Files returns the ledger's files in chain order: the rotated files
// agent_trace.1.jsonl, agent_trace.2.jsonl, … and then path itself (if it
// exists).
func Files(path string) ([]string, error) {
	base := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	d, err := openDir(filepath.Dir(path))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("listing the ledger directory %s: %w", filepath.Dir(path), err)
	}
	type numbered struct {
		n    int
		path string
	}
	var rotated []numbered
	current := false
	for _, e := range entries {
		name := e.Name()
		if name == filepath.Base(path) {
			current = true
			continue
		}
		mid, ok := strings.CutPrefix(name, base+".")
		if !ok {
			continue
		}
		num, ok := strings.CutSuffix(mid, ".jsonl")
		if n, err := strconv.Atoi(num); ok && err == nil && n > 0 {
			rotated = append(rotated, numbered{n, filepath.Join(filepath.Dir(path), name)})
		}
	}
	sort.Slice(rotated, func(i, j int) bool { return rotated[i].n < rotated[j].n })
	var out []string
	for i, r := range rotated {
		if r.n != i+1 {
			return nil, fmt.Errorf("ledger file %s is missing: the rotated files must be numbered 1, 2, 3, …", rotatedName(path, i+1))
		}
		out = append(out, r.path)
	}
	if current {
		out = append(out, path)
	}
	return out, nil
}
