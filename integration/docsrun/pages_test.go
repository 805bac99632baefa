package docsrun

import "strings"

// The scenarios of the pages whose blocks run, and each page's
// substitution table: the doc's example paths and users, and what the
// test uses instead.

// gitRepo makes ./repo the way a reader has it: a clone of a project
// whose remote, origin, has main, which the agent may write through its
// group.
const gitRepo = `git init -q seed
mkdir -p seed/src seed/docs
printf 'package main\n\nfunc main() {}\n' > seed/src/main.go
printf '# app\n' > seed/README.md
git -C seed add -A
git -C seed commit -qm 'the project'
git clone -q --bare seed origin.git
git clone -q origin.git repo
share_with_agent repo
`

// scopePolicy is the policy the pages' $EDITOR writes.
const scopePolicy = `active_intents:
  - id: INT-001
    name: "API work"
    status: IN_PROGRESS
    owned_scope: ["src/**"]
`

// workspace stands for the docs' /workspace and agent.
func workspace() []repl {
	return []repl{
		{"--user agent", `--user "$AGENT"`},
		{"--agent agent", `--agent "$AGENT"`},
		{"/workspace", `"$MNT"`},
	}
}

// tryIt stands for the README's first two commands: the demo runs from
// this checkout; the test suite is what runs this very block, so its
// line stands for itself and is not run again.
func tryIt() []repl {
	return []repl{
		{"go run ./cmd/intentfs demo", `go -C "$MODULE" run ./cmd/intentfs demo`},
		{"go test -race ./...", "true"},
	}
}

// agentWork stands for the agent the docs start ("-- claude"): it adds
// a line to a file in its scope.
func agentWork() repl {
	return repl{"-- claude", `-- sh -c 'echo "// rate limits" >> src/main.go'`}
}

// observePolicy is observe-mode.md's policy as its setup block
// describes it.
const observePolicy = `enforcement: observe
active_intents:
  - id: INT-001
    name: "API work"
    status: IN_PROGRESS
    owned_scope: ["src/api/**"]
`

// mounted is a page's ./repo with the scope policy committed, mounted at
// $MNT.
const mounted = gitRepo + mountedRepo

// mountedRepo commits the page's policy in ./repo and mounts it at $MNT.
const mountedRepo = `intentfs init ./repo >/dev/null
"$EDITOR" repo/.orchestration/active_intents.yaml
git -C repo add .orchestration && git -C repo commit -qm "intentfs policy" && git -C repo push -q
intentfs mount ./repo "$MNT" >/dev/null
`

// observeAgentWork stands for observe-mode.md's agent: it writes a page
// outside its scope, which observe mode records as would-deny.
func observeAgentWork() repl {
	return repl{"-- claude", `-- sh -c 'mkdir docs && echo "# limits" > docs/a.md && echo "# quotas" > docs/b.md'`}
}

// observed is ./repo under observePolicy, mounted at $MNT, after its
// agent's work: observe-mode.md's setup block as the transcripts before
// it find it.
func observed() string {
	return gitRepo + `intentfs init ./repo >/dev/null
"$EDITOR" repo/.orchestration/active_intents.yaml
git -C repo add .orchestration && git -C repo commit -qm "intentfs policy" && git -C repo push -q
intentfs mount ./repo "$MNT" --intent INT-001 >/dev/null
` + substitute("intentfs run --mount /workspace --user agent --intent INT-001 -- claude\n", []repl{observeAgentWork()}, workspace())
}

func docPages() []page {
	return []page{
		{
			file:   "README.md",
			policy: scopePolicy,
			subst:  workspace(),
			steps: []step{
				{doc: "go run ./cmd/intentfs demo", subst: tryIt()},
				{glue: gitRepo, doc: "go build -o intentfs", subst: []repl{
					{"go build -o intentfs ./cmd/intentfs", `go -C "$MODULE" build -o "$T/intentfs" ./cmd/intentfs`},
					{"/usr/local/bin/", `"$BIN/"`},
					{"sudo intentfs watch", "run_for 2 intentfs watch"},
					agentWork(),
				}},
			},
		},
		{
			file:   "docs/using.md",
			policy: scopePolicy,
			subst:  workspace(),
			steps: []step{
				{doc: "go run ./cmd/intentfs demo", subst: tryIt()},
				{glue: gitRepo, doc: "go build -o intentfs", subst: []repl{
					{"go build -o intentfs ./cmd/intentfs", `go -C "$MODULE" build -o "$T/intentfs" ./cmd/intentfs`},
					{"/usr/local/bin/", `"$BIN/"`},
					{"sudo intentfs watch", "run_for 2 intentfs watch"},
					{"sudo intentfs unmount", "# still used below: intentfs unmount"},
					agentWork(),
				}},
				{doc: "cat .intentfs/intents", asAgent: true, subst: []repl{{"...work...", "true"}}},
				// The agent asks under the intent it works in, selected first.
				{doc: "printf 'paths: docs/api.md notes/**", asAgent: true, subst: []repl{{"printf", "echo INT-001 > .intentfs/active; printf"}}},
				// The request waits for a human, and says what it asks.
				{glue: `intentfs approvals --mount "$MNT" | grep -q 'docs/api.md'`, doc: "intentfs watch --mount /workspace --json", subst: []repl{{"intentfs watch", "run_for 2 intentfs watch"}}},
			},
		},
		{
			file:   "docs/doctor-and-permissions.md",
			policy: scopePolicy,
			subst:  append([]repl{{"~/src/app", "./repo"}}, workspace()...),
			steps: []step{
				{glue: mounted, doc: "sudo intentfs doctor --mount", subst: []repl{
					// The test's agent is not the machine's user "agent", doctor's default.
					{"doctor --mount /workspace", `doctor --mount /workspace --agent "$AGENT"`},
					{"doctor --json", `doctor --json --agent "$AGENT"`},
				}},
				{glue: `intentfs unmount "$MNT" >/dev/null
install -m 0644 -o root -g root /dev/null repo/src/x.go
intentfs mount ./repo "$MNT" --intent INT-001 >/dev/null
`, doc: "$ exec 3<>.intentfs/check", dir: "workspace", asUID: true},
			},
		},
		{
			file:   "docs/observe-mode.md",
			policy: observePolicy,
			subst:  workspace(),
			steps: []step{
				{glue: observed(), doc: "$ intentfs status", dir: "workspace"},
				{doc: "$ intentfs policy suggest", dir: "workspace"},
				// The setup block runs on a second checkout and mountpoint: the first is mounted.
				{glue: `git clone -q origin.git repo2 && share_with_agent repo2 && mkdir ws2`, doc: "intentfs init ./repo", subst: []repl{
					{"./repo", "./repo2"}, {"/workspace", `"$T/ws2"`}, observeAgentWork(),
				}},
				{doc: "intentfs status", dir: "workspace"},
			},
		},
		{
			file:   "docs/accept-and-privacy.md",
			policy: scopePolicy,
			subst:  workspace(),
			steps: []step{
				{glue: mounted + agentEdit() + `intentfs unmount "$MNT" >/dev/null
echo "// a human's edit" >> repo/src/main.go
echo "a note" > repo/notes.txt
`, doc: "$ intentfs verify --source ./repo"},
			},
		},
		{
			file:   "docs/effects.md",
			policy: scopePolicy,
			docT:   "/home/me",
			steps: []step{
				{glue: mounted, doc: "$ flock -x", dir: "workspace", asAgent: true},
				{glue: `git clone -q origin.git clone
mkdir -p clone/.orchestration
ln -s /dev/null clone/.orchestration/agent_trace.jsonl
cp repo/.orchestration/active_intents.yaml clone/.orchestration/
`, doc: "$ intentfs log --source ./clone"},
				{glue: `rm -rf clone && mkdir clone outside && ln -s ../outside clone/.orchestration`, doc: "$ intentfs init ./clone"},
			},
		},
		{
			file:   "docs/blame.md",
			policy: scopePolicy,
			steps: []step{
				{glue: gitRepo + `printf 'package api\n// human\n\nfunc util() {}\n' > repo/src/util.go
share_with_agent repo
` + strings.Replace(mountedRepo, `"$MNT"`, `"$MNT" --intent INT-001`, 1) + `(cd "$MNT" && as_agent sh -c 'echo "// agent" >> src/util.go')
wait_record src/util.go write
`, doc: "$ intentfs blame src/util.go", dir: "workspace"},
			},
		},
		{
			file:   "docs/ledger.md",
			policy: scopePolicy,
			// The synopsis with every optional flag given.
			subst: []repl{{"[", ""}, {"]", ""}, {"--limit N", "--limit 20"}, {"src/api/handler.go", "src/main.go"}},
			steps: []step{
				{glue: mounted + agentEdit(), doc: "intentfs log --intent INT-001", dir: "workspace"},
			},
		},
		{
			file:   "docs/git-and-ci.md",
			policy: scopePolicy,
			steps: []step{
				{glue: mounted + agentEdit() + `git -C repo add src/main.go && git -C repo commit -qm "rate limits"
echo "more" >> repo/README.md && git -C repo commit -qam "tidy"
`, doc: "$ intentfs check origin/main..HEAD", dir: "repo"},
				{doc: "intentfs notes sync", dir: "repo", subst: []repl{{"[origin]", "origin"}}},
				{doc: "git push origin refs/notes/intentfs", dir: "repo"},
			},
		},
		{
			file:   "docs/ci-gate.md",
			policy: scopePolicy,
			subst: []repl{
				{"/usr/local/bin/intentfs", `"$BIN/intentfs"`},
				{"sh intentfs-check.sh", `sh "$MODULE/docs/ci/intentfs-check.sh"`},
			},
			steps: []step{
				{glue: mounted + agentEdit() + pullRequests, doc: "$ intentfs check origin/main..origin/pr-ok", dir: "ci"},
				{doc: "$ intentfs check origin/main..origin/pr1", dir: "ci"},
				{doc: "INTENTFS=/usr/local/bin/intentfs sh intentfs-check.sh main", dir: "ci"},
			},
		},
		{
			file:   "docs/agents-and-containers.md",
			policy: scopePolicy,
			subst:  append([]repl{agentWork()}, workspace()...),
			steps: []step{
				{glue: mounted, doc: "sudo intentfs run --mount /workspace --user agent --intent INT-001 --name api"},
				{doc: "intentfs hook install claude", dir: "repo"},
				// The hook opens the mount by its absolute path, which
				// the agent reaches only through directories it may search.
				{glue: `intentfs unmount "$MNT" >/dev/null && intentfs mount ./repo "$MNT" --intent INT-001 >/dev/null
chmod 711 "$T" "$(dirname "$T")"`,
					doc: `echo '{"hook_event_name":"PreToolUse"`, dir: "workspace", asUID: true,
					subst: []repl{{`"cwd":"/workspace"`, `"cwd":"'"$MNT"'"`}}},
			},
		},
		{
			file:   "docs/ui.md",
			policy: scopePolicy,
			subst:  append([]repl{{"intentfs ui", "run_for 2 intentfs ui"}}, workspace()...),
			steps: []step{
				{glue: mounted, doc: "intentfs ui", dir: "workspace"},
			},
		},
		{
			file:   "docs/signing.md",
			policy: scopePolicy,
			subst:  append([]repl{{"/etc/intentfs", `"$T/etc/intentfs"`}}, workspace()...),
			steps: []step{
				{glue: gitRepo + strings.Replace(mountedRepo, `intentfs mount ./repo "$MNT" >/dev/null`, "", 1) + "mkdir -p etc\n", doc: "sudo install -d -m 0700 /etc/intentfs"},
				// The base holds the signers file CI trusts; the agent's
				// work is committed after it, its last checkpoint (written
				// at unmount) carried by the commit after.
				{glue: `mkdir -p home/.config/git repo/.github
echo "human@example.com namespaces=\"intentfs-ledger@intentfs\" $(cat etc/intentfs/signing_key.pub)" > home/.config/git/allowed_signers
cp home/.config/git/allowed_signers repo/.github/allowed_signers
git -C repo add .github && git -C repo commit -qm "CI's signers" && git -C repo push -q
` + agentEdit() + `git -C repo add src/main.go && git -C repo commit -qm "rate limits"
intentfs unmount "$MNT" >/dev/null
git -C repo commit -q --allow-empty -m "after the last checkpoint"
(cd repo && intentfs notes sync >/dev/null)
`, doc: `git show "origin/$BASE:.github/allowed_signers"`, dir: "repo", subst: []repl{{"$BASE", "main"}, {"$RUNNER_TEMP", "$T"}}},
				{doc: "git notes --ref=refs/notes/intentfs show HEAD", dir: "repo"},
			},
		},
	}
}

// pullRequests gives origin two pull-request branches: pr-ok, the
// agent's change written through the mount, with its notes pushed, and
// pr1, a change made in a clone outside any mount that also adds an
// ignore file; ci is a clone of origin with the notes fetched, where CI
// runs check.
const pullRequests = `git -C repo add src/main.go && git -C repo commit -qm "rate limits"
(cd repo && intentfs notes sync >/dev/null && git push -q origin HEAD:refs/heads/pr-ok && intentfs notes push origin >/dev/null)
git clone -q origin.git other
echo "build/" > other/.intentignore && echo "more" >> other/README.md
git -C other add -A && git -C other commit -qm "tidy" && git -C other push -q origin HEAD:refs/heads/pr1
git clone -q origin.git ci
(cd ci && intentfs notes fetch origin >/dev/null && git checkout -q -b pr-ok origin/pr-ok)
`

// agentEdit is the agent's work in a session: a line added to a file
// in its scope.
func agentEdit() string {
	return substitute("intentfs run --mount /workspace --user agent --intent INT-001 -- claude >/dev/null\n", []repl{agentWork()}, workspace())
}
