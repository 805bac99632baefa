package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/mounts"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/internal/webui"
)

func uiCmd() *command {
	return &command{
		name: "ui", summary: "a local web page to watch agents and approve or deny", usage: "[--mount M | --all] [--listen 127.0.0.1:0 | --socket PATH]",
		help: `Serves a web page for the supervisor of one mount (the one containing the
current directory, or the only one, or --mount) or of every mount this user
controls (--all): live events, the sessions and their intents, what waits
for approval with Approve / Approve for 60 s / Deny buttons, scope requests,
each intent's diff, blame of a file, verify, and in observe mode the count
of changes the policy would have refused.

It listens on a loopback port (a random one by default) and prints the
address to open, which carries a token for this run only: keep it to
yourself, and paste it into your browser rather than passing it to a
program's command line (other users can read command lines). Only
connections from your own user (or root, or --allow-uid) are accepted, and
every action needs the page's cookie and its CSRF token. With --socket it
listens on a unix socket in a directory only you may enter (mode 0700),
for an ssh forward (ssh -L 8080:/path/ui.sock host). Stop with Ctrl-C.

Examples:
  intentfs ui
  intentfs ui --mount /workspace
  intentfs ui --all --listen 127.0.0.1:8421
  mkdir -m 0700 ~/.intentfs-ui && intentfs ui --socket ~/.intentfs-ui/ui.sock`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint (default: the mount containing the current directory, or the only one)")
			fs.Bool("all", false, "show every mount this user controls")
			fs.String("listen", "127.0.0.1:0", "the loopback address to listen on (port 0: a free one)")
			fs.String("socket", "", "listen on this unix socket instead (its directory must be yours, mode 0700)")
			fs.UintSlice("allow-uid", nil, "also accept connections from this uid (your desktop user's, when the ui runs with sudo)")
		},
		run: func(a *app, args []string) error {
			if len(args) != 0 {
				return usagef("ui takes no arguments")
			}
			all, _ := a.fs.GetBool("all")
			mnt := flagString(a, "mount")
			if all && mnt != "" {
				return usagef("give --mount or --all, not both")
			}
			backend := webui.Local{Registry: mounts.DefaultRegistry()}
			if !all {
				e, err := findMount(mnt)
				if err != nil {
					return fmt.Errorf("%w (or show every mount with: intentfs ui --all)", err)
				}
				backend.Only = e.Mountpoint
			}
			uids, _ := a.fs.GetUintSlice("allow-uid")
			allow := make([]uint32, 0, len(uids))
			for _, u := range uids {
				allow = append(allow, uint32(u))
			}
			srv, err := webui.Start(webui.Options{Backend: backend, Listen: flagString(a, "listen"), Socket: flagString(a, "socket"),
				AllowUIDs: allow, Log: slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))})
			if err != nil {
				return err
			}
			defer srv.Close()
			what := "every mount of uid " + fmt.Sprint(os.Geteuid())
			if backend.Only != "" {
				what = textsafe.Escape(backend.Only)
			}
			fmt.Fprintf(a.stdout, "intentfs ui for %s\n", what)
			if sock := flagString(a, "socket"); sock != "" {
				fmt.Fprintf(a.stdout, "listening on %s; forward it (ssh -L 8080:%s HOST) and open the address below with the forward's port\n", textsafe.Escape(sock), textsafe.Escape(sock))
			}
			fmt.Fprintf(a.stdout, "open: %s\n(the address carries this run's token: keep it to yourself; Ctrl-C to stop)\n", srv.URL())
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
}
