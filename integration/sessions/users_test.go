package sessions

import (
	"github.com/intentfs/intentfs/integration/testenv"

	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentfs/intentfs/ledger"
)

// TestNonRootCallerGetsNoMoreThanOnTheSource runs tools as uid 1000
// through a mount served by root: new entries belong to the caller, and
// the kernel refuses what the caller could not do on the source.
func TestNonRootCallerGetsNoMoreThanOnTheSource(t *testing.T) {
	testenv.Parallel(t)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	e := testenv.MountPrepared(t, testenv.ScopePolicy, "INT-002", map[string]string{"pub.txt": "public\n", "secret.txt": "secret\n", "private/x": "x\n", "shared/.keep": ""},
		func(src string) {
			must(os.Chmod(filepath.Join(src, "shared"), 0o777))
			must(os.Chmod(filepath.Join(src, "private"), 0o700))
			must(os.Chmod(filepath.Join(src, "secret.txt"), 0o600))
		})
	const uid, gid = 1000, 1000

	if out, err := e.ShAs(uid, gid, "umask 022; echo mine > shared/mine.txt && mkdir shared/d && ln -s mine.txt shared/l"); err != nil {
		t.Fatalf("allowed as uid %d: %v\n%s", uid, err, out)
	}
	for _, p := range []string{"shared/mine.txt", "shared/d", "shared/l"} {
		var st syscall.Stat_t
		must(syscall.Lstat(filepath.Join(e.Src, p), &st))
		if st.Uid != uid || st.Gid != gid {
			t.Errorf("%s is owned by %d:%d in the source, want %d:%d", p, st.Uid, st.Gid, uid, gid)
		}
	}
	if st, _ := os.Stat(filepath.Join(e.Src, "shared/mine.txt")); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want the caller's umask applied once (0644)", st.Mode().Perm())
	}
	r := e.WaitRecord("create by uid 1000", testenv.Event(ledger.EventCreate, "shared/mine.txt"))
	if p := r.Gov().Process; p == nil || p.Uid != uid || p.Gid != gid {
		t.Errorf("process = %+v", p)
	}

	// Each command must fail through the mount exactly as it fails on the
	// source directly: the mount grants nothing the source would not.
	refused := []string{
		"cat secret.txt",
		"echo x >> pub.txt",
		"echo x > private/y",
		"ls private",
		"chmod 777 pub.txt",
		"rm pub.txt",
		"touch -d 2001-01-01 pub.txt",
		"chown 1000 pub.txt",
		"mv pub.txt shared/",
		"ln pub.txt shared/hard",
	}
	for _, script := range refused {
		native, nerr := testenv.RunAs(e.Src, uid, gid, script)
		mounted, merr := e.ShAs(uid, gid, script)
		if nerr == nil {
			t.Fatalf("test bug: %q succeeds natively as uid %d", script, uid)
		}
		if merr == nil || errText(mounted) != errText(native) {
			t.Errorf("as uid %d, %q:\n  native:  %q\n  mounted: %q (err %v)", uid, script, native, mounted, merr)
		}
	}
	// A write by an unprivileged caller clears set-ID bits, through the
	// mount as on the disk.
	for _, f := range []string{"shared/suid", "shared/suid-native"} {
		must(os.WriteFile(filepath.Join(e.Src, f), []byte("#!/bin/sh\n"), 0o777))
		must(os.Chmod(filepath.Join(e.Src, f), 0o777|os.ModeSetuid|os.ModeSetgid))
	}
	if out, err := e.ShAs(uid, gid, "echo x >> shared/suid"); err != nil {
		t.Fatalf("write to a world-writable set-ID file: %v %s", err, out)
	}
	if out, err := testenv.RunAs(e.Src, uid, gid, "echo x >> shared/suid-native"); err != nil {
		t.Fatalf("native write: %v %s", err, out)
	}
	stM, _ := os.Stat(filepath.Join(e.Src, "shared/suid"))
	stN, _ := os.Stat(filepath.Join(e.Src, "shared/suid-native"))
	if stM.Mode() != stN.Mode() || stM.Mode()&os.ModeSetuid != 0 {
		t.Errorf("set-ID bits after a write: mount %v, native %v", stM.Mode(), stN.Mode())
	}
	if got, _ := e.SrcContent("pub.txt"); got != "public\n" {
		t.Errorf("pub.txt changed: %q", got)
	}
	if _, ok := e.SrcContent("private/y"); ok {
		t.Error("private/y was created")
	}
	// The kernel refused these; the policy never saw them, so no
	// policy denial is recorded.
	for _, r := range e.Records() {
		if r.Gov().Event == ledger.EventDenied {
			t.Errorf("unexpected policy denial %+v", r.Gov())
		}
	}
}

// errText keeps the error part of a tool's message ("Permission denied"),
// which is what must match; paths in the message may differ.
func errText(out string) string {
	if i := strings.LastIndex(out, ": "); i >= 0 {
		return strings.TrimSpace(out[i+2:])
	}
	return strings.TrimSpace(out)
}
