package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/intentfs/intentfs/ledger"
)

func jsonOut(a *app) bool {
	v, _ := a.fs.GetBool("json")
	return v
}

func printJSON(a *app, v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONLines prints records one JSON object a line, as the ledger
// holds them.
func printJSONLines(a *app, recs []*ledger.Record) error {
	enc := json.NewEncoder(a.stdout)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func jsonIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }

// escapeTerminal makes a line from elsewhere (a daemon's log, a process
// name) safe to print: control characters and invalid UTF-8 become \xNN,
// so they cannot move the cursor or rewrite what the user sees.
func escapeTerminal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (unicode.IsControl(r) && r != '\t') {
			for _, c := range []byte(s[i : i+size]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
