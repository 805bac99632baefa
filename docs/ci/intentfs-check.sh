#!/bin/sh
# intentfs-check.sh: the intentfs gate for a pull request, for any CI.
#
# Run it in a clone of the repository with the pull request's head
# checked out (HEAD), naming the branch the pull request goes into:
#
#   sh intentfs-check.sh main
#
# It fetches the base branch and the intentfs notes (the ledger's
# records) from the remote, then checks every commit from the base to
# HEAD with the rules (policy and ignore files) read from the base
# branch's commit: the pull request cannot change the rules it is judged
# by, and a change to them in the pull request fails the check until a
# human lands it on the base.
#
# Run this file as the base branch has it, not as the pull request does
# (the pull request could rewrite it): see docs/ci/github-actions.yml.
#
# Environment:
#   INTENTFS         the intentfs binary (default: intentfs on $PATH)
#   INTENTFS_REMOTE  the remote to fetch from (default: origin)
#   INTENTFS_ALLOWED_SIGNERS
#                    a path in the base branch of an allowed-signers file
#                    (e.g. .github/allowed_signers): only records that a
#                    checkpoint signed by one of its keys covers count
#                    (docs/signing.md). Read from the base branch's
#                    commit, so the pull request cannot add its own key.
#                    Unset: signatures are not checked.
#
# Exit status: 0 when every change is accounted for, 1 when check found a
# problem, 2 on a usage error, other values when git or intentfs failed.
set -eu

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 BASE_BRANCH   (e.g. main; run with the pull request checked out)" >&2
	exit 2
fi
base_branch=$1
remote=${INTENTFS_REMOTE:-origin}
intentfs=${INTENTFS:-intentfs}

case $base_branch in
-* | *..* | *[[:space:]]*)
	echo "$0: $base_branch is not a branch name" >&2
	exit 2
	;;
esac

# The base branch as the remote has it now, into a ref of this clone's
# own (a CI checkout may have fetched only the pull request).
git fetch --quiet --no-tags "$remote" "+refs/heads/$base_branch:refs/remotes/$remote/$base_branch"
base=$(git rev-parse --verify --end-of-options "refs/remotes/$remote/$base_branch^{commit}")
head=$(git rev-parse --verify HEAD^{commit})

# The records: the remote's notes, merged by record id. A remote without
# notes yet is no error: every change is then reported as never written
# through the mount.
if git ls-remote --exit-code "$remote" refs/notes/intentfs >/dev/null 2>&1; then
	"$intentfs" notes fetch "$remote"
else
	echo "note: $remote has no intentfs notes (refs/notes/intentfs) yet"
fi

# Commit ids, not names: nothing in the clone can move them meanwhile.
# The rules come from the range's base: the base branch's commit, and so
# do the allowed signers.
if [ -n "${INTENTFS_ALLOWED_SIGNERS:-}" ]; then
	signers=$(mktemp)
	trap 'rm -f "$signers"' EXIT
	if ! git cat-file blob "$base:$INTENTFS_ALLOWED_SIGNERS" >"$signers"; then
		echo "$0: the base branch $base_branch has no $INTENTFS_ALLOWED_SIGNERS (INTENTFS_ALLOWED_SIGNERS)" >&2
		exit 3
	fi
	status=0
	"$intentfs" check --allowed-signers "$signers" "$base..$head" || status=$?
	exit "$status"
fi
exec "$intentfs" check "$base..$head"
