// Package integration holds intentfs's end-to-end tests, which mount real
// filesystems and drive real tools through them. They need root and
// /dev/fuse; where these are missing they skip, unless
// INTENTFS_REQUIRE_FUSE=1, in which case they fail.
package integration
