// Package redisstore is the http.handlers.waiting_room.stores.redis module: a waiting
// room store in Redis (standalone, Sentinel or Cluster) that any number of Caddy
// instances share, so that they behave as one waiting room.
//
// Every call is bounded by the store's timeout, and a script never acts after its
// caller has given up on it: each script call carries its deadline in Redis's clock
// (an offset measured against the room's node and kept fresh) and the script checks it
// against Redis's TIME before any write, so a Redis that hangs and then resumes does
// not carry out joins, leaves or admissions that were answered as failed. deadline.go
// holds the design and its limits; docs/several-instances.md says what an operator
// sees. A failover can lose the last writes (replication is asynchronous); a join
// then skips the tickets the old master may have handed out, so none is given twice
// (failover.go).
package redisstore

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
)

func init() {
	caddy.RegisterModule(Redis{})
}

// Default settings.
const (
	DefaultPrefix  = "waiting_room:"
	DefaultAddress = "127.0.0.1:6379"
	DefaultTimeout = caddy.Duration(time.Second)
)

// Redis keeps waiting rooms in Redis. Every instance configured with the same Redis
// and room name shares one queue, one active set and one signing secret. A room's keys
// are `<prefix>{<room>}:...`, one hash tag, so the room works on Redis Cluster.
//
// Redis being unreachable never fails provisioning: each store call fails (after
// `timeout`) and the handler degrades as its `fail` setting says, recovering by itself
// when Redis is back.
type Redis struct {
	// URL of the Redis server, `redis://[user:password@]host:port[/db]`, or `rediss://`
	// for TLS. Fields set below override what the URL says. Placeholders such as
	// `{env.REDIS_URL}` are replaced at provision time. Default: 127.0.0.1:6379 when
	// neither url nor addresses is set.
	URL string `json:"url,omitempty"`

	// Addresses (host:port) of Redis servers. Two or more addresses (counting the URL's)
	// mean a Redis Cluster, given by any of its nodes; with master_name they are the
	// Sentinels' addresses.
	Addresses []string `json:"addresses,omitempty"`

	// MasterName is the name Redis Sentinel monitors the master under. Setting it
	// makes addresses the Sentinels' addresses.
	MasterName string `json:"master_name,omitempty"`

	// Username for Redis ACL authentication. Placeholders are replaced.
	Username string `json:"username,omitempty"`

	// Password for Redis authentication (the master's when using Sentinel).
	// Placeholders such as `{env.REDIS_PASSWORD}` are replaced; it is never logged.
	Password string `json:"password,omitempty"`

	// DB is the database number (standalone and Sentinel only). Default: 0.
	DB int `json:"db,omitempty"`

	// TLS connects with TLS, verifying the server against the system roots.
	// Default: off, unless the URL's scheme is rediss.
	TLS bool `json:"tls,omitempty"`

	// Prefix starts the name of every key (and the Pub/Sub channel) of a room. It must
	// not contain braces. Default: `waiting_room:`.
	Prefix string `json:"prefix,omitempty"`

	// DialTimeout bounds establishing a connection. Default: 1s.
	DialTimeout caddy.Duration `json:"dial_timeout,omitempty"`

	// Timeout bounds every store call, including waiting for a pooled connection; a
	// call that takes longer fails and the handler degrades. Default: 1s.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// PoolSize is the maximum number of connections per Redis node. Default: go-redis's
	// (10 per CPU).
	PoolSize int `json:"pool_size,omitempty"`

	// JoinWait is how long a new visitor's join waits for others to share its call to
	// Redis while the room has a line (they are queued whatever happens, and wait far
	// longer than this); with no line a join goes at once. It is for a large fleet,
	// whose instances each see a join every few tens of milliseconds, so most would go
	// alone (20ms took a quarter off Redis's CPU with the line moving, in the
	// simulation of 20 instances). A lone visitor arriving now and then waits it in
	// full. It must be shorter than timeout. Default: 0, every join at once.
	JoinWait caddy.Duration `json:"join_wait,omitempty"`

	settings settings
	logger   *zap.Logger
}

// settings are the resolved connection settings; equal settings share one client.
type settings struct {
	addrs       string // comma separated
	masterName  string
	username    string
	password    string
	db          int
	tls         bool
	dialTimeout time.Duration
	timeout     time.Duration
	poolSize    int
}

// CaddyModule returns the Caddy module information.
func (Redis) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.waiting_room.stores.redis",
		New: func() caddy.Module { return new(Redis) },
	}
}

// Provision resolves placeholders and defaults. It does not connect: a Redis that is
// down is the store calls' business, not the config's.
func (r *Redis) Provision(ctx caddy.Context) error {
	r.logger = ctx.Logger()
	repl := caddy.NewReplacer()
	s := settings{
		masterName: repl.ReplaceKnown(r.MasterName, ""),
		username:   repl.ReplaceKnown(r.Username, ""),
		password:   repl.ReplaceKnown(r.Password, ""),
		db:         r.DB,
		tls:        r.TLS,
		poolSize:   r.PoolSize,
	}
	var addrs []string
	if u := repl.ReplaceKnown(r.URL, ""); u != "" {
		opts, err := parseURL(u)
		if err != nil {
			return fmt.Errorf("parsing %w", err)
		}
		addrs = append(addrs, opts.Addr)
		if s.username == "" {
			s.username = opts.Username
		}
		if s.password == "" {
			s.password = opts.Password
		}
		if s.db == 0 {
			s.db = opts.DB
		}
		s.tls = s.tls || opts.TLSConfig != nil
	}
	for _, a := range r.Addresses {
		addrs = append(addrs, repl.ReplaceKnown(a, ""))
	}
	if len(addrs) == 0 {
		addrs = []string{DefaultAddress}
	}
	if s.masterName == "" && len(addrs) > 1 && s.db != 0 {
		return errors.New("db must be 0 with Redis Cluster (two or more addresses)")
	}
	s.addrs = strings.Join(addrs, ",")
	s.timeout = time.Duration(r.Timeout)
	if s.timeout == 0 {
		s.timeout = time.Duration(DefaultTimeout)
	}
	s.dialTimeout = time.Duration(r.DialTimeout)
	if s.dialTimeout == 0 {
		s.dialTimeout = time.Duration(DefaultTimeout)
	}
	if r.Prefix == "" {
		r.Prefix = DefaultPrefix
	}
	r.settings = s
	return nil
}

// Validate checks the settings that need no Redis.
func (r *Redis) Validate() error {
	switch {
	case strings.ContainsAny(r.Prefix, "{}"):
		return fmt.Errorf("prefix %q must not contain braces: they would break the room's hash tag", r.Prefix)
	case r.DB < 0:
		return fmt.Errorf("db %d must not be negative", r.DB)
	case r.PoolSize < 0:
		return fmt.Errorf("pool_size %d must not be negative", r.PoolSize)
	case r.Timeout < 0 || r.DialTimeout < 0:
		return errors.New("timeouts must not be negative")
	case r.MasterName != "" && len(r.Addresses) == 0:
		return errors.New("sentinel needs the addresses of the Sentinels")
	case r.JoinWait < 0:
		return errors.New("join_wait must not be negative")
	}
	return r.checkJoinWait()
}

// checkJoinWait refuses a join_wait that is not shorter than the timeout: every join
// of a room with a line would time out waiting for company.
func (r *Redis) checkJoinWait() error {
	timeout := time.Duration(cmp.Or(r.Timeout, DefaultTimeout))
	if r.JoinWait > 0 && time.Duration(r.JoinWait) >= timeout {
		return fmt.Errorf("join_wait %v must be shorter than timeout %v", time.Duration(r.JoinWait), timeout)
	}
	return nil
}

// parseURL reads a Redis URL. Its errors never quote it: it may hold a password.
func parseURL(u string) (*redis.Options, error) {
	opts, err := redis.ParseURL(u)
	if err != nil {
		return nil, errors.New("url: not a redis:// or rediss:// URL of a host:port")
	}
	if opts.Network == "unix" {
		return nil, errors.New("url: unix sockets are not supported, use host:port")
	}
	return opts, nil
}

// OpenStore returns the named room's store on a pooled client. The release function
// lets go of the client, which is closed when no room in any loaded config uses it.
func (r *Redis) OpenStore(ctx caddy.Context, room string) (queue.Store, func(), error) {
	if room == "" {
		return nil, nil, errors.New("opening redis store: room name is empty")
	}
	key := r.settings.poolKey()
	val, _, err := clients.LoadOrNew(key, func() (caddy.Destructor, error) {
		return newSharedClient(r.settings.options(), r.logger), nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("opening redis store: %w", err)
	}
	var once sync.Once
	release := func() {
		once.Do(func() { _, _ = clients.Delete(key) })
	}
	return newRoomStore(val.(*sharedClient), r.Prefix, room, r.settings.timeout, time.Duration(r.JoinWait)), release, nil
}

func (s settings) poolKey() string {
	return fmt.Sprintf("%q|%q|%q|%q|%d|%t|%d|%d|%d", s.addrs, s.masterName, s.username,
		s.password, s.db, s.tls, s.dialTimeout, s.timeout, s.poolSize)
}

func (s settings) options() *redis.UniversalOptions {
	opts := &redis.UniversalOptions{
		Addrs:                 strings.Split(s.addrs, ","),
		MasterName:            s.masterName,
		Username:              s.username,
		Password:              s.password,
		DB:                    s.db,
		DialTimeout:           s.dialTimeout,
		ReadTimeout:           s.timeout,
		WriteTimeout:          s.timeout,
		PoolTimeout:           s.timeout,
		PoolSize:              s.poolSize,
		ContextTimeoutEnabled: true,
		ClientName:            "caddy-waitingroom",
	}
	if s.tls {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return opts
}

// Interface guards
var (
	_ caddy.Provisioner       = (*Redis)(nil)
	_ caddy.Validator         = (*Redis)(nil)
	_ waitingroom.StoreModule = (*Redis)(nil)
)
