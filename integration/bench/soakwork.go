package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/intentfs/intentfs/policy"
)

// The soak's workspace: one directory per agent session (agentN/, owned
// by intent SOAK-00N alone), a README and a tarball outside every scope
// that all sessions read.

// soakAgentDir is session n's directory (n from 1), its intent's scope.
func soakAgentDir(n int) string { return fmt.Sprintf("agent%d", n) }

// soakIntent is session n's intent.
func soakIntent(n int) string { return fmt.Sprintf("SOAK-%03d", n) }

// soakPolicy gives each of n sessions an intent of its own with a
// disjoint scope.
func soakPolicy(n int) string {
	var b strings.Builder
	b.WriteString("active_intents:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - id: %s\n    name: soak agent %d\n    status: IN_PROGRESS\n    owned_scope: [%q]\n",
			soakIntent(i), i, soakAgentDir(i)+"/**")
	}
	return b.String()
}

// soakTreeTar is the tree each session extracts and deletes: tree/ with
// 6 directories of 12 text files each (84 entries).
const soakTreeTar = "fixtures/tree.tar"

// soakProject is each session's C project: a Makefile with per-object
// rules, so an edit rebuilds only what depends on it. The program prints
// calc(10)+twice(3) = 96 + 10*STEP, which the session checks after every
// build: a build that did not see the edit fails the soak.
var soakProject = map[string]string{
	"Makefile": "CFLAGS = -O0 -pipe\n" +
		"app: main.o util.o calc.o\n\t$(CC) -o $@ main.o util.o calc.o\n" +
		"main.o: src/main.c src/util.h\n\t$(CC) $(CFLAGS) -c -o $@ src/main.c\n" +
		"util.o: src/util.c src/util.h\n\t$(CC) $(CFLAGS) -c -o $@ src/util.c\n" +
		"calc.o: src/calc.c src/util.h src/step.h\n\t$(CC) $(CFLAGS) -c -o $@ src/calc.c\n" +
		"clean:\n\trm -f app *.o\n",
	"src/main.c": "#include <stdio.h>\n#include \"util.h\"\nint main(void) { printf(\"%ld\\n\", calc(10) + twice(3)); return 0; }\n",
	"src/util.h": "long twice(long x);\nlong calc(long n);\n",
	"src/util.c": "#include \"util.h\"\nlong twice(long x) { return 2 * x; }\n",
	"src/calc.c": "#include \"util.h\"\n#include \"step.h\"\nlong calc(long n) { long s = 0; for (long i = 0; i < n; i++) s += twice(i) + STEP; return s; }\n",
	"src/step.h": "#define STEP 0\n",
	"notes.txt":  "notes\n",
}

// prepareSoakSource fills src with the policy for n sessions, the
// fixtures and each session's project.
func prepareSoakSource(src string, n int) error {
	files := map[string]string{policy.IntentsFile: soakPolicy(n), "README.md": "soak workspace\n"}
	for i := 1; i <= n; i++ {
		for name, body := range soakProject {
			files[filepath.Join(soakAgentDir(i), name)] = body
		}
		files[filepath.Join(soakAgentDir(i), "work", ".keep")] = ""
	}
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	t, err := soakTree()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(src, filepath.Dir(soakTreeTar)), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(src, soakTreeTar), t, 0o644)
}

// soakTree builds the tarball of the tree sessions extract.
func soakTree() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(h *tar.Header, body []byte) error {
		h.ModTime, h.Size = mtime, int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := add(&tar.Header{Name: "tree/", Typeflag: tar.TypeDir, Mode: 0o755}, nil); err != nil {
		return nil, err
	}
	for d := range 6 {
		dir := fmt.Sprintf("tree/d%d/", d)
		if err := add(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755}, nil); err != nil {
			return nil, err
		}
		for f := range 12 {
			body := []byte(strings.Repeat(fmt.Sprintf("line of file %d in directory %d\n", f, d), 20+f*10))
			if err := add(&tar.Header{Name: fmt.Sprintf("%sf%02d.txt", dir, f), Typeflag: tar.TypeReg, Mode: 0o644}, body); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// soakScript is what each session runs: sh -c soakScript soak ME OTHER
// END INTENT N, in the mount's root. ME is its own directory (session
// N's, pinned to INTENT), OTHER a neighbour's
// whose files it reads and, every fourth iteration, tries to change
// (each try must be refused). It loops until the epoch second END, then
// prints one "soak-result" line of counters. Any failure of its own work
// prints "soak-error" and exits 1; a try outside its scope that succeeds
// is counted as a leak.
const soakScript = `set -u
me=$1; other=$2; end=$3; intent=$4; n=$5
die() { echo "soak-error: $me iteration $i: $*"; exit 1; }
i=0; edits=0; builds=0; trees=0; reads=0; tries=0; denied=0; leaks=0
cd "$me" || die "cd $me"
read -r active < ../.intentfs/active || die "reading .intentfs/active"
[ "$active" = "$intent" ] || die "the session's intent is '$active', want $intent"
while [ "$(date +%s)" -lt "$end" ]; do
  i=$((i+1))
  tar -xf ../` + soakTreeTar + ` -C work || die "tar -x"
  trees=$((trees+1))
  # Edits: sed -i (a temporary file renamed over the original), an
  # append, and an editor's save (write beside, rename over).
  sed -i "s/^#define STEP .*/#define STEP $i/" src/step.h || die "sed -i"
  echo "iteration $i" >> notes.txt || die "append"
  { cat src/util.c; echo "/* edit $i */"; } > src/.util.c.swp && mv -f src/.util.c.swp src/util.c || die "editor save"
  edits=$((edits+3))
  # Build: incremental, and from clean every tenth iteration; the
  # program's output proves the build saw the edit.
  if [ $((i % 10)) -eq 0 ]; then make -s clean >/dev/null || die "make clean"; fi
  make -s >/dev/null || die "make"
  out=$(./app) || die "running the build"
  [ "$out" = "$((96 + 10 * i))" ] || die "the build printed $out, want $((96 + 10 * i))"
  builds=$((builds+1))
  # Reads of the neighbour's files, which change under it.
  cat ../"$other"/src/*.c ../"$other"/notes.txt ../README.md >/dev/null 2>&1
  grep -rqs STEP ../"$other"/src 2>/dev/null
  ls -lR ../"$other"/work >/dev/null 2>&1
  reads=$((reads+1))
  # Now and then, something outside the session's scope.
  if [ $(( (i + n) % 4)) -eq 0 ]; then
    tries=$((tries+3))
    if { echo "from $me" >> ../"$other"/notes.txt; } 2>/dev/null; then leaks=$((leaks+1)); else denied=$((denied+1)); fi
    if { echo "from $me" > ../stray-"$me".txt; } 2>/dev/null; then leaks=$((leaks+1)); else denied=$((denied+1)); fi
    if rm -f ../"$other"/src/main.c 2>/dev/null; then leaks=$((leaks+1)); else denied=$((denied+1)); fi
  fi
  rm -rf work/tree || die "rm -rf"
done
echo "soak-result iterations=$i edits=$edits builds=$builds trees=$trees reads=$reads tries=$tries denied=$denied leaks=$leaks"
`
