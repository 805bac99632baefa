package observe

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentfs/intentfs/internal/approvals"
	"github.com/intentfs/intentfs/ledger"
)

// uiPolicy holds every deletion for a human, for two minutes.
const uiPolicy = `active_intents:
  - id: INT-001
    name: supervised work
    status: IN_PROGRESS
    owned_scope: ["**"]
    approvals:
      - name: hold-deletes
        ops: [delete]
        timeout: 2m
`

// uiRun is a running `intentfs ui`.
type uiRun struct {
	url   string // as printed, with the token
	base  string // http://127.0.0.1:PORT
	token string
	cmd   *exec.Cmd
	// log is what the ui wrote to stderr.
	log *testenv.SyncBuffer
}

// mountForUI mounts uiPolicy with INT-001 selected and the seeded files
// owned by the agent's uid, so the agent's rm may delete them.
func mountForUI(t *testing.T, files ...string) *testenv.Env {
	t.Helper()
	seed := map[string]string{}
	for _, f := range files {
		seed[f] = "keep me?\n"
	}
	return testenv.MountPrepared(t, uiPolicy, "INT-001", seed, func(src string) {
		for _, p := range append([]string{"."}, files...) {
			if err := os.Chown(filepath.Join(src, p), testenv.AgentUID, testenv.AgentGID); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// startUI runs `intentfs ui --mount` as the human (the test's uid) and
// reads the address it prints.
func startUI(t *testing.T, e *testenv.Env) *uiRun {
	t.Helper()
	bin, err := testenv.CLIBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "ui", "--mount", e.Mnt)
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+e.Reg)
	cmd.Dir = "/"
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("intentfs ui ended without printing its address:\n%s", stderr.String())
			}
			addr, found := strings.CutPrefix(l, "open: ")
			if !found {
				continue
			}
			go func() {
				for range lines {
				}
			}()
			u, err := url.Parse(addr)
			if err != nil || u.Query().Get("token") == "" {
				t.Fatalf("address %q: %v", addr, err)
			}
			return &uiRun{url: addr, base: "http://" + u.Host, token: u.Query().Get("token"), cmd: cmd, log: stderr}
		case <-deadline:
			t.Fatalf("intentfs ui printed no address within 30s:\n%s", stderr.String())
		}
	}
}

// human signs in as the human's browser does: the printed address, then
// the cookie. It returns the client and the page's CSRF token.
func (u *uiRun) human(t *testing.T) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(u.url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`name="intentfs-csrf" content="([0-9a-f]{64})"`).FindSubmatch(b)
	if resp.StatusCode != http.StatusOK || m == nil || strings.Contains(resp.Request.URL.String(), u.token) {
		t.Fatalf("signing in: %d at %s\n%s", resp.StatusCode, resp.Request.URL, b)
	}
	return c, string(m[1])
}

// heldRm starts the agent's rm of name in the mount and waits until the
// rule holds it.
func heldRm(t *testing.T, e *testenv.Env, name string) (*exec.Cmd, *strings.Builder, approvals.Pending) {
	t.Helper()
	cmd := testenv.CommandIn(e.Mnt, "setpriv", "--reuid="+strconv.Itoa(testenv.AgentUID), "--regid="+strconv.Itoa(testenv.AgentGID), "--clear-groups", "rm", "-f", name)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var pending []approvals.Pending
	testenv.WaitFor(t, func() bool { pending, _ = e.D.Approvals(); return len(pending) == 1 }, "the rm of", name, "to be held")
	if p := pending[0]; p.Path != name || p.Process == nil || p.Process.Uid != testenv.AgentUID {
		t.Fatalf("held %+v", p)
	}
	return cmd, &out, pending[0]
}

// exited waits for cmd, at most a minute.
func exited(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%v did not finish", cmd.Args)
		return nil
	}
}

// TestUIAgentCannotApprove: the agent, uid 1000, outside and inside
// intentfs run, tries to approve its own held rm through the page's port:
// without the token, with the token as if it had leaked (cookie, CSRF
// token and Origin all right), and with the token in the URL. The kernel
// names each connecting socket's owner, so every attempt is cut off
// before HTTP, and the rm stays held. The human, signed in, approves it.
func TestUIAgentCannotApprove(t *testing.T) {
	// Serial: it starts an agent session, whose mount namespace copies every mount of the other tests (serving them past their unmount until the session ends).
	testenv.Serial(t)
	e := mountForUI(t, "victim.txt")
	u := startUI(t, e)
	human, csrf := u.human(t)
	rm, rmOut, p := heldRm(t, e, "victim.txt")

	// The token is not in the ui's command line, which every user reads.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", u.cmd.Process.Pid)); err != nil || strings.Contains(string(b), u.token) {
		t.Fatalf("the ui's command line %q holds the token (%v)", b, err)
	}
	// Nor in any file of the runtime directory.
	_ = filepath.WalkDir(e.Reg, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), u.token) {
				t.Errorf("%s holds the token", path)
			}
		}
		return nil
	})
	form := url.Values{"m": {e.Mnt}, "id": {fmt.Sprint(p.ID)}, "decision": {"approve"}}.Encode()
	port := strings.TrimPrefix(u.base, "http://127.0.0.1:")
	cookie := "Cookie: intentfs_ui_" + port + "=" + u.token
	attempts := map[string][]string{
		"a plain request":          {"curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", u.base + "/"},
		"a POST without the token": {"curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Origin: " + u.base, "--data", form + "&csrf=" + csrf, u.base + "/decide"},
		"a POST with the leaked token": {"curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", "-H", cookie, "-H", "X-Intentfs-Csrf: " + csrf,
			"-H", "Origin: " + u.base, "--data", form, u.base + "/decide"},
		"a GET with the token in the URL": {"curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", u.base + "/decide?" + form + "&token=" + u.token + "&csrf=" + csrf},
		"the sign-in address":             {"curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", u.url},
	}
	for name, argv := range attempts {
		out, err := testenv.CommandIn("/", "setpriv", append([]string{"--reuid=" + strconv.Itoa(testenv.AgentUID), "--regid=" + strconv.Itoa(testenv.AgentGID), "--clear-groups"}, argv...)...).CombinedOutput()
		if err == nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "000") {
			t.Errorf("uid %d, %s: got an HTTP answer (%v): %s", testenv.AgentUID, name, err, out)
		}
	}
	// Inside a session too.
	out, code := e.RunSession(append([]string{"--"}, attempts["a POST with the leaked token"]...)...)
	if code == 0 || !strings.Contains(out, "000") {
		t.Errorf("inside intentfs run: got an HTTP answer (exit %d): %s", code, out)
	}
	if pending, _ := e.D.Approvals(); len(pending) != 1 || pending[0].ID != p.ID {
		t.Fatalf("the held rm is no longer held: %+v", pending)
	}
	if _, ok := e.SrcContent("victim.txt"); !ok || rm.ProcessState != nil {
		t.Fatalf("the held rm went ahead: %s", rmOut)
	}

	// The human approves from the page.
	req, _ := http.NewRequest("POST", u.base+"/decide", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.base)
	req.Header.Set("X-Intentfs-Csrf", csrf)
	resp, err := human.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		OK      bool     `json:"ok"`
		Decided []string `json:"decided"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if !answer.OK {
		t.Fatalf("the human's approval: %d %+v", resp.StatusCode, answer)
	}
	if err := exited(t, rm); err != nil {
		t.Fatalf("the approved rm failed: %v %s", err, rmOut)
	}
	if _, ok := e.SrcContent("victim.txt"); ok {
		t.Fatal("approved, but victim.txt is still there")
	}
	e.WaitRecord("the approved delete", testenv.Event(ledger.EventDelete, "victim.txt"))
}

// TestUIRefusesOpenSocketDir: --socket insists on a private
// directory.
func TestUIRefusesOpenSocketDir(t *testing.T) {
	testenv.Parallel(t)
	e := mountForUI(t)
	dir := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := e.CLI("ui", "--mount", e.Mnt, "--socket", filepath.Join(dir, "ui.sock"))
	if err == nil || !strings.Contains(out, "chmod 0700") {
		t.Fatalf("a socket in a directory others may enter: %v\n%s", err, out)
	}
}

// get fetches a page as the signed-in human.
func (u *uiRun) get(t *testing.T, c *http.Client, path string, q url.Values) string {
	t.Helper()
	resp, err := c.Get(u.base + path + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, b)
	}
	return string(b)
}

// TestUIShowsObserveDiffBlameVerify: in observe mode the page counts the
// changes the policy would have refused, and shows an intent's diff, a
// file's blame and verify's verdict, with the agent's text escaped.
func TestUIShowsObserveDiffBlameVerify(t *testing.T) {
	testenv.Parallel(t)
	e := mountObserved(t)
	if out, err := e.AsAgent1000(`echo new > docs/new.md && printf 'package a\n// changed <script>x</script>\n' > src/a.go`); err != nil {
		t.Fatalf("the agent's writes: %v\n%s", err, out)
	}
	e.WaitRecord("the write of src/a.go", func(r *ledger.Record) bool { return r.Path() == "src/a.go" })
	u := startUI(t, e)
	human, _ := u.human(t)
	m := url.Values{"m": {e.Mnt}}

	page := u.get(t, human, "/", m)
	if !regexp.MustCompile(`id="would-deny">[1-9]\d* change\(s\) the policy refuses`).MatchString(page) || !strings.Contains(page, `class="mode-observe"`) {
		t.Fatalf("the page does not count the would-deny change in observe mode:\n%s", page)
	}
	if panels := u.get(t, human, "/status", m); !strings.Contains(panels, `id="would-deny"`) {
		t.Fatalf("the status panel:\n%s", panels)
	}

	diff := u.get(t, human, "/diff", url.Values{"m": {e.Mnt}, "intent": {"INT-001"}})
	if !strings.Contains(diff, `<span class="add">&#43;// changed &lt;script&gt;x&lt;/script&gt;</span>`) || strings.Contains(diff, "<script>x") {
		t.Fatalf("the diff of INT-001:\n%s", diff)
	}
	blame := u.get(t, human, "/blame", url.Values{"m": {e.Mnt}, "path": {"src/a.go"}})
	if !strings.Contains(blame, "INT-001") || !strings.Contains(blame, "// changed &lt;script&gt;") {
		t.Fatalf("the blame of src/a.go:\n%s", blame)
	}
	outside := u.get(t, human, "/blame", url.Values{"m": {e.Mnt}, "path": {"../../etc/passwd"}})
	if !strings.Contains(outside, "not a path inside the workspace") || strings.Contains(outside, "root:x:") {
		t.Fatalf("a blame outside the workspace:\n%s", outside)
	}
	verify := u.get(t, human, "/verify", m)
	if !strings.Contains(verify, `id="verify-result" class="ok"`) {
		t.Fatalf("verify:\n%s", verify)
	}
}

// TestUISocket: with --socket the page is reached through a unix socket
// in a private directory: the human signs in through it; uid 1000 cannot
// even connect.
func TestUISocket(t *testing.T) {
	testenv.Parallel(t)
	e := mountForUI(t)
	dir := filepath.Join(t.TempDir(), "ui")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "ui.sock")
	bin, err := testenv.CLIBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "ui", "--mount", e.Mnt, "--socket", sock)
	cmd.Env = append(os.Environ(), "INTENTFS_RUNTIME_DIR="+e.Reg)
	out := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	var token string
	testenv.WaitFor(t, func() bool {
		m := regexp.MustCompile(`token=([0-9a-f]{64})`).FindStringSubmatch(out.String())
		if m != nil {
			token = m[1]
		}
		return m != nil
	}, "the ui's address")
	curl := func(args ...string) string {
		b, _ := exec.Command("curl", append([]string{"-sS", "-m", "10", "--unix-socket", sock, "-o", "/dev/null", "-w", "%{http_code}"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(b))
	}
	if got := curl("http://localhost/"); got != "401" {
		t.Fatalf("without the token: %s", got)
	}
	if got := curl("-H", "Cookie: intentfs_ui_sock="+token, "http://localhost/"); got != "200" {
		t.Fatalf("the human with the cookie: %s", got)
	}
	b, err := testenv.CommandIn("/", "setpriv", "--reuid="+strconv.Itoa(testenv.AgentUID), "--regid="+strconv.Itoa(testenv.AgentGID), "--clear-groups",
		"curl", "-sS", "-m", "10", "--unix-socket", sock, "-H", "Cookie: intentfs_ui_sock="+token, "-o", "/dev/null", "-w", "%{http_code}", "http://localhost/").CombinedOutput()
	if err == nil || !strings.HasSuffix(strings.TrimSpace(string(b)), "000") {
		t.Fatalf("uid %d reached the socket: %v %s", testenv.AgentUID, err, b)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("the socket outlived the ui: %v", err)
	}
}
