package redisstore

import (
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// UnmarshalCaddyfile sets up the store from Caddyfile tokens. Syntax (the part after
// `store` in the waiting_room directive):
//
//	redis [<url>] {
//		addresses    <host:port...>
//		sentinel     <master_name> <sentinel host:port...>
//		username     <username>
//		password     <password>
//		db           <n>
//		tls
//		prefix       <prefix>
//		dial_timeout <duration>
//		timeout      <duration>
//		pool_size    <n>
//		join_wait    <duration>
//	}
func (r *Redis) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module name
	if d.NextArg() {
		r.URL = d.Val()
		// A URL from a placeholder is checked once expanded, at provision.
		if !strings.Contains(r.URL, "{") {
			if _, err := parseURL(r.URL); err != nil {
				return d.Err(err.Error())
			}
		}
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	// joinWaitTooLong is join_wait past the default timeout, on join_wait's line, for
	// when no timeout follows.
	var joinWaitTooLong error
	for d.NextBlock(0) {
		name := d.Val()
		if seen[name] {
			return d.Errf("duplicate %s", name)
		}
		seen[name] = true
		args := d.RemainingArgs()
		switch name {
		case "addresses":
			if len(args) == 0 {
				return d.ArgErr()
			}
			r.Addresses = append(r.Addresses, args...)
		case "sentinel":
			if len(args) < 2 {
				return d.Errf("sentinel needs the master name and at least one Sentinel address")
			}
			r.MasterName = args[0]
			r.Addresses = append(r.Addresses, args[1:]...)
		case "username", "password", "prefix":
			if len(args) != 1 {
				return d.ArgErr()
			}
			switch name {
			case "username":
				r.Username = args[0]
			case "password":
				r.Password = args[0]
			case "prefix":
				r.Prefix = args[0]
			}
		case "db", "pool_size":
			if len(args) != 1 {
				return d.ArgErr()
			}
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 0 {
				return d.Errf("%s must be a whole number >= 0, not %q", name, args[0])
			}
			if name == "db" {
				r.DB = n
			} else {
				r.PoolSize = n
			}
		case "tls":
			if len(args) != 0 {
				return d.ArgErr()
			}
			r.TLS = true
		case "dial_timeout", "timeout":
			if len(args) != 1 {
				return d.ArgErr()
			}
			dur, err := caddy.ParseDuration(args[0])
			if err != nil || dur <= 0 {
				return d.Errf("%s must be a positive duration, not %q", name, args[0])
			}
			if name == "timeout" {
				r.Timeout = caddy.Duration(dur)
				if err := r.checkJoinWait(); err != nil {
					return d.Err(err.Error())
				}
			} else {
				r.DialTimeout = caddy.Duration(dur)
			}
		case "join_wait":
			if len(args) != 1 {
				return d.ArgErr()
			}
			dur, err := caddy.ParseDuration(args[0])
			if err != nil || dur < 0 {
				return d.Errf("join_wait must be a duration >= 0, not %q", args[0])
			}
			r.JoinWait = caddy.Duration(dur)
			if err := r.checkJoinWait(); err != nil {
				if seen["timeout"] {
					return d.Err(err.Error())
				}
				joinWaitTooLong = d.Err(err.Error())
			}
		default:
			return d.Errf("unrecognized subdirective %q", name)
		}
	}
	if seen["addresses"] && seen["sentinel"] {
		return d.Err("addresses and sentinel are exclusive: sentinel takes the Sentinels' addresses")
	}
	if !seen["timeout"] && joinWaitTooLong != nil {
		return joinWaitTooLong
	}
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Redis)(nil)
