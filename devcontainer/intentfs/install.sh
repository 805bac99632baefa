#!/bin/sh
# The intentfs devcontainer feature's install step: runs as root while the
# image is built, with the feature's options as environment variables
# (INTENT, SOURCE, MOUNTPOINT, USER, VERSION). It installs intentfs and
# what a FUSE mount needs, and the script that mounts at container start.
set -eu
here=$(cd "$(dirname "$0")" && pwd)

INTENT=${INTENT:-}
SOURCE=${SOURCE:-/src}
MOUNTPOINT=${MOUNTPOINT:-/workspace}
AGENT_USER=${USER:-}
VERSION=${VERSION:-latest}
SIGNING_KEY=${SIGNINGKEY:-}

# The options are written into a shell file read at every start: refuse
# what would not stay one word there.
for v in "$INTENT" "$SOURCE" "$MOUNTPOINT" "$AGENT_USER" "$VERSION" "$SIGNING_KEY"; do
    case $v in
        *[!A-Za-z0-9._/:@+-]*) echo "intentfs feature: option value '$v' has characters other than letters, digits and ._/:@+-" >&2; exit 1 ;;
    esac
done
case $AGENT_USER in root|0|0:*)
    echo "intentfs feature: user must not be root: a root agent can undo every seal" >&2; exit 1 ;;
esac
case $SOURCE in /*) ;; *) echo "intentfs feature: source must be an absolute path" >&2; exit 1 ;; esac
case $MOUNTPOINT in /*) ;; *) echo "intentfs feature: mountpoint must be an absolute path" >&2; exit 1 ;; esac
case $SIGNING_KEY in ""|/*) ;; *) echo "intentfs feature: signingKey must be an absolute path" >&2; exit 1 ;; esac

if command -v apt-get >/dev/null; then
    missing=""
    command -v fusermount3 >/dev/null || missing="$missing fuse3"
    command -v git >/dev/null || missing="$missing git"
    [ -e /etc/ssl/certs/ca-certificates.crt ] || missing="$missing ca-certificates"
    if [ -n "$missing" ]; then
        apt-get update
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
        rm -rf /var/lib/apt/lists/*
    fi
elif ! command -v fusermount3 >/dev/null; then
    echo "intentfs feature: install fuse3 and git in the base image (only apt-based images are handled here)" >&2
    exit 1
fi

# intentfs itself: a binary carried in the feature folder, else go install.
if [ -x "$here/intentfs" ]; then
    install -m 0755 "$here/intentfs" /usr/local/bin/intentfs
elif command -v go >/dev/null; then
    GOBIN=/usr/local/bin CGO_ENABLED=0 go install "github.com/intentfs/intentfs/cmd/intentfs@$VERSION"
else
    echo "intentfs feature: put a built intentfs binary in the feature folder (CGO_ENABLED=0 go build ./cmd/intentfs), or install Go first (the go feature) so that it can be built" >&2
    exit 1
fi
/usr/local/bin/intentfs version

mkdir -p /usr/local/share/intentfs "$MOUNTPOINT"
cat > /usr/local/share/intentfs/devcontainer.env <<ENV
INTENTFS_SOURCE=$SOURCE
INTENTFS_MOUNTPOINT=$MOUNTPOINT
INTENTFS_INTENT=$INTENT
INTENTFS_AGENT_USER=$AGENT_USER
INTENTFS_SIGNING_KEY=$SIGNING_KEY
ENV
install -m 0755 "$here/devcontainer-start.sh" /usr/local/share/intentfs/devcontainer-start.sh
install -m 0755 "$here/intentfs-agent" /usr/local/bin/intentfs-agent
echo "intentfs feature: installed; $SOURCE is mounted at $MOUNTPOINT when the container starts"
