#!/bin/sh
# The intentfs devcontainer feature's entrypoint: runs at every container
# start, before the container's command, and mounts the source at the
# mountpoint. A failure is reported and does not keep the container from
# starting (you could not open it to see why otherwise).
. /usr/local/share/intentfs/devcontainer.env
as_root=""
[ "$(id -u)" = 0 ] || as_root="sudo -n"

if grep -qs " $INTENTFS_MOUNTPOINT fuse.intentfs " /proc/mounts; then
    : # mounted already (the entrypoint runs again on a restart)
elif [ ! -d "$INTENTFS_SOURCE/.orchestration" ]; then
    echo "intentfs: $INTENTFS_SOURCE has no .orchestration/: run 'intentfs init $INTENTFS_SOURCE' in the container, edit .orchestration/active_intents.yaml, then '$as_root intentfs mount $INTENTFS_SOURCE $INTENTFS_MOUNTPOINT'" >&2
else
    if ! $as_root intentfs mount "$INTENTFS_SOURCE" "$INTENTFS_MOUNTPOINT" ${INTENTFS_INTENT:+--intent "$INTENTFS_INTENT"} ${INTENTFS_SIGNING_KEY:+--signing-key "$INTENTFS_SIGNING_KEY"}; then
        echo "intentfs: mounting $INTENTFS_SOURCE at $INTENTFS_MOUNTPOINT failed (see above). The container needs \"runArgs\": [\"--device\", \"/dev/fuse\"] in devcontainer.json; the feature adds SYS_ADMIN and apparmor=unconfined." >&2
    fi
fi
exec "$@"
