package engine

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Artifact describes a file a run created or changed in its workspace.
type Artifact struct {
	Path     string `json:"path" jsonschema:"path relative to the workspace"`
	Size     int64  `json:"size" jsonschema:"size in bytes"`
	MIMEType string `json:"mime_type,omitempty" jsonschema:"media type, from the extension or the content"`
	SHA256   string `json:"sha256,omitempty" jsonschema:"hex SHA-256 of the content"`
	URI      string `json:"uri,omitempty" jsonschema:"resource URI that serves the content (resources/read)"`
	Skipped  string `json:"skipped,omitempty" jsonschema:"why the content was not returned (over a size limit, not a regular file)"`
}

// keepArtifacts stores the agent's files and describes them.
func (e *Engine) keepArtifacts(runID, owner string, files []wire.Artifact) []Artifact {
	if len(files) == 0 {
		return nil
	}
	out := make([]Artifact, 0, len(files))
	for _, f := range files {
		a := Artifact{Path: f.Path, Size: f.Size, Skipped: f.Skipped}
		if f.Skipped == "" {
			sum := sha256.Sum256(f.Data)
			a.SHA256 = hex.EncodeToString(sum[:])
			a.MIMEType = outputs.MIMEType(f.Path, f.Data)
			if err := e.artifacts.Put(outputs.ArtifactURI(runID, f.Path), owner, f.Data); err != nil {
				// The file is described without a URI: a result never
				// names one that does not serve.
				e.log.Error("an artifact was not kept", "path", f.Path, "run", runID, "owner", owner, "err", err)
				a.Skipped = "not kept: the server's state store refused it (" + err.Error() + ")"
			} else {
				a.URI = outputs.ArtifactURI(runID, f.Path)
			}
		} else {
			a.MIMEType = outputs.MIMEType(f.Path, nil)
		}
		out = append(out, a)
	}
	return out
}

func artifactLimits(c config.Artifacts) *wire.ArtifactLimits {
	return &wire.ArtifactLimits{
		MaxFiles: c.MaxFiles, MaxFileBytes: int64(c.MaxFileBytes), MaxTotalBytes: int64(c.MaxTotalBytes),
		MaxScan: 20000,
	}
}
