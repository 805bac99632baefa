package testenv

import "os/exec"

// SeedTree is the source tree most tests mount: a path to its content.
func SeedTree() map[string]string {
	return map[string]string{
		"README.md":                    "# project\n",
		"main.go":                      "package main\n",
		"lib/util.go":                  "package lib\n",
		"lib/deep/x.go":                "package deep\n",
		"src/existing.go":              "package src\n\nfunc A() {}\n",
		"docs/api.md":                  "api\n",
		"docs/other.md":                "other\n",
		".git/HEAD":                    "ref: refs/heads/main\n",
		".git/config":                  "[core]\n",
		".git/hooks/pre-commit.sample": "#!/bin/sh\n",
	}
}

// EqualTrees says whether two trees (path to content) are the same.
func EqualTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// RunCmd runs a command and returns its combined output.
func RunCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
