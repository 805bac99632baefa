# intentfs in a container: the agent works in /workspace, a governed FUSE
# mount of the checkout bind-mounted at /src, which it cannot reach. Every
# change is checked against the intent and recorded in
# /src/.orchestration/agent_trace.jsonl, on the host.
#
#   docker build -t intentfs .
#   docker run --rm -it --device /dev/fuse --cap-add SYS_ADMIN \
#       --security-opt apparmor=unconfined -v "$PWD:/src" intentfs --intent INT-001 -- CMD...
#
# See docs/agents-and-containers.md, "Running agents in a container". Add the agent's own
# tools in an image of your own: FROM intentfs, then RUN apt-get install ...

FROM docker.io/library/golang:1.26-bookworm AS build
WORKDIR /build
# Modules first: this layer is reused until go.mod or go.sum change. The
# module and build caches persist between builds on the same machine
# (BuildKit and podman/buildah cache mounts).
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go mod download
COPY . .
ARG VERSION=container
# Static: the runtime image needs no C library of the builder's version,
# and os/user reads /etc/passwd itself, where the entrypoint adds the agent.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/intentfs ./cmd/intentfs

FROM docker.io/library/debian:bookworm-slim
# fuse3: fusermount3 and the kernel module's userspace side; git: the agent
# and intentfs's commit checks use it; ca-certificates: for git over https.
# (util-linux, for the agent's shell tools, is part of every Debian image.)
# safe.bareRepository=explicit: git in the container never takes a
# directory an agent wrote (HEAD, objects/, refs/, a config naming a
# program) for a bare repository (docs/security.md, "Known limits").
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends fuse3 git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && git config --system safe.bareRepository explicit
COPY --from=build /out/intentfs /usr/local/bin/intentfs
RUN mkdir -p /src /workspace
# What `intentfs init` run in this image (--entrypoint intentfs IMAGE init
# /src) gives as the next step: /src is the host's checkout, and the
# container is gone once init is done.
ENV INTENTFS_INIT_NEXT="start the container again: docker run --rm -it --device /dev/fuse --cap-add SYS_ADMIN --security-opt apparmor=unconfined -v \"\$PWD:/src\" IMAGE --intent ID -- CMD"
WORKDIR /workspace
# The entrypoint runs as root: it mounts, then runs the agent's command as
# an unprivileged user with the uid and gid of /src's owner.
ENTRYPOINT ["/usr/local/bin/intentfs", "container"]
