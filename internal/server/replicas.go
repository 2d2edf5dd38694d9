package server

import (
	"context"
	"net"
	"net/http"

	"github.com/mcp-code-runner/mcp-code-runner/internal/replicas"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// joinReplicas lets the replicas that share this server's etcd store forward
// to it the calls for the sessions it holds, and it to them: it serves
// replicas.Path on mux and advertises the URL they reach it at. It returns
// the function that leaves (nil when there is nothing to join: a store no
// other replica shares).
func (s *Server) joinReplicas(ctx context.Context, mux *http.ServeMux, listening net.Addr) (func(), error) {
	if !store.IsShared(s.store) {
		return nil, nil
	}
	url := advertiseURL(s.cfg.Store.AdvertiseURL, listening)
	if url == "" {
		s.log.Warn("this replica listens on every address and store.advertise_url is not set: the other replicas cannot forward to it, so its sessions answer only through it; set store.advertise_url (on Kubernetes, http://$(POD_IP):PORT)")
		return nil, nil
	}
	dir, err := replicas.Join(ctx, s.store, s.replica, url, s.log)
	if err != nil {
		return nil, err
	}
	mux.Handle(replicas.Path, dir.Handler(s.sess))
	s.sess.SetForwarder(dir)
	s.log.Info("replicas forward session calls to this one", "url", url, "replica", dir.Self())
	return dir.Close, nil
}

// advertiseURL is the configured URL, or the listener's when it names one
// host ("" when it listens on every address).
func advertiseURL(configured string, listening net.Addr) string {
	if configured != "" {
		return configured
	}
	tcp, ok := listening.(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		return ""
	}
	return "http://" + tcp.String()
}
