// Package caddytest holds the integration tests: a real Caddy (the caddytest harness, or
// several caddy processes built from testdata/caddy) serving the waiting room.
package caddytest

import (
	// The harness needs the standard modules; testdata/caddy builds a whole Caddy, so its
	// imports are named here too, where `go mod tidy` can see them (it skips testdata).
	_ "github.com/caddyserver/caddy/v2/caddytest"
	_ "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/caddy-waitingroom/caddy-waitingroom"
)
