package policy

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// DefaultUpstreamRef is the ref an upstream without `ref:` tracks.
const DefaultUpstreamRef = "refs/heads/main"

// Upstream is the repository and ref a human declared as the trusted
// upstream (the top-level `upstream:` key). The daemon fetches it into a
// private mirror of its own; what that ref holds is content the agent did
// not write, so git may bring it into the work tree (a merge of upstream
// changes) even outside the active intent's scope.
type Upstream struct {
	// URL is where the daemon fetches from: an absolute path, file://,
	// https://, ssh:// or scp-like [user@]host:path.
	URL string
	// Ref is the full ref name (refs/heads/main), normalised from the
	// policy's short or full spelling.
	Ref string
	// Line is where `upstream:` is in the policy file, for messages.
	Line int
}

var upstreamMapping = mappingKind{noun: "upstream ", where: "upstream", unknown: SevWarning, known: []string{"url", "ref"}}

// upstream parses the value of the top-level `upstream:` key k.
func (p *parser) upstream(k, v *yaml.Node) *Upstream {
	if v.Kind != yaml.MappingNode {
		p.errorf(v, "upstream must be a mapping with a `url:` (and optionally `ref:`), e.g. `upstream: {url: /srv/repos/project.git, ref: main}`")
		return nil
	}
	u := &Upstream{Line: k.Line, Ref: DefaultUpstreamRef}
	fields := p.fields(v, upstreamMapping)
	ok := true
	switch n := fields["url"]; {
	case n == nil:
		p.errorf(v, "upstream needs a `url:`: the repository the daemon fetches the trusted ref from")
		ok = false
	case n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Value == "":
		p.errorf(n, "upstream url must be a non-empty string")
		ok = false
	default:
		if err := CheckUpstreamURL(n.Value); err != nil {
			p.errorf(n, "upstream url: %v", err)
			ok = false
		}
		u.URL = n.Value
	}
	if n := fields["ref"]; n != nil && n.Tag != "!!null" {
		ref, err := "", errors.New("must be a string such as main or refs/heads/main")
		if n.Kind == yaml.ScalarNode {
			ref, err = NormalizeUpstreamRef(n.Value)
		}
		if err != nil {
			p.errorf(n, "upstream ref %q: %v", n.Value, err)
			ok = false
		}
		u.Ref = ref
	}
	if !ok {
		return nil
	}
	return u
}

// schemeRe matches the start of a URL with a scheme ("https://").
var schemeRe = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// helperRe matches git's "<transport>::<address>" syntax, which runs a
// remote helper program (ext:: runs any command).
var helperRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*::`)

// CheckUpstreamURL refuses an upstream URL the daemon must not fetch: one
// git could read as an option or that runs a program, one whose transport
// does not authenticate the server (http://, git://), or one whose meaning
// depends on the daemon's working directory (a relative path).
func CheckUpstreamURL(s string) error {
	switch {
	case s == "":
		return errors.New("it is empty: write the repository's path or URL")
	case strings.HasPrefix(s, "-"):
		return errors.New("it starts with '-', which git would read as an option")
	case strings.TrimSpace(s) != s:
		return errors.New("remove the spaces around it")
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return errors.New("it contains a control character or a newline")
		}
	}
	if helperRe.MatchString(s) {
		return errors.New("the <transport>::<address> form runs a remote helper program: use an absolute path, file://, https:// or ssh://")
	}
	if strings.HasPrefix(s, "/") {
		return nil
	}
	if m := schemeRe.FindStringSubmatch(s); m != nil {
		return checkSchemeURL(strings.ToLower(m[1]), s)
	}
	// scp-like [user@]host:path: a colon before the first slash.
	if before, path, found := strings.Cut(s, ":"); found && !strings.Contains(before, "/") {
		user, host, hasUser := strings.Cut(before, "@")
		if !hasUser {
			host, user = user, ""
		}
		switch {
		case host == "" || path == "":
			return errors.New("an scp-like address needs a host and a path: user@host:path/to/repo.git")
		case strings.HasPrefix(host, "-") || strings.HasPrefix(user, "-") || strings.HasPrefix(path, "-"):
			return errors.New("a user, host or path starting with '-' could be read by ssh as an option")
		}
		return nil
	}
	return errors.New("a relative path is not allowed (it would depend on the daemon's working directory): write an absolute path, or a file://, https://, ssh:// or user@host:path URL")
}

// checkSchemeURL checks a URL with a scheme.
func checkSchemeURL(scheme, s string) error {
	switch scheme {
	case "file":
		if !strings.HasPrefix(s[len("file://"):], "/") {
			return errors.New("a file:// URL must name an absolute path: file:///srv/repos/project.git")
		}
		return nil
	case "https", "ssh":
	case "http":
		return errors.New("http:// is refused: anyone on the network path could change what the daemon trusts; use https://")
	case "git":
		return errors.New("git:// is refused: it does not authenticate the server, so anyone on the network path could change what the daemon trusts; use https:// or ssh://")
	default:
		return fmt.Errorf("the %s:// transport is not allowed: use an absolute path, file://, https:// or ssh://", scheme)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a valid URL: %v", err)
	}
	switch {
	case u.Hostname() == "":
		return fmt.Errorf("a %s:// URL needs a host", scheme)
	case strings.HasPrefix(u.Hostname(), "-") || strings.HasPrefix(u.User.Username(), "-"):
		return errors.New("a user or host starting with '-' could be read by ssh as an option")
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return errors.New("a password in the URL is readable by anyone who can read the policy, the agent included: remove it")
	}
	return nil
}

// NormalizeUpstreamRef returns the full ref for ref ("main" is
// refs/heads/main), or why it is not a valid ref name (git's
// check-ref-format rules).
func NormalizeUpstreamRef(ref string) (string, error) {
	switch {
	case ref == "":
		return DefaultUpstreamRef, nil
	case ref == "HEAD" || ref == "@":
		return "", errors.New("name a branch (main) or a full ref (refs/heads/main), not HEAD")
	case strings.HasPrefix(ref, "-"):
		return "", errors.New("a ref may not start with '-'")
	case !strings.HasPrefix(ref, "refs/"):
		ref = "refs/heads/" + ref
	}
	if err := checkRefFormat(ref); err != nil {
		return "", err
	}
	return ref, nil
}

// checkRefFormat applies git check-ref-format's rules to a full ref.
func checkRefFormat(ref string) error {
	if strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".") {
		return errors.New("a ref may not end with '/' or '.'")
	}
	if strings.Contains(ref, "..") || strings.Contains(ref, "@{") {
		return errors.New("a ref may not contain '..' or '@{'")
	}
	for _, c := range ref {
		if c < 0x20 || c == 0x7f || strings.ContainsRune(" ~^:?*[\\", c) {
			return fmt.Errorf("a ref may not contain control characters, spaces or any of ~^:?*[\\ (found %q)", c)
		}
	}
	comps := strings.Split(ref, "/")
	if len(comps) < 2 || comps[1] == "" {
		return errors.New("a full ref names something below refs/, e.g. refs/heads/main")
	}
	for _, c := range comps {
		switch {
		case c == "":
			return errors.New("a ref may not contain an empty component ('//')")
		case strings.HasPrefix(c, "."):
			return errors.New("a ref component may not start with '.'")
		case strings.HasSuffix(c, ".lock"):
			return errors.New("a ref component may not end with .lock")
		}
	}
	return nil
}
