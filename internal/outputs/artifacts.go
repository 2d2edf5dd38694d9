package outputs

import (
	"mime"
	"net/http"
	"path"
	"strings"
)

// ArtifactURIPrefix begins the URI of every kept artifact.
const ArtifactURIPrefix = "mcr://artifacts/"

// ArtifactURI returns the resource URI of a run's file.
func ArtifactURI(runID, p string) string { return ArtifactURIPrefix + runID + "/" + p }

// extraTypes covers common extensions that Go's table lacks.
var extraTypes = map[string]string{
	".csv": "text/csv", ".tsv": "text/tab-separated-values", ".txt": "text/plain", ".md": "text/markdown",
	".py": "text/x-python", ".ts": "text/plain", ".log": "text/plain", ".yaml": "application/yaml",
	".yml": "application/yaml", ".ipynb": "application/json", ".parquet": "application/vnd.apache.parquet",
}

// MIMEType guesses a file's media type from its name, then its content.
func MIMEType(name string, data []byte) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := extraTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return strings.Split(t, ";")[0]
	}
	if len(data) == 0 {
		return "application/octet-stream"
	}
	return strings.Split(http.DetectContentType(data), ";")[0]
}

// IsImage reports whether a media type is returned as an MCP image block.
func IsImage(mimeType string) bool {
	switch mimeType {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml":
		return true
	}
	return false
}
