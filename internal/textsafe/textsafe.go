// Package textsafe escapes names and other text an agent can shape before
// they are printed to a terminal or written into a text file intentfs
// keeps (intent_map.md, lessons, .intentfs/denials, log output). A file
// name may hold any byte but '/' and NUL: a newline in it can start a line
// of its own in a markdown file, an escape sequence can rewrite the
// terminal that prints it, and bytes that are not UTF-8 are lost by
// anything that expects text.
//
// Escape is reversible (Unescape undoes it), so a file that stores escaped
// names can read them back exactly:
//
//	\\          a backslash
//	\n \r \t    newline, carriage return, tab
//	\xNN        any other byte below 0x20, DEL, or a byte that is not
//	            part of valid UTF-8
//	\uNNNN      a C1 control, a line or paragraph separator, or a Unicode
//	            format character (bidi overrides, zero-width characters)
//	\UNNNNNNNN  the same above U+FFFF
//
// Everything else, including all printable non-ASCII text, is kept as is.
package textsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every character that could forge text escaped.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	return escape(s, false)
}

// EscapeContent escapes file content for showing it (a diff, a blame):
// as Escape does, except that newlines, tabs and backslashes are kept as
// they are, so the text keeps its lines and indentation and code reads as
// written. Carriage returns, escape sequences and every other control are
// escaped: none reaches the terminal. Unlike Escape it is not reversible,
// and is meant for output a person reads, never for text read back.
func EscapeContent(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c >= 0x80 {
			return escape(s, true)
		}
	}
	return s
}

// escape is Escape, keeping newlines, tabs and backslashes if content.
func escape(s string, content bool) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case content && (r == '\\' || r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape is the fast path: most names are plain ASCII.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80 {
			return true
		}
	}
	return false
}

// unsafeRune reports a rune above ASCII that can change how the text
// around it shows: C1 controls, line and paragraph separators, and format
// characters (bidi overrides, zero-width joiners and spaces).
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r)
}

// Unescape undoes Escape. A malformed escape is an error, never guessed.
func Unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("a trailing backslash in %q", s)
		}
		i++
		switch c := s[i]; c {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'x', 'u', 'U':
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			if i+width >= len(s) {
				return "", fmt.Errorf("a short \\%c escape in %q", c, s)
			}
			v, err := strconv.ParseUint(s[i+1:i+1+width], 16, 32)
			if err != nil {
				return "", fmt.Errorf("a bad \\%c escape in %q: %w", c, s, err)
			}
			if c == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
			i += width
		default:
			return "", fmt.Errorf("an unknown escape \\%c in %q", c, s)
		}
	}
	return b.String(), nil
}
