package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Validate checks that every limit is positive and defaults sit within
// maxima, section by section; it reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	for _, section := range [][]error{
		c.Limits.validate(),
		c.validateServer(),
		validateIsolation(c),
		c.Network.validate(),
		c.Packages.validate(),
		c.Pool.validate(),
		c.Sessions.validate(),
		c.Executions.validate(),
		c.Artifacts.validate(),
		c.HTTP.validate(),
		c.validateBackend(),
		c.Store.validate(),
		c.Images.validate(),
		c.Metrics.validate(),
		c.Quotas.validate(),
		c.CodeMode.validate(c.Network.Secrets),
	} {
		errs = append(errs, section...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid configuration: %w", errors.Join(errs...))
	}
	return nil
}

// validate checks that every limit is positive and each default within its
// maximum.
func (l Limits) validate() []error {
	var errs []error
	walkFields(reflect.ValueOf(&l).Elem(), "limits", func(name string, f reflect.Value) {
		if (f.Kind() == reflect.Int && f.Int() <= 0) || (f.Kind() == reflect.Float64 && f.Float() <= 0) {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	})
	if l.TimeoutSeconds > l.MaxTimeoutSeconds {
		errs = append(errs, fmt.Errorf("limits.timeout_seconds (%d) is above limits.max_timeout_seconds (%d)", l.TimeoutSeconds, l.MaxTimeoutSeconds))
	}
	if l.InlineOutputBytes > l.MaxOutputBytes {
		errs = append(errs, fmt.Errorf("limits.inline_output_bytes is above limits.max_output_bytes"))
	}
	return errs
}

// validateServer checks the settings of the top level: run slots, the
// agent's delivery, shutdown, queue, outputs and sweep.
func (c Config) validateServer() []error {
	var errs []error
	if c.MaxConcurrentRuns <= 0 {
		errs = append(errs, errors.New("max_concurrent_runs must be positive"))
	}
	switch c.AgentDelivery {
	case "", "auto", "bind", "volume":
	default:
		errs = append(errs, fmt.Errorf("agent_delivery %q: want auto, bind or volume", c.AgentDelivery))
	}
	if c.ShutdownGraceSeconds < 0 {
		errs = append(errs, errors.New("shutdown_grace_seconds must not be negative"))
	}
	if c.QueueTimeoutSeconds < 0 || c.OutputRetentionSeconds <= 0 || c.OutputStoreMB <= 0 || c.SweepIntervalSeconds <= 0 {
		errs = append(errs, errors.New("queue_timeout_seconds, output_retention_seconds, output_store_mb and sweep_interval_seconds must be positive"))
	}
	return errs
}

// validate checks the network tiers, the egress caps, the secrets and the
// approvable hosts.
func (n Network) validate() []error {
	var errs []error
	switch n.MaxTier {
	case TierNone, TierPackages, TierAllowlist:
	default:
		errs = append(errs, fmt.Errorf("network.max_tier %q: want none, packages or allowlist", n.MaxTier))
	}
	if n.MaxMB <= 0 || n.MaxConnections <= 0 {
		errs = append(errs, errors.New("network.max_mb and network.max_connections must be positive"))
	}
	errs = append(errs, validateSecrets(n.Secrets)...)
	return append(errs, validateApprovable(n)...)
}

// validate checks the installs' bounds and the registries' URLs.
func (p Packages) validate() []error {
	var errs []error
	if p.TimeoutSeconds <= 0 || p.MaxPackages <= 0 || p.MaxMB <= 0 {
		errs = append(errs, errors.New("packages.timeout_seconds, packages.max_packages and packages.max_mb must be positive"))
	}
	for _, name := range p.RegistrySettings() {
		if u := p.registries()[name]; !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			errs = append(errs, fmt.Errorf("packages.%s %q: want an http:// or https:// URL", name, u))
		}
	}
	return errs
}

// languageCounts checks entries of the form LANGUAGE=N with N from 0 to
// most, saying what is wanted, like example, when one is not.
func languageCounts(setting string, entries []string, most int, want string) []error {
	var errs []error
	for _, e := range entries {
		name, n, ok := strings.Cut(e, "=")
		if v, err := strconv.Atoi(strings.TrimSpace(n)); !ok || name == "" || err != nil || v < 0 || v > most {
			errs = append(errs, fmt.Errorf("%s entry %q: want %s", setting, e, want))
		}
	}
	return errs
}

// validate checks the warm pool's sizes, growth and timings.
func (p Pool) validate() []error {
	errs := languageCounts("pool.sizes", p.Sizes, math.MaxInt, "LANGUAGE=N, like python=4")
	errs = append(errs, languageCounts("pool.max_sizes", p.MaxSizes, math.MaxInt, "LANGUAGE=N, like python=16")...)
	if p.MaxSize < 0 || p.ShrinkAfterSeconds <= 0 || p.ReserveMemoryMB < 0 || p.ReservePids < 0 {
		errs = append(errs, errors.New("pool.max_size, pool.reserve_memory_mb and pool.reserve_pids must be 0 or more; pool.shrink_after_seconds positive"))
	}
	if p.Size < 0 || p.MaxWaiters <= 0 || p.MaxIdleSeconds <= 0 || p.CreateConcurrency <= 0 || p.RefillDelayMs < 0 || p.ReleaseGraceMs < 0 {
		errs = append(errs, errors.New("pool.size, pool.refill_delay_ms and pool.release_grace_ms must be 0 or more; pool.max_waiters, pool.max_idle_seconds and pool.create_concurrency positive"))
	}
	return errs
}

// validate checks the sessions' bounds, their spares and their replay log.
func (s Sessions) validate() []error {
	errs := languageCounts("sessions.spares", s.Spares, s.MaxSessions, "LANGUAGE=N with N from 0 to sessions.max_sessions, like python=1")
	if s.MaxSessions <= 0 || s.IdleTimeoutSeconds <= 0 || s.MaxIdleTimeoutSeconds < s.IdleTimeoutSeconds || s.MaxLifeSeconds <= 0 || s.ReplayMaxCells < 0 || s.ReplayMaxBytes < 0 || s.IdlePauseSeconds < 0 {
		errs = append(errs, errors.New("sessions settings must be positive, with idle_timeout_seconds at most max_idle_timeout_seconds"))
	}
	return errs
}

func (x Executions) validate() []error {
	if x.MaxDurationSeconds <= 0 || x.RetentionSeconds <= 0 || x.MaxWaitSeconds <= 0 || x.MaxKept <= 0 || x.TaskMaxTTLSeconds <= 0 {
		return []error{errors.New("executions.max_duration_seconds, retention_seconds, max_wait_seconds, max_kept and task_max_ttl_seconds must be positive")}
	}
	return nil
}

func (a Artifacts) validate() []error {
	if a.MaxFiles <= 0 || a.MaxFileBytes <= 0 || a.MaxTotalBytes <= 0 || a.InlineImageBytes <= 0 || a.RetentionSeconds <= 0 || a.StoreMB <= 0 {
		return []error{errors.New("every artifacts setting must be positive")}
	}
	return nil
}

// validate checks OAuth's settings, the rate, the tokens and the body cap.
func (h HTTP) validate() []error {
	var errs []error
	if h.OAuthIssuer != "" && (h.OAuthIntrospectionURL == "" || h.PublicURL == "") {
		errs = append(errs, errors.New("http.oauth_issuer needs http.oauth_introspection_url (to validate tokens) and http.public_url (the resource identifier)"))
	}
	if h.RatePerMinute < 0 {
		errs = append(errs, errors.New("http.rate_per_minute must be 0 (no limit) or more"))
	}
	if _, err := h.tokens(false); err != nil {
		errs = append(errs, err)
	}
	if h.MaxBodyBytes <= 0 {
		errs = append(errs, errors.New("http.max_body_bytes must be positive"))
	}
	return errs
}

func (i Images) validate() []error {
	if i.WaitSeconds <= 0 {
		return []error{errors.New("images.wait_seconds must be positive: how long a run may wait for its image's background build")}
	}
	return nil
}

func (m Metrics) validate() []error {
	if m.MaxPrincipals <= 0 {
		return []error{errors.New("metrics.max_principals must be positive")}
	}
	return nil
}

func (q Quotas) validate() []error {
	if q.ConcurrentRuns < 0 || q.Sessions < 0 || q.PausedSessions < 0 || q.ExecutionsKept < 0 || q.OutputStoreMB < 0 || q.ArtifactStoreMB < 0 {
		return []error{errors.New("quotas settings must be 0 (no quota) or more")}
	}
	return nil
}

// validateIsolation checks isolation and the gvisor section.
func validateIsolation(c Config) []error {
	var errs []error
	switch c.Isolation {
	case "", IsolationContainer, IsolationGVisor:
	default:
		errs = append(errs, fmt.Errorf("isolation %q: want container or gvisor", c.Isolation))
	}
	switch c.GVisor.Platform {
	case "", "systrap", "ptrace", "kvm":
	default:
		errs = append(errs, fmt.Errorf("gvisor.platform %q: want systrap, ptrace or kvm", c.GVisor.Platform))
	}
	return errs
}

// validateBackend checks the backend choice and the kubernetes settings.
func (c Config) validateBackend() []error {
	var errs []error
	switch c.Backend {
	case "", BackendAuto, BackendDocker, BackendCrun:
		return nil
	case BackendKubernetes:
	default:
		return []error{fmt.Errorf("backend %q: want %q, %q, %q or %q", c.Backend, BackendAuto, BackendDocker, BackendKubernetes, BackendCrun)}
	}
	k := c.Kubernetes
	if k.Namespace == "" {
		errs = append(errs, errors.New("kubernetes.namespace is required with the kubernetes backend"))
	}
	switch k.ImagePullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		errs = append(errs, fmt.Errorf("kubernetes.image_pull_policy %q: want Always, IfNotPresent or Never", k.ImagePullPolicy))
	}
	if k.EphemeralStorageMB <= 0 || k.StartTimeoutSeconds <= 0 {
		errs = append(errs, errors.New("kubernetes.ephemeral_storage_mb and kubernetes.start_timeout_seconds must be positive"))
	}
	if _, err := k.NodeSelectorMap(); err != nil {
		errs = append(errs, err)
	}
	if _, err := k.ParsedTolerations(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// validate checks the store's choice and, for etcd, its settings.
func (s Store) validate() []error {
	switch s.Backend {
	case "", StoreEmbedded:
		return nil
	case StoreEtcd:
	default:
		return []error{fmt.Errorf("store.backend %q: want %q or %q", s.Backend, StoreEmbedded, StoreEtcd)}
	}
	var errs []error
	if u := s.AdvertiseURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		errs = append(errs, fmt.Errorf("store.advertise_url %q: want the http:// URL at which the other replicas reach this one, like http://10.0.0.5:8080", u))
	}
	e := s.Etcd
	if len(e.Endpoints) == 0 {
		errs = append(errs, errors.New("store.etcd.endpoints is required with the etcd store: the members' client URLs, like https://etcd-0.etcd:2379"))
	}
	for _, ep := range e.Endpoints {
		if !strings.HasPrefix(ep, "http://") && !strings.HasPrefix(ep, "https://") {
			errs = append(errs, fmt.Errorf("store.etcd.endpoints entry %q: want an http:// or https:// URL, like https://etcd-0.etcd:2379", ep))
		}
	}
	if e.DialTimeoutSeconds <= 0 {
		errs = append(errs, errors.New("store.etcd.dial_timeout_seconds must be positive"))
	}
	if (e.CertFile == "") != (e.KeyFile == "") {
		errs = append(errs, errors.New("store.etcd.cert_file and store.etcd.key_file go together: set both or neither"))
	}
	if e.PasswordFile != "" && e.PasswordEnv != "" {
		errs = append(errs, errors.New("store.etcd.password_file and store.etcd.password_env: set one, not both"))
	}
	if (e.PasswordFile != "" || e.PasswordEnv != "") && e.Username == "" {
		errs = append(errs, errors.New("store.etcd.password_file or password_env needs store.etcd.username"))
	}
	if e.Username != "" && e.PasswordFile == "" && e.PasswordEnv == "" {
		errs = append(errs, errors.New("store.etcd.username needs its password from store.etcd.password_file (a file holding it) or store.etcd.password_env (the name of a variable holding it); it is never written in the configuration itself"))
	}
	return errs
}
