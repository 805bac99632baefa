package main

import (
	"fmt"
	"strings"
	"time"
)

// progress draws a bar on stderr when it is a terminal, at most ten times
// a second; elsewhere it stays silent.
type progress struct {
	a     *app
	label string
	on    bool
	last  time.Time
}

func newProgress(a *app, label string) *progress {
	return &progress{a: a, label: label, on: isTerminal(a.stderr)}
}

func (p *progress) update(done, total int64) {
	if !p.on || time.Since(p.last) < 100*time.Millisecond || total <= 0 {
		return
	}
	p.last = time.Now()
	const width = 30
	n := int(done * width / total)
	fmt.Fprintf(p.a.stderr, "\r%s [%s%s] %3d%%", p.label, strings.Repeat("#", n), strings.Repeat(".", width-n), done*100/total)
}

func (p *progress) done() {
	if p.on && !p.last.IsZero() {
		fmt.Fprint(p.a.stderr, "\r\033[K")
	}
}
