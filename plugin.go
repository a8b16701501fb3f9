// Package caddywaitingroom registers the waiting room modules with Caddy. Build Caddy with
//
//	xcaddy build --with github.com/caddy-waitingroom/caddy-waitingroom
//
// to get the http.handlers.waiting_room handler (and its Caddyfile directive).
package caddywaitingroom

import (
	_ "github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
	_ "github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/redisstore"
)
