//go:build !fast

package docker_test

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

func TestContainerConfigIsHardened(t *testing.T) {
	b := testutil.Backend(t)
	cfg, host := b.ContainerConfig(sandbox.Template{
		Image: "img", Purpose: "r1", MaxLife: time.Minute,
		Resources: sandbox.Resources{MemoryMB: 256, CPUs: 1.5, PidsLimit: 64, WorkspaceMB: 32, TmpMB: 16, NoFile: 512, FileSizeMB: 8},
	})
	checks := []struct {
		name string
		ok   bool
	}{
		{"network none", host.NetworkMode == "none" && cfg.NetworkDisabled},
		{"all capabilities dropped", len(host.CapDrop) == 1 && host.CapDrop[0] == "ALL" && len(host.CapAdd) == 0},
		{"no-new-privileges", len(host.SecurityOpt) == 1 && host.SecurityOpt[0] == "no-new-privileges"},
		{"default seccomp (not unconfined)", !containsPrefix(host.SecurityOpt, "seccomp=")},
		{"read-only root", host.ReadonlyRootfs},
		{"tmpfs /tmp sized", host.Tmpfs["/tmp"] == "rw,nosuid,nodev,size=16m,nr_inodes=65536,mode=1777"},
		{"tmpfs /workspace sized", host.Tmpfs["/workspace"] == "rw,nosuid,nodev,exec,size=32m,nr_inodes=65536,uid=10001,gid=10001,mode=0755"},
		{"non-root user", cfg.User == "10001:10001"},
		{"pids limit", host.PidsLimit != nil && *host.PidsLimit == 64},
		{"memory = memory+swap", host.Memory == 256<<20 && host.MemorySwap == host.Memory},
		{"cpu quota", host.NanoCPUs == 1_500_000_000},
		{"the agent's own limits", slices.Contains(cfg.Env, wire.LimitsEnv+`={"nofile":512,"fsize_bytes":8388608}`)},
		{"ulimits", len(host.Ulimits) == 3 && host.Ulimits[0].Hard == 512 && host.Ulimits[1].Hard == 8<<20 && host.Ulimits[2].Hard == 0},
		{"agent is the init", host.Init != nil && !*host.Init && cfg.Cmd[0] == docker.AgentPath},
		{"log driver none", host.LogConfig.Type == "none"},
		{"not privileged", !host.Privileged},
		{"agent mounted read-only", len(host.Mounts) == 1 && host.Mounts[0].ReadOnly && host.Mounts[0].Target == docker.AgentPath},
		{"labels", cfg.Labels[docker.LabelManaged] == "true" && cfg.Labels[docker.LabelPurpose] == "r1" && cfg.Labels[docker.LabelExpires] != ""},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not set", c.name)
		}
	}
}

// A gVisor sandbox's programs meet their pids limit inside gVisor: in the
// pids.max the annotation gives their cgroup there, where the daemon hands
// annotations to its runtime (API 1.43), else in RLIMIT_NPROC; its host
// cgroup holds gVisor's kernel, with room above the programs' own.
func TestGVisorContainerConfigLimitsTasksInsideGVisor(t *testing.T) {
	b := testutil.Backend(t)
	_, host := b.ContainerConfig(sandbox.Template{
		Image: "img", Purpose: "r1", MaxLife: time.Minute, Isolation: sandbox.IsolationGVisor,
		Resources: sandbox.Resources{MemoryMB: 256, CPUs: 1, PidsLimit: 64, WorkspaceMB: 32, TmpMB: 16, NoFile: 512, FileSizeMB: 8},
	})
	var nproc int64
	for _, u := range host.Ulimits {
		if u.Name == "nproc" {
			nproc = u.Hard
		}
	}
	api := b.Client().ClientVersion()
	annotated := host.Annotations[sandbox.GVisorPidsMaxAnnotation]
	t.Logf("the daemon's API %s: pids.max inside gVisor %q, RLIMIT_NPROC %d", api, annotated, nproc)
	if (annotated == "64") == (nproc == 64) {
		t.Errorf("want the limit in the annotation or in RLIMIT_NPROC, one of them: annotation %q, nproc %d (API %s)", annotated, nproc, api)
	}
	if host.PidsLimit == nil || *host.PidsLimit != 4*64+256 {
		t.Errorf("host pids limit %v, want %d", host.PidsLimit, 4*64+256)
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// TestSweepRemovesOrphans plants containers labelled as made by a dead
// server, an expired one, and one of a live server; the sweep removes the
// first two only.
func TestSweepRemovesOrphans(t *testing.T) {
	b := testutil.Backend(t)
	cli := b.Client()
	reg := languages.Builtin()
	testutil.RequireImage(t, b, reg, "bash")
	img := reg.ImageOf(mustLang(t, reg, "bash")).Tag
	ctx := context.Background()
	base, _ := b.ContainerConfig(sandbox.Template{Image: img, MaxLife: time.Minute, Resources: sandbox.Resources{MemoryMB: 64, CPUs: 1, PidsLimit: 8, WorkspaceMB: 1, TmpMB: 1, NoFile: 64, FileSizeMB: 1}})
	plantWith := func(name string, cmd []string, mutate func(map[string]string)) string {
		labels := map[string]string{}
		maps.Copy(labels, base.Labels)
		mutate(labels)
		res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &container.Config{Image: img, Cmd: cmd, Labels: labels},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			t.Fatalf("planting %s: %v", name, err)
		}
		t.Cleanup(func() { _, _ = cli.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}) })
		return res.ID
	}
	plant := func(name string, mutate func(map[string]string)) string {
		return plantWith(name, []string{"true"}, mutate)
	}
	dead := plant("dead owner", func(l map[string]string) {
		l[docker.LabelOwner] = "someone-else"
		l[docker.LabelOwnerPID] = "999999999"
	})
	expired := plant("expired", func(l map[string]string) {
		l[docker.LabelOwner] = "remote"
		l[docker.LabelOwnerHost] = "another-host"
		l[docker.LabelExpires] = strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
	})
	live := plant("live remote", func(l map[string]string) {
		l[docker.LabelOwner] = "remote"
		l[docker.LabelOwnerHost] = "another-host"
	})
	mine := plant("mine", func(map[string]string) {})
	// Session sandboxes of gone servers: only a server on the store that
	// records their sessions can tell whether one still owns them.
	goneSession := func(store string, expired bool) func(map[string]string) {
		return func(l map[string]string) {
			l[docker.LabelOwner], l[docker.LabelOwnerPID], l[docker.LabelStore] = "someone-else", "999999999", store
			if expired {
				l[docker.LabelExpires] = strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
			}
		}
	}
	// A session's sandbox runs while its agent waits for a server to
	// re-attach to it; one that has ended (never started, here) waits
	// for no one.
	otherStore := plantWith("another store's session", []string{"sleep", "600"}, goneSession("store-b", false))
	if _, err := cli.ContainerStart(ctx, otherStore, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	otherStoreExpired := plant("another store's session, expired", goneSession("store-b", true))
	otherStoreEnded := plant("another store's session that ended", goneSession("store-b", false))
	ownStore := plant("this store's session that no record names", goneSession("store-a", false))
	b.SetKeep(sandbox.Keep{Store: "store-a", Sandboxes: func(context.Context) ([]sandbox.Ref, error) { return nil, nil }})

	n, err := b.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Errorf("swept %d, want at least 5", n)
	}
	exists := func(id string) bool {
		_, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		return err == nil
	}
	for name, id := range map[string]string{"dead owner": dead, "expired": expired, "another store's session, expired": otherStoreExpired, "another store's session that ended": otherStoreEnded,
		"this store's session that no record names": ownStore} {
		if exists(id) {
			t.Errorf("an orphan survived the sweep: %s", name)
		}
	}
	if !exists(live) || !exists(mine) {
		t.Error("the sweep removed a container whose server is alive")
	}
	if !exists(otherStore) {
		t.Error("the sweep removed a gone server's session sandbox that another store's session may own")
	}
}

// TestOnlyASessionSandboxNamesItsStore: the label that keeps a session's
// sandbox from the sweeps of servers on other stores is on sandboxes made
// with a ReattachGrace, and only when the backend knows its store.
func TestOnlyASessionSandboxNamesItsStore(t *testing.T) {
	for _, tt := range []struct {
		name  string
		store string
		grace time.Duration
		want  string
	}{
		{"a session's sandbox", "store-a", time.Minute, "store-a"},
		{"a run's sandbox", "store-a", 0, ""},
		{"a session's sandbox with no store known", "", time.Minute, ""},
	} {
		b := testutil.Backend(t)
		b.SetKeep(sandbox.Keep{Store: tt.store})
		cfg, _ := b.ContainerConfig(sandbox.Template{Image: "img", MaxLife: time.Minute, ReattachGrace: tt.grace,
			Resources: sandbox.Resources{MemoryMB: 64, CPUs: 1, PidsLimit: 8, WorkspaceMB: 1, TmpMB: 1, NoFile: 64, FileSizeMB: 1}})
		if got := cfg.Labels[docker.LabelStore]; got != tt.want {
			t.Errorf("%s: store label %q, want %q", tt.name, got, tt.want)
		}
	}
}

func mustLang(t *testing.T, reg *languages.Registry, name string) languages.Language {
	l, ok := reg.Lookup(name)
	if !ok {
		t.Fatal(name)
	}
	return l
}

// TestContainerConfigCarriesWhatStartsAhead checks that a warm sandbox's
// prestart and warm interpreter reach the agent as JSON in its environment,
// that a cold one has neither, and that neither changes the hardening.
func TestContainerConfigCarriesWhatStartsAhead(t *testing.T) {
	b := testutil.Backend(t)
	base := sandbox.Template{Image: "img", Purpose: "p", MaxLife: time.Minute,
		Resources: sandbox.Resources{MemoryMB: 256, CPUs: 1, PidsLimit: 64, WorkspaceMB: 32, TmpMB: 16, NoFile: 512, FileSizeMB: 8}}
	warm := base
	warm.Prestart = &wire.Prestart{Argv: []string{"server"}, Env: []string{"A=1"}}
	warm.Warm = &wire.Warm{Name: "python_warm.py", Argv: []string{"python3", "-c", "{program}"}, Replaces: []string{"python3", "main.py"}}

	coldCfg, coldHost := b.ContainerConfig(base)
	warmCfg, warmHost := b.ContainerConfig(warm)
	for _, kv := range coldCfg.Env {
		if strings.HasPrefix(kv, wire.PrestartEnv+"=") || strings.HasPrefix(kv, wire.WarmEnv+"=") {
			t.Errorf("a cold sandbox carries %s", kv)
		}
	}
	got := map[string]string{}
	for _, kv := range warmCfg.Env {
		if name, value, ok := strings.Cut(kv, "="); ok {
			got[name] = value
		}
	}
	var p wire.Prestart
	if err := json.Unmarshal([]byte(got[wire.PrestartEnv]), &p); err != nil || !slices.Equal(p.Argv, warm.Prestart.Argv) || !slices.Equal(p.Env, warm.Prestart.Env) {
		t.Errorf("%s = %q (%v)", wire.PrestartEnv, got[wire.PrestartEnv], err)
	}
	var w wire.Warm
	if err := json.Unmarshal([]byte(got[wire.WarmEnv]), &w); err != nil || w.Name != warm.Warm.Name || !slices.Equal(w.Replaces, warm.Warm.Replaces) {
		t.Errorf("%s = %q (%v)", wire.WarmEnv, got[wire.WarmEnv], err)
	}
	if !reflect.DeepEqual(coldHost, warmHost) {
		t.Error("the host configuration of a warm sandbox differs from a cold one's")
	}
}
