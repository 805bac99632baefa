package textsafe

import "testing"

func TestEscapeRoundTrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{"src/main.go", "src/main.go"},
		{"héllo wörld.txt", "héllo wörld.txt"},
		{"a\nb", `a\nb`},
		{"x\r\ty", `x\r\ty`},
		{"esc\x1b[2J", `esc\x1b[2J`},
		{"caf\xe9\xff", `caf\xe9\xff`},
		{`back\slash`, `back\\slash`},
		{"del\x7f", `del\x7f`},
		{"bidi\u202eevil", `bidi\u202eevil`},
		{"zw\u200bsp", `zw\u200bsp`},
		{"c1\u0085", `c1\u0085`},
		{"ls\u2028", `ls\u2028`},
		{"tag\U000e0041", `tag\U000e0041`},
	}
	for _, tt := range tests {
		got := Escape(tt.in)
		if got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := Unescape(got)
		if err != nil || back != tt.in {
			t.Errorf("Unescape(%q) = %q, %v; want %q", got, back, err, tt.in)
		}
	}
}

func TestUnescapeRejectsMalformed(t *testing.T) {
	for _, in := range []string{`a\`, `\x4`, `\xzz`, `\q`, `\u12`} {
		if got, err := Unescape(in); err == nil {
			t.Errorf("Unescape(%q) = %q, want an error", in, got)
		}
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\xff\\", "\u202e", "\x1b[2J"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		for i := 0; i < len(e); i++ {
			if c := e[i]; c < 0x20 || c == 0x7f {
				t.Fatalf("Escape(%q) = %q holds a control byte", s, e)
			}
		}
		back, err := Unescape(e)
		if err != nil || back != s {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, back, err)
		}
	})
}

func TestEscapeContent(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"code keeps lines, tabs, backslashes", "func f() {\n\treturn \"a\\n\"\n}\n", "func f() {\n\treturn \"a\\n\"\n}\n"},
		{"OSC 52 clipboard write", "x\x1b]52;c;ZXZpbA==\x07y\n", `x\x1b]52;c;ZXZpbA==\x07y` + "\n"},
		{"line erase", "ok\x1b[2K\rforged\n", `ok\x1b[2K\rforged` + "\n"},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"bidi override", "a\u202eb", `a\u202eb`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
		{"printable non-ASCII kept", "héllo wörld", "héllo wörld"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := EscapeContent(c.in); got != c.want {
				t.Fatalf("EscapeContent(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}
