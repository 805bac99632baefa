package observe

import (
	"strconv"

	"github.com/intentfs/intentfs/integration/testenv"

	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/intentfs/intentfs/ledger"
)

// browser starts headless Chromium for the test, or skips when it is not
// installed (.ci/run installs it). The flags keep it off the network
// (this machine's is closed) and out of any profile but a fresh one.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("Chromium is not installed (apt-get install chromium): the browser tests need it")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// screenshot saves the whole page as name.png in $INTENTFS_UI_SCREENSHOTS,
// when it is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("INTENTFS_UI_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitText waits until the element sel's text holds want.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	testenv.WaitFor(t, func() bool {
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		text, _ := chromedp.Run(short, chromedp.TextContent(chromedp.CSS(sel)))
		return strings.Contains(text, want)
	}, sel, "to show", want)
}

// TestUIBrowserApproveDeny is the supervisor at the page in a real
// browser: an agent's rm is held and appears on the page; Approve lets it
// finish (the file gone, the deletion recorded); a second rm, Deny, fails
// and the file stays.
func TestUIBrowserApproveDeny(t *testing.T) {
	testenv.Parallel(t)
	ctx := browser(t)
	e := mountForUI(t, "approved.txt", "denied.txt")
	u := startUI(t, e)

	// The token goes to the browser through the DevTools protocol, never
	// on a command line.
	if err := chromedp.Do(ctx, chromedp.Navigate(u.url), chromedp.WaitVisible(chromedp.ID("nothing-waits"))); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || strings.Contains(loc, u.token) {
		t.Fatalf("the address bar keeps the token: %q %v", loc, err)
	}
	waitText(t, ctx, "#live", "live")

	// Approve.
	rm, rmOut, p := heldRm(t, e, "approved.txt")
	approve := chromedp.ID("approve-" + strconv.Itoa(int(p.ID)))
	if err := chromedp.Do(ctx, chromedp.WaitVisible(approve)); err != nil {
		t.Fatalf("the held rm did not appear: %v", err)
	}
	waitText(t, ctx, "#event-list", "HELD unlink approved.txt")
	screenshot(t, ctx, "ui-held")
	if err := chromedp.Do(ctx, chromedp.Click(approve)); err != nil {
		t.Fatal(err)
	}
	if err := exited(t, rm); err != nil {
		t.Fatalf("the approved rm failed: %v %s", err, rmOut)
	}
	if _, ok := e.SrcContent("approved.txt"); ok {
		t.Fatal("approved, but approved.txt is still there")
	}
	e.WaitRecord("the approved delete", testenv.Event(ledger.EventDelete, "approved.txt"))
	waitText(t, ctx, "#event-list", "APPROVED")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("nothing-waits"))); err != nil {
		t.Fatal(err)
	}

	// Deny.
	rm, rmOut, p = heldRm(t, e, "denied.txt")
	deny := chromedp.ID("deny-" + strconv.Itoa(int(p.ID)))
	if err := chromedp.Do(ctx, chromedp.WaitVisible(deny), chromedp.Click(deny)); err != nil {
		t.Fatalf("denying: %v", err)
	}
	if err := exited(t, rm); err == nil || !strings.Contains(rmOut.String(), "Permission denied") {
		t.Fatalf("the denied rm: %v %s", err, rmOut)
	}
	if _, ok := e.SrcContent("denied.txt"); !ok {
		t.Fatal("denied, but denied.txt is gone")
	}
	waitText(t, ctx, "#event-list", "DENIED")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("nothing-waits"))); err != nil {
		t.Fatal(err)
	}
	// The status refreshes itself as events come in.
	denied := fmt.Sprintf("%d denied", e.D.Status().Counters.Denied)
	waitText(t, ctx, "#counters", denied)
	screenshot(t, ctx, "ui-decided")
}
