package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/audit"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/approval"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// maxEnded is how many ended executions the console lists.
const maxEnded = 30

// auditLines is how many of the audit log's latest lines it shows.
const auditLines = 50

// view is what the console shows at one moment.
type view struct {
	Principal string
	CSRF      string
	Done      string
	At        time.Time
	// MemoryMB is a sandbox's memory limit.
	MemoryMB  int
	Sessions  []sessions.Info
	Paused    []sessions.Info
	Running   []executions.Snapshot
	Ended     []executions.Snapshot
	Inflight  []engine.RunInfo
	Images    []imageRow
	Approvals []approval.Grant
	// Questions are the approvals asked of users and not answered yet.
	Questions []approval.Question
	// ApprovalsNote says why approvals are not listed.
	ApprovalsNote string
	AuditOn       bool
	Audit         []audit.Entry
}

type imageRow struct {
	Image, State, Detail string
	Languages            []string
}

// snapshot reads the state the console shows, as the operator.
func (c *Console) snapshot(ctx context.Context) view {
	v := visitorOf(ctx)
	ctx = asOperator(ctx)
	out := view{Principal: v.p.Name, CSRF: v.csrf, At: time.Now(), MemoryMB: c.d.Engine.Config().Limits.MemoryMB, AuditOn: c.d.Audit != nil}
	for _, s := range c.d.Sessions.List(ctx) {
		if s.Paused {
			out.Paused = append(out.Paused, s)
		} else {
			out.Sessions = append(out.Sessions, s)
		}
	}
	for _, e := range c.d.Executions.List(ctx) {
		switch {
		case e.Status == "running":
			out.Running = append(out.Running, e)
		case len(out.Ended) < maxEnded:
			out.Ended = append(out.Ended, e)
		}
	}
	out.Inflight = c.d.Engine.Inflight()
	sort.Slice(out.Inflight, func(i, j int) bool { return out.Inflight[i].Started.Before(out.Inflight[j].Started) })
	out.Images = c.images(ctx)
	if a := c.d.Approvals; a == nil {
		out.ApprovalsNote = "no egress approvals are kept on this server"
	} else if grants, err := a.All(ctx); err != nil {
		out.ApprovalsNote = err.Error()
	} else {
		out.Approvals = grants
		out.Questions, _ = a.Pending(ctx) // a store that cannot list them left the grants empty above
	}
	out.Audit = c.d.Audit.Tail(auditLines)
	return out
}

// images lists the runtime images the background builder is making or
// failed to make, with the languages each serves.
func (c *Console) images(ctx context.Context) []imageRow {
	reg := c.d.Engine.Registry()
	byImage := map[string]*imageRow{}
	var order []string
	for _, l := range reg.Languages() {
		rt := c.d.Engine.Runtime(ctx, l)
		state, detail := rt.ImageState, rt.ImageDetail
		if state == "" {
			continue
		}
		tag := reg.ImageOf(l).Tag
		row, ok := byImage[tag]
		if !ok {
			row = &imageRow{Image: tag, State: state, Detail: detail}
			byImage[tag] = row
			order = append(order, tag)
		}
		row.Languages = append(row.Languages, l.Name)
	}
	out := make([]imageRow, 0, len(order))
	for _, tag := range order {
		out = append(out, *byImage[tag])
	}
	return out
}

// render executes the template name on v.
func render(name string, v view) ([]byte, error) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	v := c.snapshot(r.Context())
	v.Done = r.URL.Query().Get("done")
	body, err := render("console.html", v)
	if err != nil {
		c.d.Log.Error("console: rendering", "err", err)
		http.Error(w, "the console could not be rendered; the server's log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(body)
}

// events streams the live part of the page, rendered on the server, each
// time it changes (checked every refresh), as server-sent events.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(c.refresh)
	defer tick.Stop()
	var last []byte
	quiet := 0
	for {
		body, err := render("live", c.snapshot(r.Context()))
		if err != nil {
			c.d.Log.Error("console: rendering", "err", err)
			return
		}
		switch {
		case !bytes.Equal(body, last):
			last, quiet = body, 0
			if _, err := w.Write(sseEvent("live", body)); err != nil {
				return
			}
			flusher.Flush()
		case quiet*int(c.refresh) >= int(15*time.Second):
			// A comment now and then keeps proxies from closing an idle stream.
			quiet = 0
			if _, err := w.Write([]byte(": still here\n\n")); err != nil {
				return
			}
			flusher.Flush()
		default:
			quiet++
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// sseEvent frames data as one server-sent event: each line of it a data
// line.
func sseEvent(name string, data []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: %s\n", name)
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

func (c *Console) cancelExecution(ctx context.Context, id string) (string, error) {
	if _, err := c.d.Executions.Cancel(ctx, id); err != nil {
		return "", err
	}
	return "execution " + id + " cancelled", nil
}

func (c *Console) pauseSession(ctx context.Context, id string) (string, error) {
	r, err := c.d.Sessions.Pause(ctx, id)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("session %s paused (%d files kept)", id, r.FilesKept), nil
}

func (c *Console) closeSession(ctx context.Context, id string) (string, error) {
	if _, err := c.d.Sessions.Close(ctx, id); err != nil {
		return "", err
	}
	return "session " + id + " closed", nil
}

// memory shows a sandbox's memory use against its limit ("38 MiB / 256
// MiB"), or the limit alone ("≤ 256 MiB") where its backend cannot read
// the use (used is 0).
func memory(used uint64, limitMB int) string {
	if used == 0 {
		return fmt.Sprintf("≤ %d MiB", limitMB)
	}
	return fmt.Sprintf("%d MiB / %d MiB", (used+1<<20-1)>>20, limitMB)
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
