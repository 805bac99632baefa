// Package fuseuring serves a FUSE mount over io_uring (FUSE-over-io_uring,
// Linux 6.14+), with go-fuse's ProtocolServer doing the parsing and the
// replies.
//
// The kernel's side is fs/fuse/dev_uring.c. After INIT, in which the
// daemon answers FUSE_OVER_IO_URING, the kernel holds every request until
// each of its queues (one per possible CPU) has a ring entry: a header
// buffer and a payload buffer the daemon registers with
// FUSE_IO_URING_CMD_REGISTER, an IORING_OP_URING_CMD on /dev/fuse. From
// then on a request made on CPU n goes to queue n: the kernel copies it
// into a free entry's buffers and completes that entry's command. The
// daemon answers in the same buffers and, with
// FUSE_IO_URING_CMD_COMMIT_AND_FETCH, hands in the reply and the entry
// for the next request in one system call, where /dev/fuse takes a write
// and a read.
//
// Not everything moves to the ring: FORGET and INTERRUPT still arrive on
// /dev/fuse (the kernel's fuse_io_uring_ops send only requests through
// the ring), and notifications and passthrough backing files still go
// through /dev/fuse. Both are served here by one ProtocolServer, so an
// INTERRUPT finds the request it interrupts whichever way that came.
//
// Each entry is served by its own goroutine on its own OS thread with its
// own small ring: the thread that submits an entry's command is the task
// the kernel copies the next request in, so it stays the same thread.
// The ring is registered with that thread and its descriptor closed
// (uring.Ring.DropFd): entries cost the daemon no descriptors, which stay
// for what the daemon bounds by its descriptor limit.
// Entries are added to a queue while all of its entries are busy (a
// request that blocks, such as SETLKW or a change held for approval,
// keeps its entry), up to a bound. A request that arrives while every
// entry of its queue is busy waits in the kernel until an entry commits
// a reply; when the busy entries are all long waits, the stall watch
// (stall.go) sends a request of its own on that queue so that one does.
package fuseuring
