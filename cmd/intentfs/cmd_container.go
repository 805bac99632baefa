package main

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/internal/container"
)

func containerCmd() *command {
	return &command{
		name: "container", summary: "the container image's entrypoint: mount /src at /workspace, run an agent", usage: "[--intent ID] [--user UID[:GID]] [-- CMD [ARGS...]]",
		help: `The entrypoint of intentfs's container image. It mounts SOURCE (default /src,
the checkout bind-mounted from the host) at MOUNTPOINT (default /workspace),
runs CMD (default: a shell) there as a sealed session of the mount (as
intentfs run does), and on exit ends the session, unmounts, flushes the
ledger and exits with CMD's status (125: CMD never ran, with the reason).

CMD runs as an unprivileged user with the uid and gid of SOURCE's owner, so
the files it creates are the host user's; --user or the environment
variables INTENTFS_UID and INTENTFS_GID choose others. The container gets an
account "agent" with those ids unless one of its accounts has the uid
already. Root is refused. In the session SOURCE, the daemon's control socket
and its processes cannot be reached; the ledger stays in
SOURCE/.orchestration/ on the host. Signals sent to the container (docker
stop) are passed on to CMD. If CMD has not exited --stop-grace (default 7s,
or $INTENTFS_STOP_GRACE) after a SIGTERM, its session is ended (SIGKILL to
all its processes) and the container exits with 137, its ledger complete:
before Docker's own 10 s are up and it kills the daemon too.

If the unmount or the ledger's flush fails after CMD ran, the reason is
printed and the status is CMD's if it failed, else 125: the ledger may
lack the last records.

CMD gets the umask the container started with (022 if that was 0000).

--intent ID (or INTENTFS_INTENT) pins the session to the intent; without it
the agent selects one through .intentfs/active.

The daemon streams the ledger to an OpenTelemetry collector as intentfs
mount does when the container's environment sets OTEL_EXPORTER_OTLP_ENDPOINT
(or OTEL_EXPORTER_OTLP_LOGS_ENDPOINT); the other OTEL_EXPORTER_OTLP_*
variables, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES apply to it.

Before it mounts, it checks that the container can: a missing
"--device /dev/fuse", "--cap-add SYS_ADMIN" or an AppArmor profile that
forbids mounts ("--security-opt apparmor=unconfined") is named, and nothing
is written to SOURCE.

Examples:
  docker run --rm -it --device /dev/fuse --cap-add SYS_ADMIN \
      --security-opt apparmor=unconfined -v "$PWD:/src" intentfs --intent INT-001 -- claude
  docker run --rm -it --device /dev/fuse --cap-add SYS_ADMIN -v "$PWD:/src" \
      -e INTENTFS_UID=1000 -e INTENTFS_GID=1000 intentfs          # a shell in /workspace
  docker run --rm -it --device /dev/fuse --cap-add SYS_ADMIN -v "$PWD:/src" \
      -e OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 intentfs --intent INT-001 -- claude
  intentfs container --source /src --mountpoint /workspace --intent INT-001 -- make test`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("intent", os.Getenv("INTENTFS_INTENT"), "pin the agent's session to this intent (default $INTENTFS_INTENT)")
			fs.String("source", "/src", "the checkout to mount (bind-mounted from the host)")
			fs.String("mountpoint", "/workspace", "where the agent works")
			fs.String("user", "", "the agent's UID[:GID] or account name (default: $INTENTFS_UID:$INTENTFS_GID, else the owner of --source)")
			fs.String("stop-grace", os.Getenv("INTENTFS_STOP_GRACE"), "how long CMD may take to exit after SIGTERM before its session is ended, as 7s or 7 (default 7s, or $INTENTFS_STOP_GRACE)")
			fs.String("name", "container", "the session's name, shown by intentfs sessions")
			fs.String("agent-files", "auto", `as for intentfs mount: the workspace-root files (CLAUDE.md, AGENTS.md) that get the agent guide and lessons, or "none"`)
			fs.String("transport", defaultTransport(), `as for intentfs mount: "auto", "uring" or "dev"`)
			fs.StringArray("signing-key", signingKeyDefault(), "as for intentfs mount: an SSH private key the daemon signs the ledger with; a secret mounted into the container, owned by root, mode 0600 (default $INTENTFS_SIGNING_KEY; see docs/signing.md)")
			// Where the agent's account is made: the tests' own, so that
			// they do not add one to the machine's /etc/passwd.
			fs.String("etc", "/etc", "the directory of passwd and group")
			fs.String("home", "/home", "the directory of home directories")
			_ = fs.MarkHidden("etc")
			_ = fs.MarkHidden("home")
		},
		run:        runContainer,
		stopAtArgs: true,
	}
}

func runContainer(a *app, args []string) error {
	grace, err := parseGrace(flagString(a, "stop-grace"))
	if err != nil {
		return err
	}
	code, err := container.Run(container.Options{
		StopGrace: grace,
		Source:    flagString(a, "source"), Mountpoint: flagString(a, "mountpoint"),
		Intent: flagString(a, "intent"), Name: flagString(a, "name"),
		Identity:  container.Identity{User: flagString(a, "user"), EnvUID: os.Getenv("INTENTFS_UID"), EnvGID: os.Getenv("INTENTFS_GID")},
		Argv:      args,
		Transport: flagString(a, "transport"), AgentFiles: flagString(a, "agent-files"),
		SigningKeys: signingKeys(a),
		Version:     version, Env: os.Environ(), Etc: flagString(a, "etc"), Home: flagString(a, "home"),
		// The daemon's errors only: its log, denials included, would mix
		// with the agent's output on the container's terminal (the agent
		// has .intentfs/denials; intentfs log shows them).
		Log: slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		fmt.Fprintf(a.stderr, "intentfs container: %v\n", err)
	}
	return exitCode(code)
}

// parseGrace reads a stop grace: a duration (7s, 1500ms) or whole
// seconds (7); empty is the default.
func parseGrace(v string) (time.Duration, error) {
	if v == "" {
		return container.DefaultStopGrace, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, usagef("--stop-grace (or INTENTFS_STOP_GRACE) must be a positive duration such as 7s or a number of seconds, not %q", v)
	}
	return d, nil
}

// signingKeyDefault is $INTENTFS_SIGNING_KEY, the container's mounted
// secret, as the default of --signing-key.
func signingKeyDefault() []string {
	if k := os.Getenv("INTENTFS_SIGNING_KEY"); k != "" {
		return []string{k}
	}
	return nil
}

func signingKeys(a *app) []string {
	keys, _ := a.fs.GetStringArray("signing-key")
	return keys
}
