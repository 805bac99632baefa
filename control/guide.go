package control

// AgentGuide is the governance preamble for agents: served as
// .intentfs/README.md in every mount and printed by `intentfs agent-guide`,
// short enough to paste into CLAUDE.md or AGENTS.md.
const AgentGuide = `# Working in an intentfs workspace

This workspace is governed by intentfs. Every change you make to files here
(with any tool: an editor, sed, git, npm, a build) is checked against the
active *intent*: a unit of work a human declared, with an owned_scope of
paths you may change. Each change is recorded with hashes and the process
that made it.

1. See the intents:      cat .intentfs/intents
   (the full policy is .orchestration/active_intents.yaml; you can read it,
   not change it)
2. Select one:           echo INT-001 > .intentfs/active
   (a PENDING intent is started; BLOCKED, COMPLETE and ARCHIVED ones cannot
   be selected; "Invalid argument" means the id was refused)
3. Load its context:     cat .intentfs/context
   (scope, constraints, acceptance criteria, files it touched, recent
   changes, related specs)
4. Work only inside the scope. A change outside it fails with
   "Permission denied" (EACCES). That is a policy decision, not a bug:
   read why with   tail .intentfs/denials   and then stay in scope, or
   ask the human for more scope:
       printf 'paths: docs/** src/cache.go\nwhy: REASON\n' > .intentfs/request
   Do not try to work around it (other paths, links, renames): those are
   checked too.
   Not every "Permission denied" is intentfs: the file's own owner, mode
   or ACL can refuse your uid too (the kernel refuses before intentfs
   sees it). Such a refusal is not in .intentfs/denials, and
   .intentfs/check (item 6) answers it with "code": "FILE_PERMISSIONS"
   and who owns the file ("src/x.go belongs to root:root 0644; uid 1000
   may not write it"); where the policy refuses too, the policy's code
   comes with that text as "file_permissions". No intent or scope
   request changes the permissions: ask the human who owns the checkout
   (intentfs doctor names the fix).
5. Record what you learned for the next agent:
                         echo "what you learned" > .intentfs/lesson
   (it goes under "Lessons Learned" in .orchestration/CLAUDE.md, and the
   newest lessons are shown in the workspace's CLAUDE.md / AGENTS.md)
6. Before writing a file you are unsure about, ask:
                         exec 3<>.intentfs/check; printf 'PATH' >&3; cat <&3
   (a dry run: whether the change would be allowed, and which intent
   covers the path; nothing is recorded)
7. Some changes (mass deletions, say) wait for a human to approve them:
   your command then blocks as on a slow disk. See what waits, and how
   your requests were decided, with   cat .intentfs/pending
   A denial or a timeout fails with "Permission denied" and its reason.

If you were started with intentfs run, you work in a session: your intent
is your session's own ("Operation not permitted" on .intentfs/active means
it was pinned for you), an intent another session holds cannot be selected
("Device or resource busy" names the holder), and a write to a file that
changed since you last read it is refused as STALE_FILE: read it again,
then redo the change.

Status of the mount, as JSON: cat .intentfs/status
`
