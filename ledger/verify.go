package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/intentfs/intentfs/internal/safeio"
)

// Problem kinds reported by Verify.
const (
	ProblemParse    = "parse"    // a line is not JSON
	ProblemRecord   = "record"   // a line is not a valid Agent Trace record
	ProblemChain    = "chain"    // prev does not match the line before
	ProblemTorn     = "torn"     // the last line has no newline (a crash)
	ProblemChanged  = "changed"  // the file's content is not its last recorded post_hash
	ProblemDeleted  = "deleted"  // a file the ledger says exists is gone
	ProblemUntraced = "untraced" // a file changed after the ledger began, with no record
	ProblemPreImage = "preimage" // a hash the ledger names has no stored bytes
	ProblemObject   = "object"   // the stored bytes of a hash the ledger names do not hash to it
)

// Problem is one finding of Verify.
type Problem struct {
	Kind   string `json:"kind"`
	File   string `json:"file,omitempty"` // the ledger file
	Line   int    `json:"line,omitempty"`
	Path   string `json:"path,omitempty"` // the workspace path
	Detail string `json:"detail"`
}

func (p Problem) String() string {
	loc := ""
	if p.File != "" {
		loc = fmt.Sprintf("%s:%d: ", filepath.Base(p.File), p.Line)
	}
	if p.Path != "" {
		loc += p.Path + ": "
	}
	return fmt.Sprintf("%-9s %s%s", p.Kind, loc, p.Detail)
}

// VerifyOptions say what to verify.
type VerifyOptions struct {
	// Ledger is the current ledger file; rotated files are found beside it.
	Ledger string
	// Source, if set, is the workspace whose files are checked against the
	// ledger.
	Source string
	// Exempt reports paths that are not governed (.intentignore, .git).
	Exempt func(rel string, isDir bool) bool
	// ListObjects, if set, lists the hashes whose bytes are stored; every
	// version a record destroyed must be among them (or be a current file).
	ListObjects func(fn func(hash string))
	// CheckObject, if set, re-hashes the stored bytes of a hash and
	// returns an error when they do not match it. Each stored version a
	// record names is checked once: a kept pre-image written after it was
	// kept would be what a revert restores.
	CheckObject func(hash string) error
	// Progress, if set, is called as lines are read (bytes done, total).
	Progress func(done, total int64)
}

// Report is the result of Verify.
type Report struct {
	Files    []string  `json:"files"`
	Records  int       `json:"records"`
	Tracked  int       `json:"tracked_files"`
	Problems []Problem `json:"problems"`
	// Counts has the number of problems of each kind, including those
	// left out of Problems beyond the first maxProblemsPerKind.
	Counts  map[string]int `json:"counts,omitempty"`
	Elapsed time.Duration  `json:"elapsed_ns"`
}

// OK reports whether everything held.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// ChainOK reports whether every line parsed, validated and chained.
func (r *Report) ChainOK() bool {
	for _, p := range r.Problems {
		switch p.Kind {
		case ProblemParse, ProblemRecord, ProblemChain, ProblemTorn:
			return false
		}
	}
	return true
}

// maxProblemsPerKind keeps a report readable when a tree is badly off.
const maxProblemsPerKind = 1000

func (r *Report) add(p Problem) {
	if r.Counts == nil {
		r.Counts = map[string]int{}
	}
	r.Counts[p.Kind]++
	if r.Counts[p.Kind] <= maxProblemsPerKind {
		r.Problems = append(r.Problems, p)
	}
}

// fileState is what the ledger says about a workspace path.
type fileState struct {
	exists bool
	hash   string
	file   string
	line   int
}

// Verify checks that every line of the ledger parses and is a valid Agent
// Trace record, that the hash chain is unbroken across rotated files, and,
// given a source, that every file the ledger says exists has its last
// recorded content on disk.
func Verify(o VerifyOptions) *Report {
	start := time.Now()
	rep := &Report{}
	files, err := Files(o.Ledger)
	if err != nil {
		rep.add(Problem{Kind: ProblemParse, Detail: err.Error()})
		return rep
	}
	rep.Files = files
	var total, done int64
	for _, f := range files {
		if st, err := os.Lstat(f); err == nil {
			total += st.Size()
		}
	}
	state := map[string]*fileState{}
	prev := Genesis
	var firstTime time.Time
	// Pre-images: the store is listed once; each destroyed version is
	// looked up there as its record goes by.
	var stored map[string]bool
	if o.ListObjects != nil {
		stored = map[string]bool{}
		o.ListObjects(func(h string) { stored[h] = true })
	}
	missing := map[string]Problem{}
	// named: the stored versions records name, each with the first record
	// naming it, for CheckObject.
	named := map[string]Problem{}
	for fi, f := range files {
		last := fi == len(files)-1
		if torn, err := hasTornTail(f); err == nil && torn && last {
			rep.add(Problem{Kind: ProblemTorn, File: f, Detail: "the last line has no newline: a crash cut it off; the next mount moves it aside"})
		}
		err := scanParallel(f, func(l *checkedLine) {
			done += int64(l.size) + 1
			if o.Progress != nil && l.line%4096 == 0 {
				o.Progress(done, total)
			}
			rep.Records++
			if l.parseErr != nil {
				rep.add(Problem{Kind: ProblemParse, File: f, Line: l.line, Detail: "not JSON: " + l.parseErr.Error()})
				prev = l.hash
				return
			}
			r := l.rec
			if l.recErr != nil {
				rep.add(Problem{Kind: ProblemRecord, File: f, Line: l.line, Detail: l.recErr.Error()})
			}
			g := r.Gov()
			if g.Prev != prev {
				what := "a line before it was edited, inserted, deleted or reordered"
				if l.line == 1 && fi > 0 {
					what = "the rotated file before it was changed or replaced"
				}
				rep.add(Problem{Kind: ProblemChain, File: f, Line: l.line, Detail: "prev does not match the line before: " + what})
			}
			prev = l.hash
			if firstTime.IsZero() {
				firstTime, _ = time.Parse(time.RFC3339Nano, r.Timestamp)
			}
			// A version this record destroyed must have its bytes kept,
			// unless the record says why not.
			if pre := Str(g.PreHash); stored != nil && pre != "" && pre != EmptyHash && !stored[pre] && !strings.HasPrefix(g.PreImage, "not kept") &&
				g.Event != EventTorn && (g.Event != EventRename || g.PreHash != nil) {
				missing[pre] = Problem{Kind: ProblemPreImage, File: f, Line: l.line, Path: r.Path(),
					Detail: pre + ": the version this record replaced is not in the object store (destroyed out of band, or collected)"}
			}
			if pre := Str(g.PreHash); o.CheckObject != nil && stored[pre] {
				if _, seen := named[pre]; !seen {
					named[pre] = Problem{Kind: ProblemObject, File: f, Line: l.line, Path: r.Path()}
				}
			}
			replay(state, r, f, l.line)
		})
		if err != nil {
			rep.add(Problem{Kind: ProblemParse, File: f, Detail: err.Error()})
		}
	}
	if o.Progress != nil {
		o.Progress(total, total)
	}
	if o.Source != "" {
		checkTree(rep, o, state, firstTime)
	}
	// A version that is the current content of a file needs no copy.
	live := map[string]bool{}
	for _, s := range state {
		if s.exists {
			live[s.hash] = true
		}
	}
	hashes := make([]string, 0, len(missing))
	for h := range missing {
		if !live[h] {
			hashes = append(hashes, h)
		}
	}
	slices.Sort(hashes)
	for _, h := range hashes {
		rep.add(missing[h])
	}
	checked := make([]string, 0, len(named))
	for h := range named {
		checked = append(checked, h)
	}
	slices.Sort(checked)
	for _, h := range checked {
		if err := o.CheckObject(h); err != nil && !errors.Is(err, fs.ErrNotExist) {
			p := named[h]
			p.Detail = h + ": the kept version this record replaced cannot be used for undo: " + err.Error()
			rep.add(p)
		}
	}
	rep.Elapsed = time.Since(start)
	return rep
}

// replay applies a record to the ledger's view of the tree.
func replay(state map[string]*fileState, r *Record, file string, line int) {
	g := r.Gov()
	p := r.Path()
	set := func(path string, exists bool, hash string) {
		state[path] = &fileState{exists: exists, hash: hash, file: file, line: line}
	}
	switch g.Event {
	case EventCreate, EventWrite, EventTruncate:
		set(p, true, Str(g.PostHash))
	case EventLink:
		set(p, true, Str(g.PostHash))
	case EventDelete:
		set(p, false, "")
	case EventRename:
		from := state[g.FromPath]
		if from != nil {
			set(g.FromPath, false, "")
		}
		// Files below a moved directory move too.
		for k, v := range state {
			if strings.HasPrefix(k, g.FromPath+"/") {
				state[p+strings.TrimPrefix(k, g.FromPath)] = v
				delete(state, k)
			}
		}
		if g.PostHash != nil {
			set(p, true, *g.PostHash)
		}
	case EventAccept:
		// A human's acknowledgement: the path is as the record says.
		if g.PostHash != nil {
			set(p, true, *g.PostHash)
		} else {
			set(p, false, "")
		}
	case EventRevert:
		switch {
		case g.FromPath != "": // a move back
			set(g.FromPath, false, "")
			set(p, true, Str(g.PostHash))
		case g.PostHash != nil:
			set(p, true, *g.PostHash)
		case p != "":
			set(p, false, "")
		}
	}
}

func checkTree(rep *Report, o VerifyOptions, state map[string]*fileState, since time.Time) {
	paths := make([]string, 0, len(state))
	for p := range state {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		s := state[p]
		if !s.exists || s.hash == "" {
			continue
		}
		rep.Tracked++
		got, err := safeio.HashFile(o.Source, p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			rep.add(Problem{Kind: ProblemDeleted, Path: p, File: s.file, Line: s.line, Detail: "the ledger's last record says it exists, but it is gone: deleted behind the ledger's back"})
		case err != nil:
			rep.add(Problem{Kind: ProblemChanged, Path: p, File: s.file, Line: s.line, Detail: "cannot be read: " + err.Error()})
		case got != s.hash:
			rep.add(Problem{Kind: ProblemChanged, Path: p, File: s.file, Line: s.line, Detail: fmt.Sprintf("content is %s, the ledger's last record says %s: changed behind the ledger's back", ShortHash(got), ShortHash(s.hash))})
		}
	}
	if since.IsZero() {
		return
	}
	// Files changed after the ledger began that it has never seen.
	_ = filepath.WalkDir(o.Source, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(o.Source, path)
		if rel == "." {
			return nil
		}
		if rel == ".git" || rel == ".orchestration" || (o.Exempt != nil && o.Exempt(rel, d.IsDir())) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if _, known := state[rel]; known {
			return nil
		}
		// ctime, not mtime: tools such as tar set mtime, nothing can set ctime.
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				if ct := time.Unix(st.Ctim.Sec, st.Ctim.Nsec); ct.After(since) {
					rep.add(Problem{Kind: ProblemUntraced, Path: rel, Detail: fmt.Sprintf("changed %s, after the ledger began, but no record names it: changed outside the mount (or lost in a crash)", ct.UTC().Format(time.RFC3339))})
				}
			}
		}
		return nil
	})
}

func hasTornTail(path string) (bool, error) {
	f, err := openRead(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false, err
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()-1); err != nil {
		return false, err
	}
	return b[0] != '\n', nil
}

var versionRe = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// CheckRecord checks a decoded record against the Agent Trace 0.1.0
// schema's rules: required fields, formats and enums.
func CheckRecord(r *Record) error {
	switch {
	case !versionRe.MatchString(r.Version):
		return fmt.Errorf("version %q is not MAJOR.MINOR.PATCH", r.Version)
	case r.ID == "":
		return errors.New("id is missing")
	case r.Files == nil:
		return errors.New("files is missing")
	}
	if _, err := uuid.Parse(r.ID); err != nil {
		return fmt.Errorf("id %q is not a uuid", r.ID)
	}
	if _, err := time.Parse(time.RFC3339Nano, r.Timestamp); err != nil {
		return fmt.Errorf("timestamp %q is not RFC 3339", r.Timestamp)
	}
	if r.VCS != nil && (!slices.Contains([]string{"git", "jj", "hg", "svn"}, r.VCS.Type) || r.VCS.Revision == "") {
		return fmt.Errorf("vcs %+v is not valid", *r.VCS)
	}
	for _, f := range r.Files {
		if f.Conversations == nil {
			return fmt.Errorf("file %q has no conversations", f.Path)
		}
		for _, c := range f.Conversations {
			if c.Ranges == nil {
				return fmt.Errorf("file %q: a conversation has no ranges", f.Path)
			}
			if c.Contributor.Type != "" && !slices.Contains([]string{"human", "ai", "mixed", "unknown"}, c.Contributor.Type) {
				return fmt.Errorf("file %q: contributor type %q", f.Path, c.Contributor.Type)
			}
			for _, rg := range c.Ranges {
				if rg.StartLine < 1 || rg.EndLine < 1 {
					return fmt.Errorf("file %q: range %d-%d starts before line 1", f.Path, rg.StartLine, rg.EndLine)
				}
			}
			for _, rel := range c.Related {
				if rel.Type == "" || !strings.Contains(rel.URL, ":") {
					return fmt.Errorf("file %q: related %+v is not a typed uri", f.Path, rel)
				}
			}
		}
	}
	return nil
}

// checkedLine is one ledger line, decoded and checked by a worker.
type checkedLine struct {
	line     int
	size     int
	hash     string
	rec      *Record
	parseErr error
	recErr   error
}

// scanParallel reads path in batches, decodes and checks the lines on all
// cores, and hands them to fn in order.
func scanParallel(path string, fn func(*checkedLine)) error {
	const batchSize = 2048
	type batch struct {
		seq   int
		lines []checkedLine
		raw   [][]byte
		done  chan struct{}
	}
	workers := max(runtime.GOMAXPROCS(0), 1)
	work := make(chan *batch, workers*2)
	ordered := make(chan *batch, workers*4)
	for range workers {
		go func() {
			for b := range work {
				for i, raw := range b.raw {
					l := &b.lines[i]
					l.hash = LineHash(raw)
					var r Record
					if err := json.Unmarshal(raw, &r); err != nil {
						l.parseErr = err
						continue
					}
					l.rec = &r
					l.recErr = CheckRecord(&r)
				}
				b.raw = nil
				close(b.done)
			}
		}()
	}
	var scanErr error
	go func() {
		defer close(work)
		defer close(ordered)
		cur := &batch{done: make(chan struct{})}
		flush := func() {
			work <- cur
			ordered <- cur
			cur = &batch{seq: cur.seq + 1, done: make(chan struct{})}
		}
		scanErr = ScanFile(path, func(line int, raw []byte) error {
			cur.lines = append(cur.lines, checkedLine{line: line, size: len(raw)})
			cur.raw = append(cur.raw, append([]byte(nil), raw...))
			if len(cur.raw) == batchSize {
				flush()
			}
			return nil
		})
		if len(cur.raw) > 0 {
			flush()
		}
	}()
	for b := range ordered {
		<-b.done
		for i := range b.lines {
			fn(&b.lines[i])
		}
	}
	return scanErr
}
