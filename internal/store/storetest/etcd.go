package storetest

import (
	"net"
	"os"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store/etcdlocal"
)

// EtcdBinary returns the etcd binary (etcdlocal.Binary). Without one the
// test is skipped, except under CI=true, where it fails.
func EtcdBinary(t testing.TB) string {
	t.Helper()
	bin, err := etcdlocal.Binary()
	if err == nil {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(err.Error() + " (required under CI=true)")
	}
	t.Skip(err.Error())
	return ""
}

// EtcdOptions are the extra flags of StartEtcd's server.
type EtcdOptions = etcdlocal.Options

// StartEtcd starts an etcd of the test's own on loopback ports (free ones,
// chosen by the kernel) with a data directory in the test's temporary
// directory, waits until it reports healthy and stops it when the test
// ends.
func StartEtcd(t testing.TB, opts EtcdOptions) *etcdlocal.Server {
	t.Helper()
	s, err := etcdlocal.Start(EtcdBinary(t), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// ClosedPort returns a loopback address where nothing listens.
func ClosedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
