// Package ledgertest validates ledger lines against the Agent Trace 0.1.0
// JSON Schema. It is imported by tests only.
package ledgertest

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed testdata/agent-trace-0.1.0.schema.json
var schemaJSON []byte

const schemaURL = "https://agent-trace.dev/schemas/v1/trace-record.json"

// compile builds the schema once per test binary; formats (uuid,
// date-time, uri) are asserted, not just annotated.
var compile = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
})

// ValidateLine checks one ledger line against the schema.
func ValidateLine(line []byte) error {
	sch, err := compile()
	if err != nil {
		return fmt.Errorf("compiling schema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return sch.Validate(v)
}

// ValidateFile checks every line of a ledger file and returns the lines.
func ValidateFile(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading ledger: %v", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(data) == 0 {
		return nil
	}
	for i, l := range lines {
		if err := ValidateLine([]byte(l)); err != nil {
			t.Errorf("%s:%d is not a valid Agent Trace record: %v\n%s", path, i+1, err, l)
		}
	}
	return lines
}
