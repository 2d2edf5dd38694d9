package languages

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestBuiltin(t *testing.T) {
	r := Builtin()
	for _, name := range []string{"python", "py", "Python3", "js", "node", "typescript", "ts", "bash"} {
		if _, ok := r.Lookup(name); !ok {
			t.Errorf("Lookup(%q) failed", name)
		}
	}
	for _, l := range r.Languages() {
		if l.Example == "" || l.DisplayName == "" {
			t.Errorf("%s lacks an example or display name", l.Name)
		}
	}
	imgs := r.Images()
	if len(imgs) != 17 || imgs[0].Name != "base" {
		t.Errorf("build order %v: want 17 images, base first", imgs)
	}
	built := map[string]bool{"root": true}
	for _, img := range imgs {
		if !built[img.From] {
			t.Errorf("build order %v: %s comes before its parent %s", imgs, img.Name, img.From)
		}
		built[img.Name] = true
	}
	if n := len(r.Languages()); n < 37 {
		t.Errorf("%d languages; want at least 37 (issue #18 asks for 42)", n)
	}
}

func TestOnDemandImagesAreLeftOutOfTheDefaultSetOnly(t *testing.T) {
	r := Builtin()
	dialects, ok := r.Image("dialects")
	if !ok || !dialects.OnDemand {
		t.Fatalf("dialects image %+v: want an on-demand image", dialects)
	}
	if r.Default(dialects) || r.Optional(dialects) {
		t.Errorf("dialects: default %v, optional %v; want neither (built by --all and when named)", r.Default(dialects), r.Optional(dialects))
	}
	var names []string
	for _, l := range r.LanguagesOf("dialects") {
		names = append(names, l.Name)
	}
	if got := strings.Join(names, ","); got != "crystal,octave,racket,raku,vala" {
		t.Errorf("languages of dialects: %s", got)
	}
	js, ok := r.Image("jsruntimes")
	if !ok || !js.OnDemand || js.From != "node" || r.Default(js) {
		t.Errorf("jsruntimes image %+v: want an on-demand image on node, out of the default set", js)
	}
	names = names[:0]
	for _, l := range r.LanguagesOf("jsruntimes") {
		names = append(names, l.Name)
	}
	if got := strings.Join(names, ","); got != "bun,coffeescript,deno" {
		t.Errorf("languages of jsruntimes: %s", got)
	}
	for _, name := range []string{"base", "python", "native", "jvm"} {
		if img, _ := r.Image(name); !r.Default(img) {
			t.Errorf("%s is not in the default set", name)
		}
	}
	if ml, _ := r.Image("python-ml"); r.Default(ml) {
		t.Error("python-ml, optional, is in the default set")
	}
}

func TestEveryImageThatCIBuildsSaysHowLongItsBuildTakes(t *testing.T) {
	// The builder starts the longest line of builds first (BuildSeconds);
	// an image without it would start last, wherever it belongs.
	r := Builtin()
	for _, img := range r.Images() {
		if r.Optional(img) {
			continue
		}
		if img.BuildSeconds <= 0 {
			t.Errorf("image %s has no build_seconds (its from-scratch build's seconds, from CI's log)", img.Name)
		}
	}
}

func TestNewRejects(t *testing.T) {
	img := []Image{{Name: "i", Tag: "t:1", From: "root"}}
	lang := func(f func(*Language)) File {
		l := Language{Name: "x", Image: "i", File: "main.x", Run: []string{"x"}, Version: []string{"x"}}
		f(&l)
		return File{Images: img, Languages: []Language{l}}
	}
	cases := []struct {
		name string
		f    File
		want string
	}{
		{"unknown image", lang(func(l *Language) { l.Image = "nope" }), "unknown image"},
		{"no run", lang(func(l *Language) { l.Run = nil }), "run command is required"},
		{"warm without its program", lang(func(l *Language) { l.Warm = &WarmInterpreter{Name: "python_warm.py", Run: []string{"python3"}} }), "warm needs a name"},
		{"a warm program that is not built in", lang(func(l *Language) {
			l.Warm = &WarmInterpreter{Name: "ruby_warm.rb", Run: []string{"ruby", "-e", "{program}"}}
		}), "warm program \"ruby_warm.rb\" is not built in"},
		{"a kernel that is not built in", lang(func(l *Language) { l.Kernel = &Kernel{Name: "../kernel", Run: []string{"sh", "{kernel}"}} }), "is not built in"},
		{"file with dir", lang(func(l *Language) { l.File = "a/b" }), "plain file name"},
		{"upper-case name", lang(func(l *Language) { l.Name = "X" }), "lower case"},
		{"alias clash", File{Images: img, Languages: []Language{
			{Name: "a", Image: "i", File: "f", Run: []string{"x"}, Version: []string{"x"}},
			{Name: "b", Aliases: []string{"a"}, Image: "i", File: "f", Run: []string{"x"}, Version: []string{"x"}},
		}}, "used by both"},
		{"unknown parent", File{Images: []Image{{Name: "i", Tag: "t", From: "ghost"}}}, "unknown image"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := New(c.f); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

func TestLoadOverrides(t *testing.T) {
	path := filepath.Join(t.TempDir(), "langs.json")
	_ = os.WriteFile(path, []byte(`{"languages":[
		{"name":"python","image":"python","file":"main.py","run":["python3","-I","main.py"],"version":["python3","-V"]},
		{"name":"sh","image":"base","file":"main.sh","run":["sh","main.sh"],"version":["sh","-c","echo dash"]}]}`), 0o644)
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if py, _ := r.Lookup("python"); py.Run[1] != "-I" {
		t.Errorf("python not overridden: %v", py.Run)
	}
	if _, ok := r.Lookup("sh"); !ok {
		t.Error("added language missing")
	}
	if _, ok := r.Lookup("py"); ok {
		t.Error("an override replaces the whole entry, aliases included")
	}
}

func TestVariantImagesAreOptionalUntilALanguageRunsInThem(t *testing.T) {
	r := Builtin()
	ml, ok := r.Image("python-ml")
	if !ok || ml.VariantOf != "python" {
		t.Fatalf("python-ml image %+v: want a variant of python", ml)
	}
	if !r.Optional(ml) {
		t.Error("python-ml is optional while no language runs in it")
	}
	if py, _ := r.Image("python"); r.Optional(py) {
		t.Error("python, not a variant, is never optional")
	}
	var names []string
	for _, l := range r.LanguagesOf("python-ml") {
		names = append(names, l.Name)
	}
	if strings.Join(names, ",") != "python" {
		t.Errorf("languages measured in python-ml: %v, want python's", names)
	}

	// The shipped languages file points python at python-ml, changing
	// nothing else.
	withML, err := Load(filepath.Join("..", "..", "deploy", "languages", "python-ml.json"))
	if err != nil {
		t.Fatal(err)
	}
	if withML.Optional(ml) {
		t.Error("python-ml stays optional after python was pointed at it")
	}
	got, _ := withML.Lookup("python")
	want, _ := r.Lookup("python")
	if got.Image != "python-ml" {
		t.Errorf("python runs in %q with deploy/languages/python-ml.json, want python-ml", got.Image)
	}
	got.Image = want.Image
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deploy/languages/python-ml.json differs from the built-in python in more than its image:\n got %+v\nwant %+v", got, want)
	}
}

func TestNewRejectsBadVariants(t *testing.T) {
	for _, tc := range []struct {
		name   string
		images []Image
	}{
		{"variant of an unknown image", []Image{{Name: "a", Tag: "a:1", From: "root", VariantOf: "ghost"}}},
		{"variant of itself", []Image{{Name: "a", Tag: "a:1", From: "root", VariantOf: "a"}}},
		{"variant of a variant", []Image{{Name: "a", Tag: "a:1", From: "root"}, {Name: "b", Tag: "b:1", From: "a", VariantOf: "a"}, {Name: "c", Tag: "c:1", From: "b", VariantOf: "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(File{Images: tc.images}); err == nil || !strings.Contains(err.Error(), "variant_of") {
				t.Errorf("New: %v, want an error about variant_of", err)
			}
		})
	}
}
