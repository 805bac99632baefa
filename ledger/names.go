package ledger

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"

	"github.com/intentfs/intentfs/internal/textsafe"
)

// Names are recorded losslessly. A path that is valid UTF-8 is recorded
// as it is. A path that is not (a file name is any bytes but '/' and NUL)
// cannot be a JSON string without loss, so its record carries:
//
//   - in files[].path (and from_path), the name escaped as package
//     textsafe defines (`caf\xe9`), which keeps the record valid Agent
//     Trace and shows readably;
//   - in metadata["dev.intentfs"].path_b64 (and from_path_b64), the exact
//     bytes, base64 (standard, padded).
//
// Readers decode records with json.Unmarshal, which restores the exact
// bytes from the _b64 fields (Record.UnmarshalJSON), so verify, revert,
// blame and diff see the real name. The _b64 field, not the escaped path,
// is authoritative: a valid UTF-8 name may look like an escaped one.

// encodeName returns the form of a raw path that goes into a JSON string
// and, when that form is not the path itself, the base64 of its bytes.
func encodeName(raw string) (shown, b64 string) {
	if utf8.ValidString(raw) {
		return raw, ""
	}
	return textsafe.Escape(raw), base64.StdEncoding.EncodeToString([]byte(raw))
}

// recordAlias has Record's fields without its methods, for decoding.
type recordAlias Record

// UnmarshalJSON decodes a record and restores names recorded in base64.
func (r *Record) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*recordAlias)(r)); err != nil {
		return err
	}
	g := r.Gov()
	if g.PathB64 != "" && len(r.Files) > 0 {
		if raw, err := base64.StdEncoding.DecodeString(g.PathB64); err == nil {
			r.Files[0].Path = string(raw)
		}
	}
	if g.FromPathB64 != "" {
		if raw, err := base64.StdEncoding.DecodeString(g.FromPathB64); err == nil {
			g.FromPath = string(raw)
		}
	}
	return nil
}
