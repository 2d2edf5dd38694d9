package runapp

import (
	"regexp"
	"strings"
	"testing"
)

// TestViewIsSmallOfflineAndLocked: the document fits the size budget, loads
// nothing from anywhere (no URL of another origin, no external script,
// style or font), and its policy admits exactly its inline script and
// styles.
func TestViewIsSmallOfflineAndLocked(t *testing.T) {
	doc := HTML()
	if n := len(doc); n > 150*1024 {
		t.Errorf("the view is %d bytes, over its 150 KiB budget", n)
	}
	for _, bad := range []string{"http://", "https://", "src=\"", "@import", "<link", "{{"} {
		if strings.Contains(doc, bad) {
			t.Errorf("the view contains %q: it must be one self-contained document", bad)
		}
	}
	csp := regexp.MustCompile(`http-equiv="Content-Security-Policy" content="([^"]+)"`).FindStringSubmatch(doc)
	if csp == nil {
		t.Fatal("the view has no Content-Security-Policy")
	}
	for _, want := range []string{"default-src 'none'", "script-src " + hashSource(script), "style-src " + hashSource(styles), "connect-src 'none'"} {
		if !strings.Contains(csp[1], want) {
			t.Errorf("policy %q lacks %q", csp[1], want)
		}
	}
	if strings.Contains(csp[1], "unsafe-") {
		t.Errorf("policy %q allows unsafe sources", csp[1])
	}
}

// TestViewSetsProgramTextAsText: nothing in the script parses strings as
// markup, so a program's output, its code and its files stay text.
func TestViewSetsProgramTextAsText(t *testing.T) {
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(script, sink) {
			t.Errorf("the view's script uses %s", sink)
		}
	}
}
