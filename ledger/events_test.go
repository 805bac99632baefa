package ledger

import (
	"os"
	"strings"
	"testing"
)

func TestFilterValidate(t *testing.T) {
	tests := []struct {
		name    string
		filter  Filter
		wantErr string
	}{
		{name: "empty", filter: Filter{}},
		{name: "known events and a glob", filter: Filter{Events: []Event{EventWrite, EventDenied, EventRevert}, PathGlob: "src/**/*.go"}},
		{name: "a glob with a class", filter: Filter{PathGlob: "src/[ab].txt"}},
		{name: "an unknown event", filter: Filter{Events: []Event{EventWrite, "bogus"}}, wantErr: `unknown event "bogus"`},
		{name: "an unclosed class", filter: Filter{PathGlob: "src/["}, wantErr: `the path glob "src/[" does not parse`},
		{name: "an unclosed alternative", filter: Filter{PathGlob: "{a,b"}, wantErr: "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.filter.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestKnownEventsListsEveryEvent: a new event constant must be added to
// KnownEvents, or `intentfs log --event` would refuse it.
func TestKnownEventsListsEveryEvent(t *testing.T) {
	src := readSource(t, "record.go")
	known := map[Event]bool{}
	for _, e := range KnownEvents() {
		known[e] = true
	}
	n := 0
	for _, line := range strings.Split(src, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 4 && strings.HasPrefix(fields[0], "Event") && fields[1] == "Event" && fields[2] == "=" {
			n++
			if ev := Event(strings.Trim(fields[3], `"`)); !known[ev] {
				t.Errorf("%s (%q) is not in KnownEvents", fields[0], ev)
			}
		}
	}
	if n != len(KnownEvents()) {
		t.Errorf("record.go declares %d events, KnownEvents lists %d", n, len(KnownEvents()))
	}
}

func readSource(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLedgerDocNamesEveryEventAndClass: the ledger reference,
// docs/ledger.md, lists every event and mutation class a record may carry.
func TestLedgerDocNamesEveryEventAndClass(t *testing.T) {
	doc := readSource(t, "../docs/ledger.md")
	names := []string{}
	for _, e := range KnownEvents() {
		names = append(names, string(e))
	}
	for _, c := range []MutationClass{ClassCreation, ClassDeletion, ClassRename, ClassEvolution, ClassMetadata, ClassDocumentation, ClassConfiguration, ClassASTRefactor} {
		names = append(names, string(c))
	}
	_, section, _ := strings.Cut(doc, "- **`event`**:")
	section, _, _ = strings.Cut(section, "- **`pre_hash`")
	for _, n := range names {
		if !strings.Contains(section, "`"+n+"`") {
			t.Errorf("docs/ledger.md's event and mutation_class lists lack `%s`", n)
		}
	}
}
