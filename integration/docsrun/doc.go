// Package docsrun runs the documentation's commands: every fenced block
// of README.md, SECURITY.md and docs/*.md that a reader would type (a
// block tagged sh, bash, shell or console, or an untagged block that
// starts with a command or holds a "$ " line) is either run by a test
// here or carries, on the line before its fence, an HTML comment that
// says why not:
//
//	<!-- docs-test: run -->            the block runs as one script; it must exit 0
//	<!-- docs-test: transcript -->     its "$ " lines run; their output is compared with the doc
//	<!-- docs-test: skip — REASON -->  not run, for the reason given (which names what covers it)
//
// TestEveryDocCommandBlockIsRunOrMarked fails on an unmarked block and on
// a run or transcript block that no page scenario here runs, so the
// manual cannot gain a command nobody runs. TestDocPages runs each page's
// blocks for real, as root, against a real mount in a temporary
// directory, with the doc's example paths and users replaced by the
// test's (the substitution table of each page, in pages_test.go).
//
// A transcript's output is compared line by line, blank lines ignored on
// both sides: "..." (or "…") matches any text within a line, and a line
// that is only "..." matches any number of lines; any run of digits
// matches any run of digits, a run of six or more hex digits holding a
// digit matches any such run (hashes, ids, times, pids, sizes), a
// duration (0s, 1.5ms, 1m59s) matches any duration, and any
// run of spaces matches any run of spaces (column widths). A command the
// doc shows no output for must exit 0 and its output is not compared; a
// command with output may exit non-zero (the doc shows a refusal).
package docsrun
