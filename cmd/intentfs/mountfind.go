package main

import (
	"github.com/intentfs/intentfs/internal/registry"

	"context"
	"errors"
	"os"
	"os/user"
	"time"

	"github.com/intentfs/intentfs/control"
)

// noMountError means no running mount matched (exit 3).
type noMountError struct{ err error }

func (e noMountError) Error() string { return e.err.Error() }
func (e noMountError) Unwrap() error { return e.err }

// findMount resolves --mount, the current directory, or the only mount.
func findMount(mountpoint string) (registry.Entry, error) {
	cwd, _ := os.Getwd()
	e, err := registry.DefaultRegistry().Find(mountpoint, cwd)
	if err != nil {
		return e, noMountError{err}
	}
	return e, nil
}

// call sends a request to a mount's daemon.
func call(e registry.Entry, req control.Request) (*control.Response, error) {
	if u, err := user.Current(); err == nil {
		req.User = u.Username
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := control.Call(ctx, e.Socket, req)
	if err != nil && resp == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, errors.New("the daemon did not answer within 60s")
	}
	return resp, err
}
