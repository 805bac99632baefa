// Package docscheck holds no code: its tests keep the documentation true
// to the repository. They check that ARCHITECTURE.md's package table lists
// exactly the packages `go list ./...` reports, that every relative link
// in README.md, ARCHITECTURE.md, SECURITY.md and docs/*.md reaches an
// existing file (and heading, where it names one), and that the README
// stays short enough to read before the manual.
package docscheck
