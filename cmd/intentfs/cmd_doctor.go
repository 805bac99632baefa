package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/doctor"
	"github.com/intentfs/intentfs/internal/textsafe"
	"github.com/intentfs/intentfs/policy"
)

func doctorCmd() *command {
	return &command{
		name: "doctor", summary: "check a setup and name each problem and its fix", usage: "",
		help: `Checks what intentfs needs and what keeps the agent governed, and names
each problem with its fix: /dev/fuse; FUSE over io_uring
(/sys/module/fuse/parameters/enable_uring); a lock file left by a mount run
as another user; whether the agent runs as the checkout's owner (or root);
whether the agent can reach the source directly, around the mount (it must
not); and whether the agent may write the checkout's files, which the
kernel checks by the source's owner and mode before intentfs decides
anything (such refusals are "Permission denied" that .intentfs/check
reports as FILE_PERMISSIONS, not policy denials).

The agent is the user named by --agent, else the user of a live session
of the mount, else a user named "agent". The checkout is the mount's
source, else --source, else the current directory if it has a policy.
Nothing is changed.

Exit codes: 0 no problem found (notes may be printed), 1 problems found,
2 bad usage.

Examples:
  sudo intentfs doctor --mount /workspace
  intentfs doctor --source ~/src/app --agent agent
  intentfs doctor --json | jq '.findings[] | select(.status == "problem")'`,
		flags: func(fs *pflag.FlagSet) {
			fs.String("mount", "", "the mountpoint to examine (default: the mount containing the current directory, or the only one)")
			fs.String("source", "", "the checkout to examine when it is not mounted")
			fs.String("agent", "", "the user (name or uid) the agent runs as")
			fs.Bool("json", false, "print the findings as JSON")
		},
		run: runDoctor,
	}
}

// doctorReport is what doctor prints with --json.
type doctorReport struct {
	Source     string           `json:"source,omitempty"`
	Mountpoint string           `json:"mountpoint,omitempty"`
	Agent      *doctor.Agent    `json:"agent,omitempty"`
	Findings   []doctor.Finding `json:"findings"`
	Problems   int              `json:"problems"`
}

func runDoctor(a *app, args []string) error {
	if len(args) != 0 {
		return usagef("unexpected arguments %v", args)
	}
	mnt, _ := a.fs.GetString("mount")
	source, _ := a.fs.GetString("source")
	agentName, _ := a.fs.GetString("agent")
	rep := doctorReport{}
	var pre []doctor.Finding
	st, err := doctorMountStatus(mnt)
	switch {
	case st != nil:
		rep.Mountpoint, rep.Source = st.Mountpoint, st.Source
		pre = append(pre, doctor.Finding{Check: "mount", Status: doctor.OK, Detail: fmt.Sprintf("%s is an intentfs mount of %s (transport %s)", st.Mountpoint, st.Source, transportName(st.Transport))})
	case mnt != "":
		pre = append(pre, doctor.Finding{Check: "mount", Status: doctor.Problem, Detail: fmt.Sprintf("cannot examine the mount %s: %v", mnt, err),
			Fix: "mount it as root: sudo intentfs mount SOURCE " + mnt + " (or name the checkout with --source)"})
	}
	if source != "" {
		abs, err := filepath.Abs(source)
		if err != nil {
			return fmt.Errorf("--source %s: %w", source, err)
		}
		rep.Source = abs
	}
	if rep.Source == "" {
		if cwd, err := os.Getwd(); err == nil {
			if _, err := os.Lstat(filepath.Join(cwd, policy.IntentsFile)); err == nil {
				rep.Source = cwd
			}
		}
	}
	switch {
	case agentName != "":
		ag, err := doctor.LookupAgent(agentName)
		if err != nil {
			return usagef("--agent: %v", err)
		}
		ag.Source = "--agent"
		rep.Agent = ag
	case st != nil:
		for _, s := range st.Sessions {
			if s.Live {
				rep.Agent = &doctor.Agent{Name: s.User, Uid: s.Uid, Gid: s.Gid, Source: "session " + s.ID}
				if ag, err := doctor.LookupAgent(s.User); err == nil && ag.Uid == s.Uid {
					rep.Agent.Groups = ag.Groups
				}
				break
			}
		}
	}
	if rep.Agent == nil {
		if ag, err := doctor.LookupAgent("agent"); err == nil {
			ag.Source = `the user "agent"`
			rep.Agent = ag
		}
	}
	setup := doctor.Setup{Source: rep.Source, Mountpoint: rep.Mountpoint, Agent: rep.Agent, Self: uint32(os.Geteuid())}
	if rep.Agent != nil {
		setup.SafeDirectories = agentSafeDirectories(rep.Agent.Name)
	}
	rep.Findings = append(pre, doctor.Run(setup)...)
	rep.Problems = doctor.Problems(rep.Findings)
	if jsonOut(a) {
		if err := printJSON(a, rep); err != nil {
			return err
		}
	} else {
		printDoctor(a, &rep)
	}
	if rep.Problems > 0 {
		return silentFailure{}
	}
	return nil
}

// doctorMountStatus reads the status of the mount named (or found from
// the current directory), through its control socket or, for another
// user's mount, its .intentfs/status.
func doctorMountStatus(mnt string) (*control.Status, error) {
	e, err := findMount(mnt)
	var unlisted uncontrolledMountError
	if errors.As(err, &unlisted) {
		if unlisted.dead != nil {
			return nil, unlisted
		}
		return readStatusFile(unlisted.mount.Mountpoint)
	}
	if err != nil {
		return nil, err
	}
	resp, err := call(e, control.Request{Op: "status"})
	if err != nil {
		return nil, err
	}
	return resp.Status, nil
}

func printDoctor(a *app, rep *doctorReport) {
	w := a.stdout
	esc := textsafe.Escape
	src := "none"
	if rep.Source != "" {
		src = esc(rep.Source)
	}
	agent := "unknown (pass --agent USER)"
	if rep.Agent != nil {
		agent = fmt.Sprintf("%s, uid %d (from %s)", esc(rep.Agent.Name), rep.Agent.Uid, esc(rep.Agent.Source))
	}
	fmt.Fprintf(w, "checkout: %s\nagent:    %s\n\n", src, agent)
	for _, f := range rep.Findings {
		label := map[string]string{doctor.OK: "ok", doctor.Note: "note", doctor.Problem: "PROBLEM"}[f.Status]
		fmt.Fprintf(w, "%-8s %-17s %s\n", label, f.Check, esc(f.Detail))
		if f.Fix != "" {
			fmt.Fprintf(w, "%-8s %-17s fix: %s\n", "", "", esc(f.Fix))
		}
	}
	switch rep.Problems {
	case 0:
		fmt.Fprintf(w, "\nNo problem found.\n")
	case 1:
		fmt.Fprintf(w, "\n1 problem found.\n")
	default:
		fmt.Fprintf(w, "\n%d problems found.\n", rep.Problems)
	}
}

// agentSafeDirectories reads the safe.directory values the agent's git
// sees: git's system config and the agent's global ones. It returns nil
// when one of them exists but cannot be read (doctor then cannot tell).
func agentSafeDirectories(agent string) []string {
	files := []string{""} // "": git's system config, wherever git keeps it
	if u, err := user.Lookup(agent); err == nil && u.HomeDir != "" {
		files = append(files, filepath.Join(u.HomeDir, ".gitconfig"), filepath.Join(u.HomeDir, ".config", "git", "config"))
	}
	dirs := []string{}
	for _, f := range files {
		args := []string{"config", "--system", "--get-all", "safe.directory"}
		if f != "" {
			fh, err := os.Open(f)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil
			}
			fh.Close()
			args = []string{"config", "--file", f, "--get-all", "safe.directory"}
		}
		out, err := exec.Command("git", args...).Output()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
			return nil
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				dirs = append(dirs, l)
			}
		}
	}
	return dirs
}
