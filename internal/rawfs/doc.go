// Package rawfs wraps the raw request handler go-fuse serves
// (fuse.RawFileSystem), below the node tree: each wrapper sees every
// request of one kind and forwards it. OpCounter counts requests by
// opcode, OpendirElider spares directory opens their OPENDIR and
// RELEASEDIR round trips, and CallerScope runs OPEN and CREATE with the
// caller's credentials. None of them decides anything: the decisions are
// the nodes' (fsnode).
package rawfs
