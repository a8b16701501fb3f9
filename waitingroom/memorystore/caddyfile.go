package memorystore

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// UnmarshalCaddyfile sets up the store from Caddyfile tokens:
//
//	store memory {
//		file       <path> | off
//		save_every <duration>
//	}
func (m *MemoryStore) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // store name
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "file":
			if !d.NextArg() {
				return d.Errf("file takes a path, or off")
			}
			m.File = d.Val()
			if d.NextArg() {
				return d.ArgErr()
			}
		case "save_every":
			if !d.NextArg() {
				return d.ArgErr()
			}
			v, err := caddy.ParseDuration(d.Val())
			if err != nil || v <= 0 {
				return d.Errf("%v, got %q", errSaveEvery, d.Val())
			}
			m.SaveEvery = caddy.Duration(v)
			if d.NextArg() {
				return d.ArgErr()
			}
		default:
			return d.Errf("unrecognized memory store option %q", d.Val())
		}
	}
	return nil
}
