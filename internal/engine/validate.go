package engine

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// validated is a request that passed every check, with files decoded.
type validated struct {
	lang    languages.Language
	files   []wire.File
	timeout int
}

// resolve finds the language a request names: the one place a call's
// language is looked up.
func resolve(name string, reg *languages.Registry) (languages.Language, error) {
	if strings.TrimSpace(name) == "" {
		return languages.Language{}, invalid("language is required; available: %s", strings.Join(reg.Names(), ", "))
	}
	lang, ok := reg.Lookup(name)
	if !ok {
		return languages.Language{}, invalid("unknown language %q; available: %s (list_languages shows aliases and versions)", name, strings.Join(reg.Names(), ", "))
	}
	return lang, nil
}

// check checks req, whose language is lang, against the operator's limits.
func check(req Request, lang languages.Language, lim config.Limits) (*validated, error) {
	if strings.TrimSpace(req.Code) == "" {
		return nil, invalid("code is empty; give the program's source code in code")
	}
	if len(req.Code) > lim.MaxCodeBytes {
		return nil, invalid("code is %d bytes, over the limit of %d; shorten it or pass data in files", len(req.Code), lim.MaxCodeBytes)
	}
	if len(req.Stdin) > lim.MaxStdinBytes {
		return nil, invalid("stdin is %d bytes, over the limit of %d; pass large data as a file", len(req.Stdin), lim.MaxStdinBytes)
	}
	if len(req.Args) > lim.MaxArgs {
		return nil, invalid("%d args given, the limit is %d", len(req.Args), lim.MaxArgs)
	}
	for i, a := range req.Args {
		if strings.ContainsRune(a, 0) {
			return nil, invalid("args[%d] contains a NUL byte, which a command line cannot carry", i)
		}
	}
	if len(req.Env) > lim.MaxEnv {
		return nil, invalid("%d env variables given, the limit is %d", len(req.Env), lim.MaxEnv)
	}
	for name, value := range req.Env {
		if !envName.MatchString(name) {
			return nil, invalid("env name %q is invalid; use letters, digits and underscores, not starting with a digit", name)
		}
		if strings.HasPrefix(name, "MCR_") {
			return nil, invalid("env name %q is reserved (MCR_ prefix); choose another name", name)
		}
		if strings.ContainsRune(value, 0) {
			return nil, invalid("env %s contains a NUL byte, which an environment cannot carry", name)
		}
	}
	timeout := lim.TimeoutSeconds
	if lang.Limits.TimeoutSeconds > 0 {
		timeout = lang.Limits.TimeoutSeconds
	}
	switch {
	case req.TimeoutSeconds < 0:
		return nil, invalid("timeout_seconds must be positive")
	case req.TimeoutSeconds > lim.MaxTimeoutSeconds:
		return nil, invalid("timeout_seconds %d is above the operator's maximum of %d; ask for %d or less (use start_execution for long jobs where the server offers it)", req.TimeoutSeconds, lim.MaxTimeoutSeconds, lim.MaxTimeoutSeconds)
	case req.TimeoutSeconds > 0:
		timeout = req.TimeoutSeconds
	}
	timeout = min(timeout, lim.MaxTimeoutSeconds)
	files, err := checkFiles(req, lang, lim)
	if err != nil {
		return nil, err
	}
	return &validated{lang: lang, files: files, timeout: timeout}, nil
}

// checkFiles decodes the request's files within the limits, after the
// code's own file.
func checkFiles(req Request, lang languages.Language, lim config.Limits) ([]wire.File, error) {
	if len(req.Files) > lim.MaxFiles {
		return nil, invalid("%d files given, the limit is %d; pack them into an archive file instead", len(req.Files), lim.MaxFiles)
	}
	files := []wire.File{{Path: lang.File, Data: []byte(req.Code)}}
	seen := map[string]bool{lang.File: true}
	total := 0
	for i, f := range req.Files {
		if err := wire.ValidPath(f.Path); err != nil {
			return nil, invalid("files[%d]: %v", i, err)
		}
		if seen[f.Path] {
			if f.Path == lang.File {
				return nil, invalid("files[%d]: %s is where the code goes; choose another path", i, f.Path)
			}
			return nil, invalid("files[%d]: %s is given twice", i, f.Path)
		}
		seen[f.Path] = true
		data, err := DecodeFile(f, lim)
		if err != nil {
			return nil, invalid("files[%d]: %v", i, err)
		}
		total += len(data)
		if total > lim.MaxTotalFileBytes {
			return nil, invalid("files add up to more than %d bytes; send fewer or smaller files", lim.MaxTotalFileBytes)
		}
		files = append(files, wire.File{Path: f.Path, Data: data})
	}
	return files, nil
}

// DecodeFile checks an input file's path and decodes its content within the
// per-file limit.
func DecodeFile(f InputFile, lim config.Limits) ([]byte, error) {
	if err := wire.ValidPath(f.Path); err != nil {
		return nil, err
	}
	var data []byte
	switch strings.ToLower(f.Encoding) {
	case "", "text", "utf-8", "utf8":
		data = []byte(f.Content)
	case "base64":
		d, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return nil, fmt.Errorf("%s: content is not valid base64 (%v); encode it with standard base64 and padding", f.Path, err)
		}
		data = d
	default:
		return nil, fmt.Errorf("%s: encoding %q is not supported; use text or base64", f.Path, f.Encoding)
	}
	if len(data) > lim.MaxFileBytes {
		return nil, fmt.Errorf("%s is %d bytes, over the limit of %d per file", f.Path, len(data), lim.MaxFileBytes)
	}
	return data, nil
}
