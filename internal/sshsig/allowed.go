package sshsig

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/intentfs/intentfs/internal/safeio"
)

// MaxAllowedSignersBytes bounds an allowed-signers file read.
const MaxAllowedSignersBytes = 1 << 20

// Signer is one line of an allowed-signers file: a key, the identities
// it signs as, and where and when it may sign.
type Signer struct {
	// Principals are the line's identity patterns (user@example.com,
	// *@example.com).
	Principals []string
	Key        ssh.PublicKey
	// Namespaces is the namespaces= pattern list; "" allows any.
	Namespaces string
	// ValidAfter and ValidBefore bound when the key may sign; zero is
	// unbounded.
	ValidAfter, ValidBefore time.Time
}

// AllowedSigners is an allowed-signers file, in the format ssh-keygen -Y
// verify reads (ssh-keygen(1), ALLOWED SIGNERS) and git's
// gpg.ssh.allowedSignersFile names.
type AllowedSigners struct {
	Signers []Signer
	// CertAuthorities counts cert-authority lines: they allow only
	// certificates their key signed, which this package does not verify,
	// so they allow nothing here.
	CertAuthorities int
}

// LoadAllowedSigners reads an allowed-signers file: a regular file of at
// most MaxAllowedSignersBytes, not reached through a symlink.
func LoadAllowedSigners(path string) (*AllowedSigners, error) {
	data, err := safeio.ReadFile(filepath.Dir(path), filepath.Base(path), MaxAllowedSignersBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("the allowed signers file %s does not exist", path)
		}
		return nil, fmt.Errorf("the allowed signers file %s: %w", path, err)
	}
	return ParseAllowedSigners(path, data)
}

// ParseAllowedSigners parses an allowed-signers file named name. A line
// that does not parse is an error naming the file and line: a signers
// file that says less than its author meant must not quietly allow less
// (or more).
func ParseAllowedSigners(name string, data []byte) (*AllowedSigners, error) {
	a := &AllowedSigners{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), MaxAllowedSignersBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, ca, err := parseSignerLine(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w (each line: PRINCIPALS [OPTIONS] KEYTYPE BASE64KEY [COMMENT], as ssh-keygen -Y verify reads)", name, n, err)
		}
		if ca {
			a.CertAuthorities++
			continue
		}
		a.Signers = append(a.Signers, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return a, nil
}

func parseSignerLine(line string) (s Signer, certAuthority bool, err error) {
	principals, rest, err := firstField(line)
	if err != nil {
		return s, false, err
	}
	for _, p := range strings.Split(principals, ",") {
		if p == "" {
			return s, false, errors.New("an empty principal")
		}
		s.Principals = append(s.Principals, p)
	}
	// The rest is an authorized_keys line: [options] keytype key [comment].
	key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return s, false, fmt.Errorf("the key: %w", err)
	}
	s.Key = key
	for _, o := range options {
		name, value, hasValue := strings.Cut(o, "=")
		value = strings.Trim(value, `"`)
		switch strings.ToLower(name) {
		case "cert-authority":
			certAuthority = true
		case "namespaces":
			s.Namespaces = value
		case "valid-after":
			if s.ValidAfter, err = parseTimestamp(value); err != nil {
				return s, false, err
			}
		case "valid-before":
			if s.ValidBefore, err = parseTimestamp(value); err != nil {
				return s, false, err
			}
		default:
			return s, false, fmt.Errorf("unknown option %q", name)
		}
		if !hasValue && !strings.EqualFold(name, "cert-authority") {
			return s, false, fmt.Errorf("option %q needs a value", name)
		}
	}
	return s, certAuthority, nil
}

// firstField splits off the principals field, which may be quoted.
func firstField(line string) (string, string, error) {
	if strings.HasPrefix(line, `"`) {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return "", "", errors.New("unterminated quoted principals")
		}
		return line[1 : end+1], strings.TrimSpace(line[end+2:]), nil
	}
	i := strings.IndexAny(line, " \t")
	if i < 0 {
		return "", "", errors.New("no key after the principals")
	}
	return line[:i], strings.TrimSpace(line[i:]), nil
}

// parseTimestamp reads YYYYMMDD or YYYYMMDDHHMM[SS], in UTC with a
// trailing Z, else in local time, as ssh-keygen does.
func parseTimestamp(v string) (time.Time, error) {
	loc := time.Local
	if t, ok := strings.CutSuffix(v, "Z"); ok {
		v, loc = t, time.UTC
	}
	for _, layout := range []string{"20060102", "200601021504", "20060102150405"} {
		if len(v) == len(layout) {
			if t, err := time.ParseInLocation(layout, v, loc); err == nil {
				return t, nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %q is not YYYYMMDD[HHMM[SS]][Z]", v)
}

// Allowed returns the principals of the lines that allow key to sign in
// namespace at time at; none when no line does.
func (a *AllowedSigners) Allowed(key ssh.PublicKey, namespace string, at time.Time) []string {
	var out []string
	want := key.Marshal()
	for _, s := range a.Signers {
		switch {
		case !bytes.Equal(s.Key.Marshal(), want):
		case s.Namespaces != "" && !matchPatternList(namespace, s.Namespaces):
		case !s.ValidAfter.IsZero() && at.Before(s.ValidAfter):
		case !s.ValidBefore.IsZero() && !at.Before(s.ValidBefore):
		default:
			out = append(out, s.Principals...)
		}
	}
	return out
}

// matchPatternList is OpenSSH's pattern-list match: comma-separated
// wildcard patterns (* and ?), a leading ! negating one; a negated match
// denies whatever else matches.
func matchPatternList(s, list string) bool {
	ok := false
	for _, p := range strings.Split(list, ",") {
		neg := strings.HasPrefix(p, "!")
		if matchWildcard(s, strings.TrimPrefix(p, "!")) {
			if neg {
				return false
			}
			ok = true
		}
	}
	return ok
}

// matchWildcard matches s against p, where * is any run of bytes and ?
// one byte: greedy, backtracking to the last star only, so it is linear
// in practice whatever the pattern.
func matchWildcard(s, p string) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			si++
			pi++
		case star >= 0:
			mark++
			si, pi = mark, star+1
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
