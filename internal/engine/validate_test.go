package engine

import (
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// validate is what Prepare checks of req, without an engine: its language
// (resolve), then the operator's limits (check).
func validate(req Request, reg *languages.Registry, lim config.Limits) (*validated, error) {
	lang, err := resolve(req.Language, reg)
	if err != nil {
		return nil, err
	}
	return check(req, lang, lim)
}

func TestValidateRejects(t *testing.T) {
	reg := languages.Builtin()
	lim := config.Default().Limits
	ok := Request{Language: "python", Code: "print(1)"}
	with := func(f func(r *Request)) Request { r := ok; f(&r); return r }
	cases := []struct {
		name string
		req  Request
		want string // a piece of the message
	}{
		{"no language", with(func(r *Request) { r.Language = "" }), "language is required; available: " + strings.Join(reg.Names(), ", ")},
		{"unknown language", with(func(r *Request) { r.Language = "intercal" }), `unknown language "intercal"; available: ` + strings.Join(reg.Names(), ", ")},
		{"empty code", with(func(r *Request) { r.Code = "  \n" }), "code is empty"},
		{"code too large", with(func(r *Request) { r.Code = strings.Repeat("#", lim.MaxCodeBytes+1) }), "over the limit"},
		{"stdin too large", with(func(r *Request) { r.Stdin = strings.Repeat("x", lim.MaxStdinBytes+1) }), "stdin is"},
		{"timeout above max", with(func(r *Request) { r.TimeoutSeconds = lim.MaxTimeoutSeconds + 1 }), "above the operator's maximum of 60"},
		{"negative timeout", with(func(r *Request) { r.TimeoutSeconds = -1 }), "must be positive"},
		{"bad env name", with(func(r *Request) { r.Env = map[string]string{"1X": "v"} }), `env name "1X" is invalid`},
		{"env with =", with(func(r *Request) { r.Env = map[string]string{"A=B": "v"} }), "is invalid"},
		{"reserved env", with(func(r *Request) { r.Env = map[string]string{"MCR_SANDBOX": "0"} }), "reserved"},
		{"NUL in arg", with(func(r *Request) { r.Args = []string{"a\x00b"} }), "NUL"},
		{"too many args", with(func(r *Request) { r.Args = make([]string, lim.MaxArgs+1) }), "args given"},
		{"absolute path", with(func(r *Request) { r.Files = []InputFile{{Path: "/etc/passwd", Content: "x"}} }), "is absolute"},
		{"climbing path", with(func(r *Request) { r.Files = []InputFile{{Path: "a/../../x", Content: "x"}} }), "climbs out"},
		{"unclean path", with(func(r *Request) { r.Files = []InputFile{{Path: "a//b", Content: "x"}} }), "not clean"},
		{"dot path", with(func(r *Request) { r.Files = []InputFile{{Path: "./a", Content: "x"}} }), "not clean"},
		{"empty path", with(func(r *Request) { r.Files = []InputFile{{Path: "", Content: "x"}} }), "path is empty"},
		{"path over code", with(func(r *Request) { r.Files = []InputFile{{Path: "main.py", Content: "x"}} }), "where the code goes"},
		{"duplicate path", with(func(r *Request) {
			r.Files = []InputFile{{Path: "a.txt", Content: "x"}, {Path: "a.txt", Content: "y"}}
		}), "given twice"},
		{"bad base64", with(func(r *Request) { r.Files = []InputFile{{Path: "b.bin", Content: "***", Encoding: "base64"}} }), "not valid base64"},
		{"bad encoding", with(func(r *Request) { r.Files = []InputFile{{Path: "b.bin", Content: "x", Encoding: "hex"}} }), `encoding "hex" is not supported`},
		{"too many files", with(func(r *Request) {
			for i := 0; i <= lim.MaxFiles; i++ {
				r.Files = append(r.Files, InputFile{Path: "f" + strings.Repeat("x", i), Content: "x"})
			}
		}), "files given, the limit is 32"},
		{"file too large", with(func(r *Request) {
			r.Files = []InputFile{{Path: "big", Content: strings.Repeat("x", lim.MaxFileBytes+1)}}
		}), "per file"},
		{"files too large together", with(func(r *Request) {
			for i := range 9 {
				r.Files = append(r.Files, InputFile{Path: "f" + strings.Repeat("x", i), Content: strings.Repeat("x", lim.MaxFileBytes)})
			}
		}), "add up to more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := validate(c.req, reg, lim)
			if err == nil {
				t.Fatal("accepted; want an error")
			}
			if !IsInvalid(err) {
				t.Errorf("error %v is not an invalid-argument error", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	reg := languages.Builtin()
	lim := config.Default().Limits
	v, err := validate(Request{
		Language: "PY", Code: "print(1)", TimeoutSeconds: 5,
		Env:   map[string]string{"_OK1": "v"},
		Files: []InputFile{{Path: "dir/sub/a.txt", Content: "aGk=", Encoding: "base64"}},
	}, reg, lim)
	if err != nil {
		t.Fatal(err)
	}
	if v.lang.Name != "python" || v.timeout != 5 || len(v.files) != 2 || string(v.files[1].Data) != "hi" {
		t.Errorf("got %+v", v)
	}
	v, _ = validate(Request{Language: "bash", Code: "true"}, reg, lim)
	if v.timeout != lim.TimeoutSeconds {
		t.Errorf("default timeout %d, want %d", v.timeout, lim.TimeoutSeconds)
	}
}

func TestClip(t *testing.T) {
	cases := []struct {
		name      string
		data      string
		limit     int
		total     int64
		want      string
		truncated bool
	}{
		{"fits", "hello", 10, 5, "hello", false},
		{"head and tail", "0123456789abcdefghij", 8, 20, "012345\n[... 12 bytes omitted ...]\nij", true},
		{"dropped by sandbox", "abc", 10, 100, "abc\n[output truncated: 3 of 100 bytes kept]\n", true},
		{"utf-8 cut", "ééééé", 7, 10, "éé\n[... 6 bytes omitted ...]\n", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, tr := clip([]byte(c.data), c.limit, c.total)
			if got != c.want || tr != c.truncated {
				t.Errorf("clip = %q, %v; want %q, %v", got, tr, c.want, c.truncated)
			}
		})
	}
}
