package dockerengine

import (
	"errors"
	"strings"
	"testing"
)

func TestEnginesAreToldApartByWhatTheyReport(t *testing.T) {
	for _, c := range []struct {
		name  string
		facts engineFacts
		want  string
	}{
		{"a rootful Docker Engine on this machine's socket",
			engineFacts{daemonHost: "unix:///var/run/docker.sock", operatingSystem: "Debian GNU/Linux 13 (trixie)", osType: "linux", architecture: "x86_64",
				securityOptions: []string{"name=seccomp,profile=default", "name=cgroupns"}, version: "28.1.1", components: []string{"Engine", "containerd", "runc"}},
			"Docker Engine 28.1.1 (rootful, local, linux/amd64)"},
		{"rootless Docker on the user's socket",
			engineFacts{daemonHost: "unix:///run/user/1000/docker.sock", operatingSystem: "Debian GNU/Linux 13 (trixie)", osType: "linux", architecture: "x86_64",
				securityOptions: []string{"name=seccomp,profile=default", "name=rootless", "name=cgroupns"}, version: "28.1.1", components: []string{"Engine"}},
			"Docker Engine 28.1.1 (rootless, local, linux/amd64)"},
		{"Podman's Docker-compatible service",
			engineFacts{daemonHost: "unix:///run/podman/podman.sock", operatingSystem: "debian", osType: "linux", architecture: "amd64",
				version: "5.4.2", components: []string{"Podman Engine", "Conmon", "OCI Runtime (crun)"}},
			"Podman 5.4.2 (rootful, local, linux/amd64)"},
		{"rootless Podman",
			engineFacts{daemonHost: "unix:///run/user/1000/podman/podman.sock", osType: "linux", architecture: "amd64",
				securityOptions: []string{"name=seccomp,profile=/usr/share/containers/seccomp.json", "name=rootless"}, version: "5.4.2", components: []string{"Podman Engine"}},
			"Podman 5.4.2 (rootless, local, linux/amd64)"},
		{"rootless Podman 4.3, which only its own libpod API calls rootless",
			engineFacts{daemonHost: "unix:///run/user/1001/podman/podman.sock", osType: "linux", architecture: "amd64",
				securityOptions: []string{"name=seccomp,profile=default"}, version: "4.3.1", components: []string{"Podman Engine", "Conmon"}, libpodRootless: true},
			"Podman 4.3.1 (rootless, local, linux/amd64)"},
		{"Docker Desktop on an Apple Silicon Mac",
			engineFacts{daemonHost: "unix:///Users/me/.docker/run/docker.sock", operatingSystem: "Docker Desktop", osType: "linux", architecture: "aarch64",
				version: "28.0.4", components: []string{"Engine"}},
			"Docker Desktop 28.0.4 (rootful, local, linux/arm64)"},
		{"a daemon on another machine",
			engineFacts{daemonHost: "ssh://builder@build-host", operatingSystem: "Ubuntu 24.04 LTS", osType: "linux", architecture: "x86_64", version: "27.5.1"},
			"Docker Engine 27.5.1 (rootful, remote, linux/amd64)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := classifyEngine(c.facts).String(); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestEnginesThatCannotSetLimitsAreNamedWithTheLimits(t *testing.T) {
	cgroups := func(f engineFacts, version string, ok bool) engineFacts {
		f.cgroupVersion = version
		f.memoryLimit, f.pidsLimit, f.cpuQuota = ok, ok, ok
		return f
	}
	rootless := engineFacts{securityOptions: []string{"name=seccomp,profile=default", "name=rootless"}, osType: "linux", architecture: "x86_64"}
	rootful := engineFacts{securityOptions: []string{"name=seccomp,profile=default"}, osType: "linux", architecture: "x86_64"}
	for _, c := range []struct {
		name  string
		facts engineFacts
		want  string
	}{
		{"a rootful engine on cgroup v1 sets every limit", cgroups(rootful, "1", true), ""},
		{"a rootless engine on cgroup v2 with systemd sets every limit", cgroups(rootless, "2", true), ""},
		{"rootless Docker on cgroup v1 runs without cgroups (as measured here: driver none, no limit)",
			cgroups(rootless, "1", false), "memory, pids, CPU"},
		{"rootless Podman on cgroup v1 cannot set them whatever its Info claims", cgroups(rootless, "1", true), "memory, pids, CPU"},
		{"rootless Podman 4.3 on cgroup v1, known rootless from libpod only", func() engineFacts {
			f := cgroups(rootful, "1", true)
			f.components, f.libpodRootless = []string{"Podman Engine"}, true
			return f
		}(), "memory, pids, CPU"},
		{"an engine that lacks only the pids controller", func() engineFacts {
			f := cgroups(rootful, "2", true)
			f.pidsLimit = false
			return f
		}(), "pids"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := classifyEngine(c.facts)
			if got := strings.Join(e.Unenforced, ", "); got != c.want {
				t.Errorf("unenforced limits: got %q, want %q", got, c.want)
			}
			if c.want == "" {
				return
			}
			err := e.LimitsError()
			if !errors.Is(err, ErrLimitsUnenforced) || !strings.Contains(err.Error(), c.want+" limit") || !strings.Contains(err.Error(), "allow_unenforced_limits") {
				t.Errorf("the refusal does not say which limits and what to do: %v", err)
			}
		})
	}
}

func TestADaemonThatDoesNotAnswerGetsTheFixForWhy(t *testing.T) {
	for _, c := range []struct {
		name, err, want string
		permission      bool
	}{
		{"a socket this user may not open", "permission denied while trying to connect to the docker API at unix:///var/run/docker.sock", "usermod -aG docker", true},
		{"no daemon behind the socket", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?", "start the Docker daemon", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := pingError("unix:///var/run/docker.sock", errors.New(c.err), 1000)
			if got := err.Error(); !strings.Contains(got, c.want) {
				t.Errorf("got %q, want it to say %q", got, c.want)
			}
			if errors.Is(err, ErrSocketPermission) != c.permission {
				t.Errorf("marked as a socket permission error: %v, want %v", errors.Is(err, ErrSocketPermission), c.permission)
			}
		})
	}
}
