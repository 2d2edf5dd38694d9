package dockerengine

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

func TestOnlyPodmansAnswersForAContainerGoingAwayCountAsARace(t *testing.T) {
	for _, c := range []struct {
		err  string
		want bool
	}{
		{"Error response from daemon: read /proc/11781/cgroup: no such process", true},
		{"Error response from daemon: container 8938b3d2 does not exist in database: no such container", true},
		{"Error response from daemon: No such container: 8938b3d2", false},
		{"Cannot connect to the Docker daemon at unix:///var/run/docker.sock", false},
		{"Error response from daemon: read /proc/self/status: permission denied", false},
	} {
		if got := RacedWithExit(errors.New(c.err)); got != c.want {
			t.Errorf("RacedWithExit(%q) = %v, want %v", c.err, got, c.want)
		}
	}
	if RacedWithExit(nil) {
		t.Error("RacedWithExit(nil) = true")
	}
}

// racingEngine answers the first fails requests to path with Podman's
// error for a process that exited while it was read, then with answer.
func racingEngine(t *testing.T, path string, fails int32, answer string) (*client.Client, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, path) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) <= fails {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"cause":"no such process","message":"read /proc/4242/cgroup: no such process","response":500}`))
			return
		}
		_, _ = w.Write([]byte(answer))
	}))
	t.Cleanup(srv.Close)
	cli, err := client.New(client.WithHost("tcp://"+strings.TrimPrefix(srv.URL, "http://")), client.WithAPIVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli, &calls
}

func TestAListThatRacedWithAnExitIsAskedAgain(t *testing.T) {
	cli, calls := racingEngine(t, "/containers/json", 2, `[{"Id":"abc","State":"exited"}]`)
	list, err := ListContainers(context.Background(), cli, client.ContainerListOptions{All: true})
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].ID != "abc" || calls.Load() != 3 {
		t.Fatalf("got %d items after %d calls, want the one container after 3 calls", len(list.Items), calls.Load())
	}
}

func TestAListThatKeepsRacingGivesUpWithTheEnginesError(t *testing.T) {
	cli, calls := racingEngine(t, "/containers/json", 1000, `[]`)
	_, err := ListContainers(context.Background(), cli, client.ContainerListOptions{All: true})
	if err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Fatalf("ListContainers: err = %v, want the engine's error", err)
	}
	if calls.Load() != raceRetries {
		t.Fatalf("asked %d times, want %d", calls.Load(), raceRetries)
	}
}

func TestAWaitThatRacedWithTheExitIsAnsweredFromTheContainersState(t *testing.T) {
	cli, _ := racingEngine(t, "/containers/c1/json", 1, `{"Id":"c1","State":{"Status":"exited","ExitCode":3}}`)
	errs := make(chan error, 1)
	errs <- errors.New("Error response from daemon: read /proc/4242/cgroup: no such process")
	status, err := WaitExit(context.Background(), cli, "c1", client.ContainerWaitResult{Result: make(chan container.WaitResponse), Error: errs})
	if err != nil || status != 3 {
		t.Fatalf("WaitExit = %d, %v; want 3 from the inspected state", status, err)
	}
}

func TestAWaitThatFailedOtherwiseReportsTheFailure(t *testing.T) {
	cli, calls := racingEngine(t, "/containers/c1/json", 0, `{}`)
	errs := make(chan error, 1)
	errs <- errors.New("Error response from daemon: No such container: c1")
	if _, err := WaitExit(context.Background(), cli, "c1", client.ContainerWaitResult{Result: make(chan container.WaitResponse), Error: errs}); err == nil || !strings.Contains(err.Error(), "No such container") {
		t.Fatalf("WaitExit: err = %v, want the wait's error", err)
	}
	if calls.Load() != 0 {
		t.Fatalf("the container was inspected %d times; a plain failure needs no inspection", calls.Load())
	}
}
